"""Issue 12, point 11: the README's examples are what the commands print. tools/readme_examples.py runs every
marked example on fixtures it builds and compares; here with --offline: the examples whose releases are in
the user cache, and those that need no release at all (so this test never checks nothing)."""

from __future__ import annotations

import re
import subprocess
import sys

from cli_helpers import ROOT


def test_readme_examples_match_what_the_commands_print():
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_examples.py"), "--check", "--offline"],
                          capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = proc.stdout.strip().splitlines()[-1]
    assert ran.startswith("examples run: ") and "usage-error" in ran, proc.stdout


def test_the_check_fails_on_a_readme_that_does_not_match(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n\n<!-- example: usage-error -->\n```text\n$ compat probe --jsn\nwhat it used to print\n```\n")
    script = [sys.executable, str(ROOT / "tools" / "readme_examples.py"), str(readme)]
    check = subprocess.run([*script, "--check"], capture_output=True, text=True, timeout=300)
    assert check.returncode == 1 and "-what it used to print" in check.stdout and "+usage: compat probe" in check.stdout
    assert subprocess.run(script, capture_output=True, text=True, timeout=300).returncode == 0  # rewrite it
    text = readme.read_text()
    assert "what it used to print" not in text and "compat probe: error: unrecognized arguments: --jsn" in text
    assert text.startswith("intro\n\n<!-- example: usage-error -->\n```text\n$ compat probe --jsn\nusage: compat probe ")
    assert subprocess.run([*script, "--check"], capture_output=True, text=True, timeout=300).returncode == 0


def _code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", text, flags=re.S)


def test_the_readme_front_reads_in_two_minutes_and_names_the_two_commands():
    """Issue 33: under 1,500 words up to the first link into docs/; its two commands are what .ci/run runs."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme[:readme.index("](docs/")].split()) < 1500
    first, second = _code_blocks(readme, "sh")[:2]
    assert first.startswith("pip install . && compat samples ") and "compat doctor " in first
    assert "[test]" not in first and "torch" not in first  # a user's install: no test extra, no CUDA torch
    assert second == "tools/test.sh"
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"first='{first}'" in ci and '\ntools/test.sh\n' in ci


def test_every_relative_link_of_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"[a-z]+://", target) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_every_other_example_runs_as_written_or_says_what_you_bring():
    """Issue 40, point 6: every `compat ...` example of the pages and of every --help runs as written in the folder
    `compat samples .` writes (exit 0 or 1, no traceback), or says what the user brings (tools/example_commands.py):
    a newcomer met names no sample had, a --launch example whose quoting broke when pasted, a page that needed a copy
    it never said how to make. With --offline: those whose releases are cached; ranges are read, not run."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_examples.py"), "--commands", "--offline"],
                          capture_output=True, text=True, timeout=3600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    summary = proc.stdout.splitlines()[0]
    total, ran = (int(n) for n in re.match(r"commands: (\d+); ran (\d+);", summary).groups())
    assert total > 100 and ran > 0, summary


def test_the_example_reader_catches_what_a_paste_would_meet(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    from example_commands import compat_argvs, help_commands, page_commands, read
    from readme_examples import pipe_env

    page = tmp_path / "page.md"
    page.write_text("<!-- yours: your manifests -->\n```sh\ncompat doctor --manifest deploy/   # yours\n```\n\n"
                    "```sh\ncompat probe --jsn | head -1   # a flag no release had\ncompat doctor --engine vllm==0.16.0 \\\n"
                    "    --launch 'vllm serve x'\n```\n")
    found = page_commands(page)
    assert [(c.text, c.yours) for c in found] == [
        ("compat doctor --manifest deploy/   # yours", "your manifests"), ("compat probe --jsn | head -1   # a flag no release had", None),
        ("compat doctor --engine vllm==0.16.0 --launch 'vllm serve x'", None)]
    assert compat_argvs(found[1].text) == [["probe", "--jsn"]]
    assert "unrecognized arguments: --jsn" in read(["probe", "--jsn"])[1]
    assert all(c.yours != "UNDER NO HEADING" for c in help_commands())  # every --help example is under a heading
    import os

    os.environ["COLUMNS"] = "100"
    try:
        assert "COLUMNS" not in pipe_env()  # outputs are compared at the width a pipe gets
    finally:
        del os.environ["COLUMNS"]
