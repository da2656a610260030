"""Issue 33, item 5: bad input is said before anything slow runs. Each command reads and checks what the user gave
(paths, files, flags) before it looks for the engine, fetches a release or asks a server; a path that names nothing
exits 2, one that is there but the wrong kind (a file for a folder, a folder for a file, a file that is not what the
flag takes) exits 4 (3 for --path: "not a tree"), with one line naming the path and a fix.

"Nothing slow ran first" is shown, not assumed: --python is a spy interpreter that writes a mark before it runs the
real one (every engine lookup starts it), the package index is a folder that does not exist (a release fetch would
fail with 3), and a --server is a closed port on 127.0.0.1 (a request would fail with 3)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from cli_helpers import compat, isolated_env


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs-first")
    assert compat("samples", root / "S").code == 0
    (root / "a-folder").mkdir()
    (root / "a-file").write_text("not what any flag takes\n")
    (root / "bad.jsonl").write_text("nope\n")
    spy = root / "spy-python"
    spy.write_text(f"#!/bin/sh\necho ran >> {root / 'spy-ran'}\nexec {sys.executable} \"$@\"\n")
    spy.chmod(0o755)
    return root


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed once the socket is: a request there is refused


def _run(root: Path, *words: str):
    env = isolated_env(root / "env", PIP_INDEX_URL=(root / "no-index").as_uri())  # an empty cache, an index of nothing
    run = compat(*words, cwd=root, env=env)
    assert "Traceback" not in run.err and "Traceback" not in run.out, run.err
    return run


SPY = ("--engine", "vllm", "--python", "spy-python")
PAIR = ("S/Kimi-K2.5", "S/kimi-k25-eagle3-ft")

CASES = [  # (command words, exit code, words the one error line says, words the fix says)
    (["explain", "--log", "a-folder", *SPY], 4, "--log a-folder: a directory, not a log file",
     os.path.join("a-folder", "server.log")),
    (["explain", "--log", "no-such.log", *SPY], 2, "--log no-such.log: no such file", "the engine's log file"),
    (["explain", "", *SPY], 2, "the text to explain is empty", "compat explain server.log"),
    (["explain", " ", "\n", *SPY], 2, "the text to explain is empty", "pipe it in with -"),
    (["verify", *PAIR, *SPY, "--prompts", "a-folder"], 4, "--prompts a-folder: a directory, not a JSONL file", None),
    (["verify", *PAIR, *SPY, "--prompts", "bad.jsonl"], 4, "--prompts bad.jsonl: line 1 is not JSON", None),
    (["verify", *PAIR, *SPY, "--prompts", "no-such.jsonl"], 2, "--prompts no-such.jsonl: no such file", None),
    (["verify", "S/Kimi-K2.5", "a-file", *SPY], 4, "drafter a-file: a file, not a model directory",
     "the drafter model directory"),
    (["verify", "no-such-target", "S/kimi-k25-eagle3-ft", *SPY], 2, "target no-such-target: no such directory",
     "the target model directory"),
    (["verify", *PAIR, *SPY, "--log-dir", "a-file"], 4, "a-file: a file, not a folder", "--log-dir"),
    (["verify", *PAIR, *SPY, "--method", "ngram"], 2, "--method ngram: n-gram runs without a drafter",
     "compat verify TARGET --method ngram"),
    (["doctor", "S/Kimi-K2.5", "a-file", *SPY], 4, "a-file", "drafter directory"),
    (["doctor", *PAIR, *SPY, "--profile", "a-folder"], 4, "a-folder", None),
    (["convert", "ckpt", "a-file", "out", "--to", "vllm", *SPY], 4, "SRC a-file: a file, not a drafter directory",
     "the drafter directory"),
    (["plugin", "install", *SPY, "--target", "a-file"], 4, "a-file: a file, not a directory", "name a directory"),
    (["env", "--python", "a-file"], 4, "a-file: not a program this system can run", None),
    (["probe", "--path", "a-file"], 3, "a-file: a file, not a source tree", "the folder that holds vllm/"),
    (["matrix", "--engine", "vllm", "--releases", "vllm:==0.20.0", "--out", "a-file"], 4,
     "--out a-file: a file, not a directory", "name a directory"),
    (["doctor", "--manifest", "a-folder", "--engine", "vllm==0.20.0"], 4, "--manifest a-folder: no", "helm template"),
    (["doctor", "--manifest", "no-such.yaml", "--engine", "vllm==0.20.0"], 2, "--manifest no-such.yaml: no such file",
     None),
]


@pytest.mark.parametrize("words, code, said, fix", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_said_before_anything_slow(work, words, code, said, fix):
    mark = work / "spy-ran"
    mark.unlink(missing_ok=True)
    run = _run(work, *words)
    assert run.code == code, (run.code, run.err)
    told = run.out if words[0] == "env" else run.err  # env prints its report whatever happens, the failure in it
    assert said in told and (words[0] == "env" or run.err.count("error:") == 1), run.err
    if fix is not None:
        assert "fix:" in run.err and fix in run.err.split("fix:", 1)[1], run.err
    assert not mark.exists(), "the engine was looked for (the spy interpreter ran) before the input was checked"
    assert not (work / "out").exists()


def test_the_spy_does_run_when_the_inputs_are_good(work):
    """The control: with good inputs, the same command does start --python (so its silence above means something)."""
    mark = work / "spy-ran"
    mark.unlink(missing_ok=True)
    run = _run(work, "verify", *PAIR, *SPY, "--timeout", "5")
    assert run.code != 0 and mark.exists(), (run.code, run.err)  # no vLLM in the spy: found missing, after running it


def test_a_sweep_checks_its_server_log_before_any_request(work):
    port = _closed_port()
    server = f"http://127.0.0.1:{port}"
    for log, code, said in (("a-folder", 4, "--server-log a-folder: not a file"),
                            ("no-such.log", 2, "--server-log no-such.log: no such file")):
        run = _run(work, "verify", "--server", server, "--concurrency", "1,2", "--server-log", log)
        assert run.code == code and said in run.err and "fix:" in run.err, (run.code, run.err)
    refused = _run(work, "verify", "--server", server, "--concurrency", "1,2")  # the control: a request is refused, 3
    assert refused.code == 3, (refused.code, refused.err)


def test_a_sweep_checks_its_profile_before_any_request(work):
    server = f"http://127.0.0.1:{_closed_port()}"
    run = _run(work, "verify", "--server", server, "--concurrency", "1,2", "--compare", "a-folder")
    assert run.code == 4 and "a-folder" in run.err and "a directory without speculation_profile.json" in run.err, run.err
