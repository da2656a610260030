"""`compat verify --server URL`: measure a running deployment with realistic chat traffic.

1. who is it: OpenAI-compatible, the engine, its version, the model (detect.py);
2. which names its release uses for its counters, read from that release's source (facts.py);
3. the counters before, the prompts streamed through /v1/chat/completions (stream.py), the counters after
   (counters.py): acceptance from their deltas, latency and tokens/s from the streams;
4. what the pattern means (compat/acceptance.py), the `compat doctor --launch` line to run next;
5. with a baseline server (the same model without speculation): the speed-up and greedy-output equality.
The JSON document is assembled in summary.py; no argparse or printing here.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass

from compat import engines
from compat.core.errors import EXIT_CHECK_FAILED, CompatError
from compat.core.progress import QUIET, Progress
from compat.verify.server.counters import Snapshot, info_path, positions_exposed, snapshot, traffic
from compat.verify.server.detect import Identity, Speculation, identify, served_models, sglang_speculation, vllm_speculation
from compat.verify.server.facts import ReleaseFacts, read_release_facts
from compat.verify.server.http import API_KEY_ENV, Client, normalize_url
from compat.verify.server.prompts import PromptSet
from compat.verify.server.stream import Completion, complete, request_body

DEFAULT_NUM_PROMPTS = 100
DEFAULT_MAX_TOKENS = 256
DEFAULT_CONCURRENCY = 4
DEFAULT_REQUEST_TIMEOUT = 300.0


class RequestsFailed(CompatError):
    exit_code = EXIT_CHECK_FAILED


@dataclass(frozen=True)
class ServerRun:
    """What to measure and how (the command line, validated)."""

    url: str
    prompts: PromptSet
    engine: str | None = None          # vllm | sglang | vllm==X (the release whose names to read)
    path: str | None = None            # a source tree to read the names from instead
    model: str | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS
    concurrency: int = DEFAULT_CONCURRENCY
    temperature: float = 0.0
    seed: int | None = None
    api_key: str | None = None
    min_acceptance: float | None = None
    baseline: str | None = None
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    offline: bool = False
    cache_dir: str | None = None

    def client(self, url: str, *, stream: bool = False) -> Client:
        key, source = (self.api_key, "--api-key") if self.api_key else (os.environ.get(API_KEY_ENV) or None, API_KEY_ENV)
        return Client(normalize_url(url), api_key=key, key_source=source if key else None,
                      io_timeout=self.request_timeout if stream else min(30.0, self.request_timeout),
                      deadline=self.request_timeout if stream else min(60.0, self.request_timeout))


@dataclass
class Requests:
    completions: list[Completion]
    seconds: float            # wall time of the whole batch
    started: float
    ended: float

    @property
    def ok(self) -> list[Completion]:
        return [c for c in self.completions if c.ok]

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.completions)


@dataclass
class Measurement:
    """Everything one run found, for summary.py."""

    run: ServerRun
    identity: Identity
    facts: ReleaseFacts
    speculation: Speculation
    before: Snapshot
    after: Snapshot
    requests: Requests
    overhead: dict[str, float]
    baseline: dict | None = None


def measure(run: ServerRun, progress: Progress | None = None) -> Measurement:
    progress = progress or QUIET
    t0 = time.monotonic()
    client = run.client(run.url)
    progress.status(f"asking {client.base_url} what it is")
    forced = run.engine.split("=")[0].split("<")[0].split(">")[0].strip() if run.engine else None
    identity = identify(client, engine=forced, model=run.model)
    baseline_model = _baseline_model(run, identity.model, progress) if run.baseline else None  # fail before the run
    released = run.engine if run.engine and any(c in run.engine for c in "=<>") else None
    facts = read_release_facts(identity.engine, identity.version, source=released, path=run.path,
                               cache_dir=run.cache_dir, offline=run.offline, progress=progress.status)
    t1 = time.monotonic()
    info = info_path(identity.engine, facts)
    before = snapshot(client, facts, info)
    speculation = measure_speculation(client, identity, facts, before)
    t2 = time.monotonic()
    requests = send_all(run.client(run.url, stream=True), identity.model, run, progress, "requests")
    t3 = time.monotonic()
    after = snapshot(client, facts, info)
    t4 = time.monotonic()
    baseline = _baseline(run, baseline_model, progress) if baseline_model else None
    overhead = {"identify_s": round(t1 - t0, 3), "snapshot_before_s": round(t2 - t1, 3),
                "requests_s": round(t3 - t2, 3), "snapshot_after_s": round(t4 - t3, 3)}
    return Measurement(run, identity, facts, speculation, before, after, requests, overhead, baseline)


def measure_speculation(client: Client, identity: Identity, facts: ReleaseFacts, before: Snapshot) -> Speculation:
    """What the server says of its speculation: SGLang's server info, vLLM's counters and /server_info."""
    if engines.get(identity.engine).server_acceptance == "server_info":
        if before.info:
            identity.info = before.info
        return sglang_speculation(identity, facts.speculative_fields)
    drafts = facts.spec.get("num_drafts")
    gen = facts.traffic.get("generation_tokens")
    counters: bool | None = None
    if before.metrics and drafts is not None:
        if drafts.sample in before.present:
            counters = True
        elif gen is not None and gen.sample in before.present:
            counters = False  # the server publishes vLLM's counters, but not these: registered only when speculating
    return vllm_speculation(client, facts.server_info, counters, positions_exposed(before, facts))


def send_all(client: Client, model: str, run: ServerRun, progress: Progress, label: str, *,
             stop_after: float | None = None) -> Requests:
    """Every prompt, `run.concurrency` at a time, in daemon threads (Ctrl-C ends the run at once instead of
    waiting for requests in flight); completions in prompt order. With `stop_after` (seconds), no request is
    sent once that much time has passed (those in flight finish): the sweep's bound on one level."""
    prompts = run.prompts.prompts
    progress.start(f"{label} to {client.base_url}", len(prompts))
    results: list[Completion | None] = [None] * len(prompts)
    pending = list(range(len(prompts)))[::-1]
    done = threading.Condition()
    failure: list[BaseException] = []
    sent = [0]

    def worker() -> None:
        while True:
            with done:
                if stop_after is not None and time.monotonic() - started > stop_after:
                    pending.clear()  # the level's time is up: no new request
                if not pending or failure:
                    done.notify()
                    return
                index = pending.pop()
                sent[0] += 1
            body = request_body(model, prompts[index].to_request(), max_tokens=run.max_tokens,
                                temperature=run.temperature, seed=run.seed)
            try:
                result = complete(client, index, body, deadline=run.request_timeout)
            except BaseException as err:  # noqa: BLE001 - handed to the main thread, raised there
                with done:
                    failure.append(err)
                    done.notify()
                return
            with done:
                results[index] = result
                done.notify()

    started = time.monotonic()
    for _ in range(min(run.concurrency, len(prompts))):
        threading.Thread(target=worker, name="compat-verify", daemon=True).start()
    finished = 0
    with done:
        while (pending or finished < sent[0]) and not failure:
            done.wait(0.5)
            now = sum(r is not None for r in results)
            for _ in range(now - finished):
                progress.advance()
            finished = now
    if failure:
        raise failure[0]
    ended = time.monotonic()
    completions = [r for r in results if r is not None]
    if completions and not any(c.ok for c in completions):
        first = next(c for c in completions if c.error)
        raise RequestsFailed(f"every request to {client.base_url}/v1/chat/completions failed; the first: {first.error}",
                             hint="check --model, --max-tokens (the server's max_model_len) and the prompts")
    return Requests(completions, round(ended - started, 3), started, ended)


def _baseline_model(run: ServerRun, model: str, progress: Progress) -> str:
    """The model the baseline serves under the same name (else its first): asked before anything is measured,
    so an unreachable or wrong baseline fails the run at once."""
    client = run.client(run.baseline or "")
    progress.status(f"asking the baseline {client.base_url} what it serves")
    ids = [c["id"] for c in served_models(client)]
    return model if model in ids else ids[0]


def _baseline(run: ServerRun, model: str, progress: Progress) -> dict:
    client = run.client(run.baseline or "", stream=True)
    requests = send_all(client, model, run, progress, "baseline requests")
    return {"url": client.base_url, "model": model, "requests": requests}
