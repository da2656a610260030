"""A release newer than any compat was taught, made here from the newest pinned vLLM release: compat says which facts
it could not read there, and never gives a wrong one.

The "next" release is the newest pinned one changed the way upstream changes between releases: its version bumped,
a module moved (vllm/config/speculative.py, SpeculativeConfig's home, to vllm/config/spec_decode.py, its imports
following) and a function renamed (SupportsEagle3.get_eagle3_default_aux_hidden_state_layers, which gives the layers
a target captures when the drafter names none). `compat probe --path` reads it as a user's tree. Every fact is then
either the newest release's fact with the same move and rename applied (read right), or missing (not read); nothing
else. Every missing one is named by tools/releases.py's `unread_facts`, which `python tools/releases.py newer` prints
for each release upstream publishes after the pinned ones.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

import pinned

pytestmark = pytest.mark.network

ROOT = Path(__file__).resolve().parents[2]
MOVED = ("vllm/config/speculative.py", "vllm/config/spec_decode.py")
MOVED_MODULE = (r"\bvllm\.config\.speculative\b", "vllm.config.spec_decode")
RENAMED = (r"\bget_eagle3_default_aux_hidden_state_layers\b", "default_eagle3_layers")
NOT_FACTS = ("engine", "version", "source", "version_in_source", "probe_seconds", "probe_errors", "compat_patches",
             "compat_plugin")
DERIVED = ("summary",)  # a count of what was read ("1626 sites in 218 files"): fewer read, another count


def next_version(version: str) -> str:
    major, minor, *_ = Version(version).release
    return f"{major}.{minor + 1}.0"


def make_next(source: Path, root: Path, version: str) -> None:
    shutil.copytree(source / "vllm", root / "vllm", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "vllm" / "_version.py").write_text(f"__version__ = version = {version!r}\n")
    (root / MOVED[0]).rename(root / MOVED[1])
    for path in (root / "vllm").rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        edited = re.sub(RENAMED[0], RENAMED[1], re.sub(MOVED_MODULE[0], MOVED_MODULE[1], text))
        if edited != text:
            path.write_text(edited, encoding="utf-8", errors="surrogateescape")


def expected_of(known: dict) -> dict:
    """The newest release's facts with the move and the rename applied: what a right reading of "next" gives."""
    text = json.dumps(known).replace(MOVED[0], MOVED[1])
    return json.loads(re.sub(RENAMED[0], RENAMED[1], re.sub(MOVED_MODULE[0], MOVED_MODULE[1], text)))


def compare(expected, got, path: str, wrong: list[str], unread: list[str]) -> None:
    """`got` right, or missing: a value differing from `expected`, or one it does not have, is wrong."""
    if expected in (None, {}, []) and got in (None, {}, []):
        return
    if got is None:
        unread.append(path)
    elif isinstance(expected, dict) and isinstance(got, dict):
        if expected.get("present") is True and got.get("present") is False:
            (unread if got.get("reason") else wrong).append(path)  # not found, and saying why
            return
        for key in expected.keys() | got.keys():
            if key in DERIVED:
                continue
            if key not in got:
                unread.append(f"{path}.{key}")
            elif key not in expected:
                wrong.append(f"{path}.{key}: {json.dumps(got[key])[:120]} (the newest release has no such fact)")
            else:
                compare(expected[key], got[key], f"{path}.{key}", wrong, unread)
    elif isinstance(expected, list) and isinstance(got, list):
        left = [json.dumps(v, sort_keys=True) for v in expected]
        for value in got:
            text = json.dumps(value, sort_keys=True)
            if text in left:
                left.remove(text)
            else:
                wrong.append(f"{path}: {text[:160]} (no such entry in the newest release)")
        if left:
            unread.append(path)
    elif expected != got:
        wrong.append(f"{path}: {json.dumps(got)[:120]}, where the newest release has {json.dumps(expected)[:120]}")


def releases_tool():
    spec = importlib.util.spec_from_file_location("compat_tool_releases", ROOT / "tools" / "releases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def readings(pinned_release, tmp_path_factory):
    from compat.report import build_report

    newest = pinned.newest("vllm")
    tree = pinned_release("vllm", newest)
    root = tmp_path_factory.mktemp("next-release")
    make_next(tree.root, root, next_version(newest))
    known = json.loads(json.dumps(build_report(tree), default=str))
    run = subprocess.run([sys.executable, "-m", "compat", "probe", "--path", str(root), "--json"], capture_output=True,
                         text=True, timeout=900, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return newest, known, json.loads(run.stdout)


def test_the_next_release_is_read_as_itself(readings):
    newest, _, new = readings
    assert new["version"] == next_version(newest) and new["source"]["kind"] == "path"


def test_no_fact_read_on_the_next_release_is_wrong(readings):
    _, known, new = readings
    expected = expected_of(known)
    wrong: list[str] = []
    unread: list[str] = []
    for key in expected:
        if key not in NOT_FACTS:
            compare(expected[key], new.get(key), key, wrong, unread)
    assert not wrong, "facts compat read wrong on the next release:\n" + "\n".join(wrong)
    # what the edits hid: the default layer ids (their getter renamed), the moved module's error messages
    assert "aux_layer_ids.default" in unread and "error_sites.sites" in unread, unread
    # the rest was read, in its new place: SpeculativeConfig, its fields and flags, from the moved module
    assert new["speculative_config"]["location"].startswith(MOVED[1] + ":")
    assert new["speculative_config"] == expected["speculative_config"]


def test_every_fact_not_read_is_named(readings):
    _, known, new = readings
    expected = expected_of(known)
    wrong: list[str] = []
    unread: list[str] = []
    for key in expected:
        if key not in NOT_FACTS:
            compare(expected[key], new.get(key), key, wrong, unread)
    said = releases_tool().unread_facts(known, new)
    named = [line.split(":", 1)[0] for line in said]
    assert unread and all(any(path == n or path.startswith(n + ".") for n in named) for path in unread), \
        f"not read and not said: {[p for p in unread if not any(p == n or p.startswith(n + '.') for n in named)]}"
    assert any(line.startswith("aux_layer_ids.default: not read") for line in said), said
    assert any(line.startswith("error_sites.sites: ") and "entries not found again" in line for line in said), said
