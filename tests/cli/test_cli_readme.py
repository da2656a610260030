"""Issue 12, point 11: the README's examples are what the commands print. tools/readme_examples.py runs every
marked example on fixtures it builds and compares; here with --offline: the examples whose releases are in
the user cache, and those that need no release at all (so this test never checks nothing)."""

from __future__ import annotations

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
