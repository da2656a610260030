"""Issue 40, point 2: in a pipe (a CI log), no long command is silent. doctor --releases said "releases done" and
then nothing while it probed and diagnosed them (116 s); explain fetched six later releases without a word; convert
copied gigabytes without one. Each phase now says itself, and a heartbeat speaks while one step runs long
(tests/cli/test_cli_hints.py shows the heartbeat itself)."""

from __future__ import annotations

import sys

from cli_helpers import compat, file_index, isolated_env

import compat.core.console as console


def test_doctor_releases_says_each_phase_into_a_pipe(tmp_path):
    """Three releases on a file:// index, fetched, probed and diagnosed: each phase has its lines on stderr."""
    env = isolated_env(tmp_path, PIP_INDEX_URL=file_index(tmp_path / "index", {"vllm": ["0.20.0", "0.21.0", "0.22.0"]}))
    assert compat("samples", tmp_path / "s", env=env).code == 0
    run = compat("doctor", "Kimi-K2.5", "kimi-k25-eagle3-ft", "--engine", "vllm", "--releases", ">=0.20", cwd=tmp_path / "s",
                 env=env)
    assert run.code in (0, 1) and "Traceback" not in run.err, run.err
    said = run.err.splitlines()
    for phase in ("doctor: vllm releases: 3 to do", "doctor: probing vllm releases: 3 to do",
                  "doctor: diagnosing vllm releases: 3 to do"):
        assert phase in said, run.err
    assert said.index("doctor: probing vllm releases: 3 to do") < said.index("doctor: diagnosing vllm releases: 3 to do")


def test_convert_says_what_it_does_while_a_step_runs_long(tmp_path, monkeypatch):
    """The heartbeat (every 20 ms here) names the step a long conversion is in: the test holds the verification until
    a line about it comes."""
    import threading

    import compat.convert.writer as writer
    from compat.cli import main

    assert compat("samples", tmp_path / "s").code == 0

    class Log:  # stderr into a file: not a terminal
        def __init__(self):
            self.text, self.seen = "", threading.Event()

        def write(self, text):
            self.text += text
            if "convert: verifying the output, " in text:
                self.seen.set()
            return len(text)

        def flush(self):
            pass

        def isatty(self):
            return False

    log = Log()
    real_verify = writer.verify

    def held_verify(*args):
        assert log.seen.wait(60), log.text
        return real_verify(*args)

    monkeypatch.setattr(console, "PROGRESS_EVERY_S", 0.02)
    monkeypatch.setattr(writer, "verify", held_verify)
    monkeypatch.setattr(sys, "stderr", log)
    code = main(["convert", "ckpt", str(tmp_path / "s" / "kimi-k2-eagle3"), str(tmp_path / "out"), "--to", "vllm"])
    monkeypatch.undo()
    assert code == 0 and (tmp_path / "out" / "config.json").is_file()
    assert "convert: verifying the output, " in log.text


def test_a_copy_says_how_far_it_is():
    """What the heartbeat says while tensors are copied: the file, and how much of how much."""
    from compat.convert.writer import _Step  # noqa: PLC2701 - the step's words are the point
    from pathlib import Path

    beat = console.Heartbeat("convert", silent=True)
    step = _Step(Path("out"), beat)
    step("model.safetensors", "writing model.safetensors")
    step.copied(3 * 1024 ** 3 // 2, 4 * 1024 ** 3)
    assert beat.state == "writing model.safetensors: 1.5 GiB of 4.0 GiB"


def test_explain_fetches_the_later_releases_as_loudly_as_the_first(tmp_path, monkeypatch):
    """explain reads later releases (from which one a check lets the text pass) with the fetch's own progress, as it
    read the first: cold, it was six releases (188 MB, 23 s) without a word."""
    from cli_helpers import engine_tree

    import compat.explain.every_release as every_release
    from compat.cli import command_parser
    from compat.commands._source import open_source
    from compat.explain.run import explain_input

    asked: list[bool] = []

    def later_releases(engine, version, cache_dir, offline, progress=False):
        asked.append(progress)
        return (lambda: ()), (lambda release: None)

    monkeypatch.setattr(every_release, "later_releases", later_releases)
    tree = engine_tree(tmp_path / "t")
    (tree / "vllm" / "config").mkdir()
    (tree / "vllm" / "config" / "speculative.py").write_text(
        "class SpeculativeConfig:\n    def _verify_args(self):\n        raise ValueError('Eagle3 is only supported here')\n")
    args = command_parser("explain").parse_args(["ValueError: Eagle3 is only supported here", "--path", str(tree)])
    args.python = None
    explain_input(args, open_source, progress=True)
    assert asked == [True]
