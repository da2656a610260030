"""compat in review: the hook of .pre-commit-hooks.yaml run by the real pre-commit (`pre-commit try-repo` on this
checkout, which installs compat into pre-commit's own environment as a user's would) on a temporary git repository
with a manifest whose release lacks an option, and the composite action.yml read for what it runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from manifest_repo import REPO

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.network  # pre-commit installs compat's dependencies from the package index


def git(cwd: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def git_repository(tmp_path: Path) -> Path:
    """An empty git repository, as pre-commit needs one (the `git` part, tests/parts.py: skipped without git)."""
    repo = tmp_path / "infra"
    repo.mkdir()
    git(repo, "init", "-q")
    return repo


def test_the_hook_runs_in_real_pre_commit(git_repository: Path, tmp_path: Path):
    repo = git_repository
    shutil.copy(REPO / "k8s/overlays/spec-decoding/patch-spec-decoding.yaml", repo / "canary.yaml")
    (repo / "README.md").write_text("not a manifest\n")
    git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    run = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "compat-manifests", "--all-files"],
                         cwd=repo, capture_output=True, text=True, env=env, timeout=1500)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "compat doctor --manifest" in out and "Failed" in out
    assert "canary.yaml:15" in out and "unrecognized arguments: -sc" in out, out
    # fixed, the hook passes
    text = (repo / "canary.yaml").read_text().replace("- -sc  # seeded: -sc arrives after 0.11.1", "- --speculative-config")
    (repo / "canary.yaml").write_text(text)
    git(repo, "add", ".")
    again = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "compat-manifests", "--all-files"],
                           cwd=repo, capture_output=True, text=True, env=env, timeout=1500)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout


def test_the_hook_definition_passes_file_names_to_the_manifest_option():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "compat-manifests")
    assert hook["entry"].split()[-1] == "--manifest" and hook["language"] == "python" and hook["types"] == ["yaml"]


def test_the_action_is_composite_and_writes_sarif():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    script = "\n".join(step["run"] for step in action["runs"]["steps"])
    assert "--format sarif" in script and "--manifest $PATHS" in script
    docs = (ROOT / "docs" / "manifests.md").read_text()
    assert "github/codeql-action/upload-sarif" in docs and "compat-manifests" in docs
