"""Where the manifests repository of the tests is (tests/manifests/repo/: one file per format, citing its docs)."""

from pathlib import Path

REPO = Path(__file__).with_name("repo")
