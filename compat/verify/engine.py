"""Run a script of engine_side/ in the engine's interpreter: a child process with a timeout, its
stdout and stderr kept in a log file, its events (one JSON line each, in a file of their own)
read while it runs so a progress line can say what the engine is doing.

The scripts need only what the engine's venv has (vLLM, torch, safetensors): compat is not
installed there, and this process never imports any of them. Unlike the short questions other parts
ask an interpreter (`Interpreter.run_json`: -E, from "/"), the engine runs as it is served: with the
environment of this shell (its PYTHONPATH, VLLM_* and CUDA variables), from a work directory of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from compat import engines
from compat.core.errors import EXIT_CHECK_FAILED, CompatError, RefusedError
from compat.core.interpreter import Interpreter

if TYPE_CHECKING:
    from compat.sources.installed import InstalledEngine

ENGINE_SIDE = Path(__file__).resolve().parent / "engine_side"
# Forced for every run, whatever the shell says: a verify never downloads anything.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
DEFAULT_TIMEOUT_S = 1800.0
POLL_S = 0.25
KILL_GRACE_S = 10.0


class EngineRunError(CompatError):
    """The engine could not do what was asked (it crashed, refused the model, or ran out of time)."""

    exit_code = EXIT_CHECK_FAILED


@dataclass
class EngineRun:
    events: list[dict]
    log: Path
    returncode: int
    seconds: float

    def of(self, kind: str) -> list[dict]:
        return [e for e in self.events if e.get("event") == kind]

    def result(self, label: str) -> dict | None:
        return next((e for e in self.of("result") if e.get("label") == label), None)

    @property
    def import_seconds(self) -> float | None:
        """How long importing vLLM took in the child (its biggest fixed cost)."""
        start, end = self.of("importing"), self.of("imported")
        return round(end[0]["t"] - start[0]["t"], 3) if start and end else None

    @property
    def platform(self) -> dict:
        found = self.of("platform")
        return {k: v for k, v in found[0].items() if k not in ("event", "t")} if found else {}


def installed_vllm(python: Interpreter | str | None) -> InstalledEngine:
    """The vLLM installed in `python` (a python or a venv directory; this interpreter when None): a
    SourceError when there is none."""
    from compat.core.errors import SourceError
    from compat.sources.installed import find_installed

    found = [e for e in find_installed(python) if engines.get(e.engine).runs_verify]  # the engine verify starts
    if not found:
        where = Interpreter.of(python).path if python is not None else "this interpreter"
        raise SourceError(f"vLLM is not installed in {where}",
                          hint="point --python at the serving venv's interpreter (the one that runs vllm)")
    return found[0]


def default_log_dir() -> Path:
    from compat.sources.released import cache_root

    return cache_root() / "verify-logs"


def new_log_path(kind: str, log_dir: str | Path | None = None) -> Path:
    """A fresh log file for one engine run: under --log-dir, else the user cache (kept: it is the evidence)."""
    directory = Path(log_dir).expanduser() if log_dir else default_log_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file is there: the wrong kind of path (4), before the engine runs
        raise RefusedError(f"--log-dir {directory}: a file, not a folder", hint="pass a directory with --log-dir") from None
    except OSError as err:
        raise RefusedError(f"--log-dir {directory}: cannot create it ({err.strerror})",
                           hint="pass a writable directory with --log-dir") from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return directory / f"{kind}-{stamp}-{os.getpid()}.log"


def run_script(python: Interpreter | str, script: str, job: dict[str, Any], *, work: Path, log: Path,
               timeout: float = DEFAULT_TIMEOUT_S,
               on_event: Callable[[dict[str, Any]], None] | None = None, cwd: Path | None = None) -> EngineRun:
    """Run engine_side/`script` with `python` on `job`; events as they come to `on_event`. It runs from `work`, or from
    `cwd` when given (a launch line's relative paths are the user's)."""
    interpreter = Interpreter.of(python)
    job_path, events_path = work / "job.json", work / "events.jsonl"
    job_path.write_text(json.dumps(job, indent=1))
    events_path.write_text("")
    scratch = work / "tmp"  # the engine's temporary files, inside `work`: removed with it, even if the engine is killed
    scratch.mkdir(exist_ok=True)
    argv = [interpreter.path, str(ENGINE_SIDE / script), str(job_path), str(events_path)]
    env = {**os.environ, **OFFLINE_ENV, "PYTHONUNBUFFERED": "1", "TMPDIR": str(scratch)}
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        out.write(f"# compat: {' '.join(argv)}\n# job: {json.dumps(job)}\n")
        out.flush()
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd or work,
                                    env=env, start_new_session=True)
        except OSError as err:
            raise EngineRunError(f"{interpreter.label}: cannot run it ({err.strerror})",
                                 hint="pass the serving venv's interpreter, e.g. /opt/venv/bin/python") from None
        reader = _EventReader(events_path)
        try:
            while proc.poll() is None:
                for event in reader.new():
                    _deliver(on_event, event)
                if time.monotonic() - started > timeout:
                    _stop(proc)
                    raise EngineRunError(f"the engine did not finish within {timeout:.0f} s and was stopped; its log: {log}",
                                         hint="read the log; pass a larger --timeout for a large model")
                time.sleep(POLL_S)
        except BaseException:
            _stop(proc)
            raise
    for event in reader.new():
        _deliver(on_event, event)
    run = EngineRun(reader.events, log, proc.returncode, round(time.monotonic() - started, 3))
    if not run.of("done"):
        raise EngineRunError(f"the engine process exited with code {proc.returncode} before it finished"
                             f"{_last_error(run, log)}; its log: {log}",
                             hint=f"{explain_command(log, interpreter.path)} maps the engine's error to its source and a fix")
    return run


def verify_engine() -> str:
    """The engine verify starts (commands/verify.py refuses any other --engine): the unit declaring RUNS_VERIFY."""
    return next(e.name for e in engines.all_engines() if e.runs_verify)


def explain_command(log: Path, python: str, engine: str | None = None) -> str:
    """The `compat explain` line that reads an engine run's log against the engine that wrote it (verify's)."""
    import shlex

    from compat.release_ref import ReleaseRef

    ref = ReleaseRef.installed(engine or verify_engine(), python)
    return shlex.join(["compat", "explain", "--log", str(log), *ref.args("explain")])


def _deliver(on_event: Callable[[dict[str, Any]], None] | None, event: dict[str, Any]) -> None:
    if on_event is not None:
        on_event(event)


class _EventReader:
    """Complete JSON lines appended to the events file since the last call."""

    def __init__(self, path: Path):
        self.path = path
        self.offset = 0
        self.events: list[dict] = []

    def new(self) -> list[dict]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        fresh = []
        for line in complete.splitlines():
            try:
                fresh.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # not ours (cannot happen unless the file was touched); skip, do not die
        self.events += fresh
        return fresh


def _stop(proc: subprocess.Popen) -> None:
    """Stop the child and everything it started (its own session), politely first. A second Ctrl-C or SIGTERM while
    it winds down (a CI runner sends SIGINT, then SIGTERM) ends the grace at once: the session is killed, then the
    interruption goes on. The child never gets the terminal's signals itself (its own session): left running, it
    would hold the engine's memory with no one to stop it."""
    again: KeyboardInterrupt | None = None
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(KILL_GRACE_S)
            break
        except subprocess.TimeoutExpired:
            continue
        except KeyboardInterrupt as interrupted:
            again = interrupted
    try:  # what the engine started and did not stop with it (vLLM's engine-core processes)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if again is not None:
        _reap(proc)
        raise again


def _reap(proc: subprocess.Popen) -> None:
    """Wait (bounded) for a child sent SIGKILL, whatever signals come meanwhile."""
    for _ in range(3):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(KILL_GRACE_S)
        except (ProcessLookupError, subprocess.TimeoutExpired, KeyboardInterrupt):
            continue


def _last_error(run: EngineRun, log: Path) -> str:
    errors = [str(e["error"]) for e in run.of("result") if not e.get("ok") and e.get("error")]
    if errors:
        return f" ({errors[-1][:300]})"
    try:
        tail = [line for line in log.read_text(errors="replace").splitlines() if line.strip()][-1:]
    except OSError:
        tail = []
    return f" (last line: {tail[0][:300]})" if tail else ""


def describe(event: dict) -> str | None:
    """The progress line for one event, in words (None: nothing to say)."""
    kind = event.get("event")
    if kind == "importing":
        return "importing vLLM in the engine's interpreter"
    if kind == "imported":
        return f"vLLM {event.get('version') or ''} imported".replace("  ", " ")
    if kind == "building":
        return f"{event.get('family')}: writing the tiny oracle target and drafters"
    if kind == "loading":
        return f"{event.get('label')}: loading the engine"
    if kind == "generating":
        return f"{event.get('label')}: generating"
    if kind == "result":
        return f"{event.get('label')}: {'done' if event.get('ok') else 'failed'}"
    return None
