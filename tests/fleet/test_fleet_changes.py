"""patch and plugin on remote hosts (a real sshd on 127.0.0.1): journaled, dry-run first, byte-identical on
revert there; a fleet whose hosts differ in compat's patch record or plugin is flagged (and fails patch and
plugin, exit 1; probe and env only say it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from conftest import compat

PATCH = "vllm-cpu-attn-block16"  # offered for vllm 0.29.0-0.33.0: applies to the 0.32.0 on both hosts


def tree_hash(python: str) -> str:
    """sha256 over every file of the vllm package in that venv (names and bytes), the record included."""
    root = next(Path(python).parent.parent.glob("lib/python3*/site-packages/vllm"))
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def fleet(server, *words: str) -> tuple[int, dict]:
    done = compat(server, *words, "--json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def site_packages(python: str) -> Path:
    return next(Path(python).parent.parent.glob("lib/python3*/site-packages"))


def undo(server, python: str) -> None:
    """Revert what a test (or a run that died) left on beta: through compat on the host, only when there is something."""
    where = ("--engine", "vllm", "--python", "~/venv", "--host", "beta")
    if (site_packages(python) / "vllm" / ".compat-patches.json").exists():
        assert fleet(server, "patch", *where, "--revert")[0] == 0
    if (site_packages(python) / "compat_plugin_vllm").exists():
        assert fleet(server, "plugin", "remove", *where)[0] == 0


@pytest.fixture
def clean(trusted, homes, writable_python):
    undo(homes, writable_python)
    before = tree_hash(writable_python)
    yield homes
    undo(homes, writable_python)
    assert tree_hash(writable_python) == before


def test_patch_remote_dry_run_apply_revert_is_byte_identical(clean, writable_python):
    before = tree_hash(writable_python)
    where = ("--engine", "vllm", "--python", "~/venv", "--host", "beta", "--select", PATCH)
    code, doc = fleet(clean, "patch", *where, "--dry-run")
    assert code == 0 and "+++ b/vllm/" in doc["hosts"][0]["result"]["diff"]
    assert tree_hash(writable_python) == before  # a dry run writes nothing
    code, doc = fleet(clean, "patch", *where)
    result = doc["hosts"][0]["result"]
    assert code == 0 and [p["state"] for p in result["patches"]] == ["apply"]
    assert result["record"].startswith(str(clean.remote_home("beta") / "venv"))  # the host's path, as it sees it
    assert tree_hash(writable_python) != before and Path(result["record"]).is_file()
    code, doc = fleet(clean, "patch", *where)  # again: a no-op, the record says it is applied
    assert code == 0 and doc["hosts"][0]["result"]["patches"][0].get("by") == "compat"
    code, doc = fleet(clean, "patch", "--engine", "vllm", "--python", "~/venv", "--host", "beta", "--revert")
    assert code == 0 and doc["hosts"][0]["result"]["reverted"] == [PATCH]
    assert tree_hash(writable_python) == before


def test_a_patch_on_one_host_only_is_a_mixed_fleet(clean):
    code, _ = fleet(clean, "patch", "--engine", "vllm", "--python", "~/venv", "--host", "beta", "--select", PATCH)
    assert code == 0
    both = ("--engine", "vllm", "--python", "~/venv", "--host", "alpha", "--host", "beta")
    code, doc = fleet(clean, "probe", *both)
    assert code == 0  # probe says it and exits 0
    assert doc["mixed"] == {"patches": {"-": ["alpha"], PATCH: ["beta"]}}
    code, doc = fleet(clean, "patch", *both, "--status")
    assert code == 1 and doc["exit_code"] == 1 and all(h["ok"] for h in doc["hosts"])  # every host answered
    assert doc["mixed"]["patches"] == {"-": ["alpha"], PATCH: ["beta"]}
    text = compat(clean, "env", "--python", "~/venv", "--host", "alpha", "--host", "beta")
    assert text.returncode == 0 and f"mixed fleet: the hosts differ in patches: - on alpha; {PATCH} on beta" in text.stdout


def test_plugin_on_one_host_only_is_flagged_and_removed_cleanly(clean, writable_python):
    before = tree_hash(writable_python)
    code, doc = fleet(clean, "plugin", "install", "--engine", "vllm", "--python", "~/venv", "--host", "beta", "--select", PATCH)
    assert code == 0, doc
    installed = doc["hosts"][0]["result"]
    assert installed["site_packages"].startswith(str(clean.remote_home("beta")))
    assert tree_hash(writable_python) == before  # in memory: no engine file changed
    code, doc = fleet(clean, "plugin", "status", "--engine", "vllm", "--python", "~/venv", "--host", "alpha", "--host", "beta")
    assert code == 1 and set(doc["mixed"]) == {"plugin"}
    states = {h["host"]: h["result"]["installed"] for h in doc["hosts"]}
    assert states == {"alpha": False, "beta": True}
    code, doc = fleet(clean, "plugin", "remove", "--engine", "vllm", "--python", "~/venv", "--host", "beta")
    assert code == 0 and doc["hosts"][0]["result"]["removed"]
