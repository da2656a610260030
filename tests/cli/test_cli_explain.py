"""`compat explain` says what it does not know: text that matches nothing, failures that are not about speculative
decoding, binary input, and usage errors. The inputs are produced by real programs (a Python script's own
traceback, an allocation that fails, the interpreter's binary), never written here. Read against the
vLLM 0.32.0 source (pinned: tests/releases.json; fetched into the cache once, then read --offline)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RELEASE = ("--engine", "vllm==0.32.0", "--offline")


def compat(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "compat", *args], input=stdin, capture_output=True, timeout=300,
                          cwd=REPO)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(errors="replace"),
                                       proc.stderr.decode(errors="replace"))


@pytest.fixture(scope="module", autouse=True)
def release_cached(pinned_release):
    pinned_release("vllm", "0.32.0")  # into the cache: the commands below read it --offline


def produced(tmp_path: Path, code: str) -> Path:
    """What a real Python program prints when it fails (its traceback on stderr)."""
    script = tmp_path / "user_script.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    log = tmp_path / "run.log"
    log.write_text(proc.stdout + proc.stderr)
    return log


def explain_json(*args: str, stdin: bytes | None = None) -> tuple[int, dict]:
    proc = compat("explain", *args, *RELEASE, "--json", stdin=stdin)
    return proc.returncode, json.loads(proc.stdout)


def test_a_key_error_in_user_code_is_unrelated(tmp_path):
    log = produced(tmp_path, "config = {'model': 'x'}\nprint(config['speculative_model'])\n")
    code, doc = explain_json("--log", str(log))
    assert code == 0
    (finding,) = doc["findings"]
    assert finding["kind"] == "unrelated" and finding["cause_id"] == "user-code"
    assert "user_script.py" in finding["cause"] and finding["fix"] is None
    assert "EAGLE" not in finding["cause"]


def test_running_out_of_memory_is_unrelated(tmp_path):
    log = produced(tmp_path, "buffers = bytearray(1 << 62)\n")
    code, doc = explain_json("--log", str(log))
    assert code == 0
    kinds = {f["kind"] for f in doc["findings"]}
    assert kinds == {"unrelated"}, doc["findings"]
    assert any(f["cause_id"] == "out-of-memory" for f in doc["findings"])


def test_text_that_matches_nothing_is_not_recognised(tmp_path):
    zen = subprocess.run([sys.executable, "-c", "import this"], capture_output=True, text=True).stdout
    code, doc = explain_json(zen)
    assert code == 1 and doc["findings"] == [] and doc["recognised"] is False
    assert [s["version"] for s in doc["releases_searched"]] == ["0.32.0"]
    proc = compat("explain", zen, *RELEASE)
    assert proc.returncode == 1 and "not recognised" in proc.stdout and "vllm 0.32.0" in proc.stdout


def test_binary_input_is_one_clear_error():
    proc = compat("explain", "--log", sys.executable, *RELEASE)
    assert proc.returncode == 2
    assert "is not text" in proc.stderr and "Traceback" not in proc.stderr
    with open(sys.executable, "rb") as fh:
        piped = compat("explain", "-", *RELEASE, "--json", stdin=fh.read(1 << 16))
    assert piped.returncode == 2 and json.loads(piped.stdout)["exit_code"] == 2


@pytest.mark.parametrize("argv, code, said", [
    (("x", "--log", "y", *RELEASE), 2, "error: give the text or --log FILE, not both"),
    (("--log", "/nonexistent/file.log", *RELEASE), 2,
     "error: --log /nonexistent/file.log: no such file\n  fix: give the engine's log file, or - for standard input"),
    (("x",), 2, "error: name the release that produced the text: --engine vllm==0.32.0, --engine vllm (installed, or "
                "guessed from the text), --engine sglang==0.5.9 or --path DIR"),  # no release named
    (("x", "--engine", "vllm==0.0.999", "--offline"), 3,
     re.compile(r"error: offline and vllm==0\.0\.999 is not in the cache \S+\n  fix: run once without --offline to fetch it")),
])
def test_usage_errors(argv, code, said):
    """Each refusal is the one line (and its fix) the user reads, with its exit code, and no traceback."""
    proc = compat("explain", *argv)
    assert proc.returncode == code, proc.stderr
    assert (said.match(proc.stderr) if isinstance(said, re.Pattern) else proc.stderr.startswith(said)), proc.stderr
    assert "Traceback" not in proc.stderr


def test_colours_and_a_huge_line_are_read_through(tmp_path):
    """A real program's coloured output and a 20 MB line before its traceback: the traceback is still found."""
    code = ("import sys\n"
            "from rich.console import Console\n"
            "Console(file=sys.stderr, force_terminal=True).print('[bold red]ERROR[/] starting', highlight=False)\n"
            "print('x' * 20_000_000)\n"
            "{}['speculative_config']\n")
    log = produced(tmp_path, code)
    assert log.stat().st_size > 20_000_000 and "\x1b[" in log.read_text()
    rc, doc = explain_json("--log", str(log))
    assert rc == 0
    (finding,) = doc["findings"]
    assert finding["cause_id"] == "user-code" and finding["message"] == "KeyError: 'speculative_config'"


LYING = ("INFO 12-02 11:00:{s:02d} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {length}, Accepted "
         "throughput: 1.00 tokens/s, Drafted throughput: 4.00 tokens/s, Accepted: {acc} tokens, Drafted: {drafted} "
         "tokens, Per-position acceptance rate: {per}, Avg Draft acceptance rate: 50.0%")


@pytest.mark.parametrize("acc,drafted,per", [("NaN", "300", "0.5, 0.4, 0.3"), ("inf", "300", "0.5, 0.4, 0.3"),
                                             ("1e308", "1e308", "0.5, 0.4, 0.3"), ("-5", "300", "0.5, 0.4, 0.3"),
                                             ("100", "300", "9" * 400 + ", 0.4, 0.3")])
def test_metrics_lines_whose_counters_lie_are_not_a_traceback(tmp_path, acc, drafted, per):
    """NaN / infinite / 1e308 / negative counters and a 400-digit rate are no token counts: the line's other numbers
    are read, the lying ones are not (found by the hostile campaign: int(NaN), and sums past float range)."""
    honest = LYING.format(s=0, length="2.00", acc="150", drafted="300", per="0.5, 0.4, 0.3")
    lines = [honest] + [LYING.format(s=i, length="2.00", acc=acc, drafted=drafted, per=per) for i in range(1, 4)]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    proc = compat("explain", "--log", str(log), *RELEASE, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    finding = next(f for f in json.loads(proc.stdout)["findings"] if f["kind"] == "acceptance")
    assert finding["count"] >= 1  # a line whose %d field holds NaN is not the logger's line at all
    assert finding["over_time"][0]["accepted_tokens"] == 150
    assert all(i["accepted_tokens"] is None or 0 <= i["accepted_tokens"] <= 2**53 for i in finding["over_time"])


def test_a_log_of_many_metrics_lines_is_summed_whole_in_a_bounded_trend(tmp_path):
    """5,000 intervals: every one counted and summed, the trend kept to at most 1,024 merged points (a log of
    millions of lines held every interval and its JSON; found by the hostile campaign)."""
    lines = [LYING.format(s=i % 60, length="2.00", acc=str(100 + i % 7), drafted="300", per="0.5, 0.4, 0.3")
             for i in range(5000)]
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    proc = compat("explain", "--log", str(log), *RELEASE, "--json")
    assert proc.returncode == 0, proc.stderr
    finding = next(f for f in json.loads(proc.stdout)["findings"] if f["kind"] == "acceptance")
    assert finding["count"] == 5000
    assert 512 <= len(finding["over_time"]) <= 1024
    assert sum(i.get("log_lines", 1) for i in finding["over_time"]) == 5000
    assert sum(i["accepted_tokens"] for i in finding["over_time"]) == sum(100 + i % 7 for i in range(5000))
    assert finding["over_time"][0]["per_position"] == pytest.approx([0.5, 0.4, 0.3])
    assert "5000 `SpecDecoding metrics` log lines (lines 1-5000)" in finding["message"]


def test_a_sparse_log_of_gigabytes_is_read_in_the_time_its_text_takes(tmp_path):
    """8 GiB of hole between two pieces of text (truncate): both are read, the hole is skipped (SEEK_DATA), not
    decoded (1 GiB of NULs took 3 s; found by the hostile campaign)."""
    log = tmp_path / "server.log"
    error = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    with log.open("wb") as out:
        out.write(b"INFO starting\n" * 1000)
        out.truncate(8 << 30)
        out.seek(8 << 30)
        out.write(b"\n" + error.encode())
    started = time.monotonic()
    proc = compat("explain", "--log", str(log), *RELEASE, "--json")
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 20
    doc = json.loads(proc.stdout)
    assert [f["kind"] for f in doc["findings"]] == ["unrelated"] and doc["findings"][0]["line"] == 1002
