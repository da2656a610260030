"""The SGLang patch matrix over real releases (private copies; the cached releases are never touched).

For every SGLang release from 0.4.4: which patches are offered follows each patch's VERSIONS and what
the release's code already has; dry-run writes nothing; apply changes exactly the files the dry run
showed, each compiles; `compat probe` on the patched copy sees DeepseekV2ForCausalLM /
DeepseekV3ForCausalLM / KimiK25ForConditionalGeneration as EAGLE-3 targets with the offset rule of
the release's own Llama hook (or of the first release that has the hook upstream) and no CUDA-graph
default-ids quirk; a second apply changes no byte; revert is byte-identical. Outside every range
nothing is offered and nothing changes. SGLang cannot be imported here (CUDA-only), so compile +
probe is the test; the patched code is run on numbers in the per-patch test files.
"""

from __future__ import annotations

import json
import shutil

import pytest
from packaging.version import Version

from compat.cli import main
from compat.report import build_report
from compat.sources import open_path
from patch_trees import release_source, snapshot

pytestmark = pytest.mark.matrix

FIRST = "0.4.4"
CAPTURE, KIMI, GRAPHS = "sglang-deepseek-eagle3-capture", "sglang-kimi-k25-eagle3", "sglang-eagle3-graph-aux-ids"
RANGES = {
    CAPTURE: (Version("0.4.4.post2"), Version("0.5.4.post1")),  # Llama has the hook, DeepSeek not yet (0.5.4.post2)
    KIMI: (Version("0.5.9"), Version("0.5.9")),  # kimi_k25.py without the hooks (0.5.10 has them)
    GRAPHS: (Version("0.4.9"), Version("0.5.10.post1")),  # drafter ids read, applied after graph capture (fixed 0.5.11)
}


def releases() -> list[str]:
    import pinned

    return pinned.versions("sglang", FIRST)


def expected_states(version: str) -> dict[str, str]:
    ver = Version(version)
    return {pid: "apply" if lo <= ver <= hi else "not-offered" for pid, (lo, hi) in RANGES.items()}


def cli(capsys, *argv) -> tuple[int, dict]:
    code = main(["patch", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def copy_of(version: str, tmp_path):
    dest = tmp_path / f"sglang-{version}"
    shutil.copytree(release_source("sglang", version) / "sglang", dest / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    if open_path(dest).version is None:
        (dest / "sglang/version.py").write_text(f'__version__ = "{version}"\n')
    return dest


def targets(report: dict) -> dict[str, dict]:
    return {t["class"]: t for t in report["eagle3_targets"] if t["architectures"] and not t.get("is_drafter")}


def rule(entry: dict) -> tuple:
    """(accepts ids, offset rule) of a target entry, a delegate's rule read through."""
    offset = entry["layer_id_offset"]
    if offset == "delegates":
        offset = ("delegates", entry["delegates_to"]["class"], entry["delegates_to"]["layer_id_offset"])
    return entry["accepts_layer_ids"], offset


_upstream: dict[str, dict] = {}


def upstream_targets(version: str) -> dict[str, dict]:
    if version not in _upstream:
        import pinned

        _upstream[version] = targets(build_report(pinned.fetch("sglang", version)))
    return _upstream[version]


@pytest.mark.parametrize("version", releases())
def test_release(version, tmp_path, capsys):
    expected = expected_states(version)
    if "apply" not in expected.values():  # outside every range: preview the cached release, no copy needed
        code, dry = cli(capsys, "--engine", f"sglang=={version}", "--dry-run")
        assert code == 0 and {p["id"]: p["state"] for p in dry["patches"]} == expected and dry["diff"] == ""
        return
    root = copy_of(version, tmp_path)
    try:
        _check_release(version, root, expected, capsys)
    finally:
        shutil.rmtree(root, ignore_errors=True)  # ~20 MB a release: keep the disk flat over the matrix


def _check_release(version: str, root, expected: dict, capsys) -> None:
    pristine = snapshot(root)
    before = build_report(open_path(root))
    code, dry = cli(capsys, "--path", str(root), "--dry-run")
    assert code == 0
    assert {p["id"]: p["state"] for p in dry["patches"]} == expected
    assert snapshot(root) == pristine
    to_change = {line[len("+++ b/"):] for line in dry["diff"].splitlines() if line.startswith("+++ b/")}

    code, applied = cli(capsys, "--path", str(root))
    assert code == 0 and set(applied["changed"]) == to_change and to_change
    for relpath in to_change:
        compile((root / relpath).read_bytes(), relpath, "exec")
    after = snapshot(root)
    assert {k for k in after if after.get(k) != pristine.get(k)} == to_change | {"sglang/.compat-patches.json"}

    report = build_report(open_path(root))
    found, was = targets(report), targets(before)
    if expected[CAPTURE] == "apply":
        assert "DeepseekV2ForCausalLM" not in was  # what the patch is for
        llama = rule(found["LlamaForCausalLM"])  # the shape this release's runner calls
        for cls in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"):
            assert rule(found[cls]) == llama, (cls, found[cls])
        assert llama == ((True, 1) if Version(version) >= Version("0.4.9") else (False, None))
    if expected[KIMI] == "apply":
        assert "KimiK25ForConditionalGeneration" not in was
        assert rule(found["KimiK25ForConditionalGeneration"]) == rule(upstream_targets("0.5.10")["KimiK25ForConditionalGeneration"])
        assert rule(found["KimiK25ForConditionalGeneration"]) == (True, ("delegates", "DeepseekV3ForCausalLM", 1))
    if expected[GRAPHS] == "apply":
        assert before["aux_layer_ids"]["cuda_graph_defaults_quirk"] is True
        assert report["aux_layer_ids"]["cuda_graph_defaults_quirk"] is False
        assert report["aux_layer_ids"]["read_from_config"] is True
    code, status = cli(capsys, "--path", str(root), "--status")
    assert [p["id"] for p in status["applied"]] == [k for k, s in expected.items() if s == "apply"]

    code, again = cli(capsys, "--path", str(root))
    assert code == 0 and again["changed"] == []
    assert {p["id"]: p["state"] for p in again["patches"]} == {k: "present" if s == "apply" else s for k, s in expected.items()}
    assert snapshot(root) == after

    code, _ = cli(capsys, "--path", str(root), "--revert")
    assert code == 0 and snapshot(root) == pristine


@pytest.mark.parametrize("version", ["0.5.4.post2", "0.5.10", "0.5.11"])
def test_the_first_releases_with_each_fix_upstream_need_no_patch(version):
    """Their code has what the patches add: the checks recognise it (the patches are not offered there anyway)."""
    from compat.patches import all_patches
    import pinned

    tree = pinned.fetch("sglang", version)
    fixed_upstream = {"0.5.4.post2": CAPTURE, "0.5.10": KIMI, "0.5.11": GRAPHS}[version]
    patch = next(p for p in all_patches("sglang") if p.id == fixed_upstream)
    files = patch.find_files(tree)
    assert files and all(patch.has_fix(role, tree.text(rel), patch.options) for role, rel in files.items())
