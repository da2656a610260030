"""The lines of the trainers' released code that doctor's fingerprints rest on (checkpoints/_conventions.py) say what
the fingerprint says they do: read from speculators 0.9.0 as the peers venv installs it, and from the specforge 0.2.0
wheel of the package index (SpecForge cannot be installed here: it pins sglang; its wheel is read, not run)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from compat.checkpoints import FINGERPRINTS


def cited(distribution: str):
    return [c for f in FINGERPRINTS for c in f.cites if c.distribution == distribution]


def held(text: str, citation) -> None:
    lines = text.splitlines()
    assert citation.line <= len(lines) and citation.text in lines[citation.line - 1], (str(citation), citation.text)


@pytest.mark.peers
def test_speculators_lines(peers_python):
    found = subprocess.run([str(peers_python), "-c", "import importlib.metadata as m, pathlib, speculators; "
                            "print(m.version('speculators')); print(pathlib.Path(speculators.__file__).parent.parent)"],
                           capture_output=True, text=True, timeout=300, check=True).stdout.split()
    citations = cited("speculators")
    assert citations and {c.version for c in citations} == {found[0]}
    for citation in citations:
        held((Path(found[1]) / citation.path).read_text(), citation)


@pytest.mark.network
def test_specforge_lines(tmp_path):
    citations = cited("specforge")
    (version,) = {c.version for c in citations}
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                              f"specforge=={version}", "-d", str(tmp_path)], timeout=600, capture_output=True, text=True)
    # the pinned wheel is the evidence: a network test fails without it (-m "not network" runs without the index)
    assert fetched.returncode == 0, f"specforge {version} could not be fetched from the package index: " \
        f"{fetched.stderr.strip()[-400:]}"
    (wheel,) = tmp_path.glob(f"specforge-{version}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for citation in citations:
            held(archive.read(citation.path).decode(), citation)


def test_doctor_says_the_lines_it_rests_on():
    """A fingerprint's words name the released lines, so a user can read them at that version."""
    for fingerprint in FINGERPRINTS:
        for citation in fingerprint.cites:
            assert f"{citation.distribution} {citation.version} {citation.path}:{citation.line}" in fingerprint.said
