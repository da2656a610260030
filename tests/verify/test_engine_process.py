"""The child-process harness: events reach the progress callback as they come, the log keeps the output,
a timeout stops the whole process group, a crash is an error naming the log. A stand-in script plays
the engine (plain Python: this is the harness, not vLLM)."""

from __future__ import annotations

import os
import sys
import textwrap
import time

import pytest

from compat.core.errors import RefusedError
from compat.verify import engine
from compat.verify.engine import EngineRunError, describe, new_log_path, run_script

STAND_IN = textwrap.dedent('''
    import json, os, sys, time
    job = json.load(open(sys.argv[1]))
    def emit(event, **kw):
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"event": event, "t": time.time(), **kw}) + "\\n")
    print("engine output on stdout", flush=True)
    print("engine output on stderr", file=sys.stderr, flush=True)
    emit("importing"); emit("imported", version="0.0.test")
    if job.get("child"):  # a grandchild that must die with the group
        import subprocess
        pid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]).pid
        open(job["child"], "w").write(str(pid))
    emit("loading", label="plain run")
    time.sleep(job.get("sleep", 0))
    if job.get("crash"):
        sys.exit(3)
    emit("result", label="plain run", ok=True, outputs=[[1, 2]])
    emit("done", ok=True)
''')


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    side = tmp_path / "side"
    side.mkdir()
    (side / "fake.py").write_text(STAND_IN)
    monkeypatch.setattr(engine, "ENGINE_SIDE", side)
    work = tmp_path / "work"
    work.mkdir()
    return work


def test_events_progress_and_log(stand_in, tmp_path):
    seen = []
    log = tmp_path / "run.log"
    run = run_script(sys.executable, "fake.py", {"sleep": 0.6}, work=stand_in, log=log, on_event=seen.append)
    assert [e["event"] for e in seen] == ["importing", "imported", "loading", "result", "done"]
    assert run.result("plain run")["outputs"] == [[1, 2]] and run.returncode == 0
    assert run.import_seconds is not None and run.import_seconds >= 0
    text = log.read_text()
    assert "engine output on stdout" in text and "engine output on stderr" in text and "# job:" in text


def test_offline_environment_is_forced(stand_in, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    (engine.ENGINE_SIDE / "env.py").write_text(textwrap.dedent('''
        import json, os, sys
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"event": "env", "value": os.environ.get("HF_HUB_OFFLINE")}) + "\\n")
            f.write(json.dumps({"event": "done"}) + "\\n")
    '''))
    run = run_script(sys.executable, "env.py", {}, work=stand_in, log=tmp_path / "env.log")
    assert run.of("env")[0]["value"] == "1"


def test_timeout_stops_the_process_group(stand_in, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    with pytest.raises(EngineRunError, match="did not finish within 2 s") as err:
        run_script(sys.executable, "fake.py", {"sleep": 60, "child": str(pid_file)}, work=stand_in,
                   log=tmp_path / "t.log", timeout=2)
    assert time.monotonic() - started < 30
    assert str(tmp_path / "t.log") in str(err.value)
    grandchild = int(pid_file.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"process {grandchild} outlived the timeout")


def test_a_crash_before_done_names_the_log(stand_in, tmp_path):
    with pytest.raises(EngineRunError, match=r"exited with code 3 before it finished .*its log: ") as err:
        run_script(sys.executable, "fake.py", {"crash": True}, work=stand_in, log=tmp_path / "c.log")
    assert "engine output on stderr" in str(err.value)  # the log's last line says what the engine said


def test_an_interpreter_that_cannot_start_is_a_clear_error(stand_in, tmp_path):
    with pytest.raises(EngineRunError, match="cannot run it"):
        run_script(str(tmp_path / "no-python"), "fake.py", {}, work=stand_in, log=tmp_path / "x.log")


def test_log_paths_are_new_files_in_the_given_directory(tmp_path):
    path = new_log_path("verify", tmp_path / "logs")
    assert path.parent == tmp_path / "logs" and path.name.startswith("verify-") and path.suffix == ".log"
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RefusedError, match="--log-dir .*cannot create it"):  # there, but not a folder: 4
        new_log_path("verify", blocker / "sub")
    with pytest.raises(RefusedError, match="--log-dir .*: a file, not a folder"):
        new_log_path("verify", blocker)


def test_progress_lines_say_what_the_engine_does():
    assert describe({"event": "loading", "label": "speculative run"}) == "speculative run: loading the engine"
    assert describe({"event": "result", "label": "plain run", "ok": False}) == "plain run: failed"
    assert describe({"event": "platform"}) is None
