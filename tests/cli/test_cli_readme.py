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
