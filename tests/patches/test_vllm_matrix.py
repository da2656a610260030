"""The patch matrix over real vLLM releases (copies; the releases themselves are never touched).

For every release: which patches are offered must follow each patch's VERSIONS and what the
release's code already has; dry-run writes nothing; apply changes exactly the files the dry
run showed, and each compiles; `compat probe` on the patched tree sees the whitelisted types
and DeepseekV2ForCausalLM as an EAGLE-3 target; the patched DeepSeek forward really records
the aux hidden states; a second apply changes no byte; revert is byte-identical. Outside
every range nothing is offered and nothing changes.
"""

from __future__ import annotations

import ast
import json

import pytest
from packaging.version import Version

from compat.cli import main
from compat.patches import all_patches
from compat.report import build_report
from compat.sources import open_path
from patch_trees import available_releases, snapshot
from patch_testing import PP_LAST, FakeDecoder, patched_forward, run_forward

pytestmark = pytest.mark.matrix

DEFAULT_TYPES = ("kimi_k2", "kimi_k25", "deepseek_v3", "deepseek_v2")


def v(text: str) -> Version:
    return Version(text)


def expected_states(version: str) -> dict[str, str]:
    """What the research note (sections 2.2, 3.4, 7.3) and the CPU backend code say each release needs."""
    ver = v(version)
    whitelist = "not-offered"
    if v("0.10.1") <= ver <= v("0.17.1"):
        whitelist = "apply"
    elif v("0.18.0") <= ver <= v("0.21.0"):
        whitelist = "present"  # upstream lists all four
    states = {
        "vllm-eagle3-whitelist": whitelist,
        "vllm-deepseek-eagle3-aux": "apply" if v("0.10.1") <= ver <= v("0.17.1") else "not-offered",
        "vllm-kimi-k25-eagle3": "apply" if v("0.15.0") <= ver <= v("0.17.1") else "not-offered",
        "vllm-cpu-attn-block16": "apply" if v("0.29.0") <= ver <= v("0.33.0") else "not-offered",
        # the runners read no drafter ids up to 0.11.0, and not eagle_config's up to 0.21.0 (0.22.0 reads them)
        "vllm-eagle3-layer-ids": "apply" if v("0.10.0") <= ver <= v("0.21.0") else "not-offered",
        # glm4_moe.py has no EAGLE-3 support in any release read (0.10.0-0.33.0); the protocol exists from 0.10.1
        "vllm-glm4-moe-eagle3": "apply" if v("0.10.1") <= ver <= v("0.33.0") else "not-offered",
        # DeepSeek capture in deepseek_v2.py from 0.18.0; the final-layer capture from 0.25.0
        "vllm-deepseek-eagle3-final-layer": "apply" if v("0.18.0") <= ver <= v("0.24.0") else "not-offered",
    }
    return {p.id: states[p.id] for p in all_patches("vllm")}  # in the order they apply (the record's order)


def cli(capsys, *argv) -> tuple[int, dict]:
    code = main(["patch", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("version", available_releases("vllm"))
def test_release(version, release_tree, capsys):
    root = release_tree(version)
    pristine = snapshot(root)
    expected = expected_states(version)

    code, dry = cli(capsys, "--path", str(root), "--dry-run")
    assert code == 0
    assert {p["id"]: p["state"] for p in dry["patches"]} == expected
    assert snapshot(root) == pristine
    to_change = {line[len("+++ b/"):] for line in dry["diff"].splitlines() if line.startswith("+++ b/")}

    code, applied = cli(capsys, "--path", str(root))
    assert code == 0
    assert set(applied["changed"]) == to_change
    if not to_change:  # nothing offered or nothing needed: not a byte changes, no record
        assert snapshot(root) == pristine
        return

    for relpath in to_change:
        compile((root / relpath).read_bytes(), relpath, "exec")
    after = snapshot(root)
    assert {k for k in after if after.get(k) != pristine.get(k)} == to_change | {"vllm/.compat-patches.json"}

    report = build_report(open_path(root))
    if expected["vllm-eagle3-whitelist"] != "not-offered":
        listed = report["eagle3_whitelist"]["model_types"]
        for model_type in DEFAULT_TYPES:  # vLLM's test: some entry is a substring of the model_type
            assert any(entry in model_type for entry in listed), (model_type, listed)
    targets = {t["class"] for t in report["eagle3_targets"]}
    if expected["vllm-deepseek-eagle3-aux"] == "apply":
        assert {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"} <= targets
        _assert_forward_records_aux(root)
    if expected["vllm-kimi-k25-eagle3"] == "apply":
        assert "KimiK25ForConditionalGeneration" in targets
    if expected["vllm-eagle3-layer-ids"] == "apply":
        _assert_ids_are_read(report, version)
    if expected["vllm-glm4-moe-eagle3"] == "apply":
        assert "Glm4MoeForCausalLM" in targets
    if expected["vllm-deepseek-eagle3-final-layer"] == "apply":
        _assert_forward_records_the_final_layer(root)
    code, status = cli(capsys, "--path", str(root), "--status")
    assert [p["id"] for p in status["applied"]] == [k for k, s in expected.items() if s == "apply"]

    code, again = cli(capsys, "--path", str(root))
    assert code == 0 and again["changed"] == []
    assert snapshot(root) == after  # not one byte

    code, reverted = cli(capsys, "--path", str(root), "--revert")
    assert code == 0
    assert snapshot(root) == pristine


def _assert_forward_records_aux(root) -> None:
    """Run the release's patched DeepseekV2Model.forward on numbers: it records the right states."""
    relpath = "vllm/model_executor/models/deepseek_v2.py"
    source = (root / relpath).read_text()
    forward = patched_forward(source, get_pp_group=lambda: PP_LAST, IntermediateTensors=dict, _get_llama_4_scaling=None)
    decoder = FakeDecoder(8, aux=(0, 2, 7))
    hidden, aux = run_forward(forward, decoder)
    assert aux == decoder.expected_aux(1.0)
    assert run_forward(forward, FakeDecoder(8)) == hidden
    init = next(
        f for c in ast.parse(source).body if isinstance(c, ast.ClassDef) and c.name == "DeepseekV2Model"
        for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    )
    assert "self.aux_hidden_state_layers" in ast.unparse(init)


def _assert_ids_are_read(report: dict, version: str) -> None:
    """Every runner reads the top-level ids as they are and eagle_config's as output-of (+1), in that order."""
    aux = report["aux_layer_ids"]
    assert aux["read_from_config"] is True
    runners = {r["runner"]: r for r in aux["runners"]}
    assert set(runners) == ({"v1", "v2"} if v(version) >= v("0.17.0") else {"v1"})
    key = "eagle_aux_hidden_state_layer_ids"
    for runner in runners.values():
        read = [(k["key"], k["where"], k["offset"]) for k in runner["keys"] if k["key"] == key]
        assert read == [(key, "top-level", 0), (key, "eagle_config", 1)], (runner["runner"], runner["keys"])


def _assert_forward_records_the_final_layer(root) -> None:
    source = (root / "vllm/model_executor/models/deepseek_v2.py").read_text()
    forward = patched_forward(source, get_pp_group=lambda: PP_LAST, IntermediateTensors=dict, _get_llama_4_scaling=None)
    _, aux = run_forward(forward, FakeDecoder(8, aux=(2, 5, 8)))
    assert len(aux) == 3  # id n (8): the last layer's output
