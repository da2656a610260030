"""The matrix's columns: each template target is read as doctor reads a real one, each drafter kind is recognised as
its trainer's layout with its ids read the trainer's way, the weights are holes in sparse files, and the evidence
links follow each project's tag and layout."""

from __future__ import annotations

import json

import pytest

from compat.doctor import read_drafter, read_target
from compat.matrix import DRAFTER_KINDS, FAMILIES, write_templates
from compat.matrix.evidence import evidence_url, issue_links
from compat.matrix.method_templates import METHOD_KINDS

# kind -> (layout compat recognises, the layers it was trained on as settled, or None when doctor must ask)
EXPECTED = {"speculators": ("speculators", "capture-before"), "specforge": ("eagle", "output-of"),
            "modelopt": ("modelopt", None), "no-ids": ("vllm", None)}


@pytest.fixture(scope="module")
def columns(tmp_path_factory):
    return write_templates(tmp_path_factory.mktemp("cache"))


def test_every_family_and_kind_is_a_column(columns):
    extra = sum(len(mk.families) for mk in METHOD_KINDS)  # the other methods' kinds, for the families that have them
    assert len(FAMILIES) >= 9 and len(columns) == len(FAMILIES) * len(DRAFTER_KINDS) + extra
    assert {c.method for c in columns} == {"eagle3", "dflash", "dspark", "mtp", "ngram"}
    assert {c.family for c in columns} >= {"llama", "qwen3", "qwen3-moe", "deepseek-v3", "kimi-k2", "kimi-k2.5",
                                          "glm4-moe", "gpt-oss", "minimax", "gemma3"}


def test_targets_read_as_doctor_reads_them(columns):
    seen = {}
    for column in columns:
        target = read_target(column.target)
        seen[column.family] = (target.model_type, target.architecture, target.num_hidden_layers)
    assert seen["kimi-k2"] == ("kimi_k2", "DeepseekV3ForCausalLM", 61)
    assert seen["kimi-k2.5"][0] == "kimi_k2" and seen["kimi-k2.5"][1] == "KimiK25ForConditionalGeneration"  # text_config's type
    assert seen["gemma3"][0] == "gemma3_text" and seen["gemma3"][2] == 62
    assert seen["glm4-moe"] == ("glm4_moe", "Glm4MoeForCausalLM", 92)
    config = json.loads((next(c for c in columns if c.family == "deepseek-v3").target / "config.json").read_text())
    assert config["kv_lora_rank"] == 512 and config["hidden_size"] == 7168 and config["vocab_size"] == 129280


@pytest.mark.parametrize("kind", sorted(DRAFTER_KINDS))
def test_drafter_kinds_are_their_trainers_layouts(columns, kind):
    for column in (c for c in columns if c.drafter_kind == kind):
        target = read_target(column.target)
        drafter = read_drafter(column.drafter, target)
        layout, convention = EXPECTED[kind]
        assert drafter.layout is not None and drafter.layout.NAME == layout, column.id
        if convention is None:
            assert drafter.trained_ids is None or drafter.settled.source == "default", column.id
        else:
            assert drafter.convention == convention, column.id
            layers = target.num_hidden_layers
            assert drafter.trained_ids == [2, layers // 2, layers - 3], column.id  # both kinds train on the same layers
        shape = drafter.tensors["fc.weight"][1]
        assert shape == (drafter.config.get("hidden_size") or drafter.config["transformer_layer_config"]["hidden_size"],
                         3 * (target.text_config.get("hidden_size") or target.config["hidden_size"]))


@pytest.mark.parametrize("kind", [mk.kind for mk in METHOD_KINDS])
def test_method_kinds_are_recognised_as_their_trainers(columns, kind):
    from compat.methods import Recognition

    for column in (c for c in columns if c.drafter_kind == kind):
        if column.drafterless:
            assert not column.drafter.exists()
            continue
        drafter = read_drafter(column.drafter, read_target(column.target))
        assert isinstance(drafter.recognised, Recognition) and drafter.recognised.family == column.method, column.id


def test_weights_are_holes_and_vocab_maps_are_real(columns):
    column = next(c for c in columns if c.id == "kimi-k2/specforge")
    weights = column.drafter / "model.safetensors"
    assert weights.stat().st_size > 300_000_000  # fc alone: 7168 x 21504 bf16
    assert weights.stat().st_blocks * 512 < 5_000_000  # written: the header, d2t and t2d
    drafter = read_drafter(column.drafter, read_target(column.target))
    assert drafter.tensors["d2t"] == ("I64", (32000,)) and drafter.tensors["t2d"] == ("BOOL", (163840,))


def test_written_once_per_content(tmp_path):
    first = write_templates(tmp_path)
    stamp = (first[0].drafter / "config.json").stat().st_mtime_ns
    again = write_templates(tmp_path, families=["llama"], kinds=["specforge"])
    assert [c.id for c in again] == ["llama/specforge"]
    assert (first[0].drafter / "config.json").stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "matrix").iterdir()] == [first[0].target.parent.parent.name]  # no staging left


def test_evidence_urls_follow_each_projects_tags_and_layout():
    assert evidence_url("vllm", "0.10.1.1", "vllm/config/speculative.py:90") == (
        "https://github.com/vllm-project/vllm/blob/v0.10.1.1/vllm/config/speculative.py#L90")
    assert evidence_url("sglang", "0.4.6.post4", "sglang/srt/server_args.py:412") == (
        "https://github.com/sgl-project/sglang/blob/v0.4.6.post4/python/sglang/srt/server_args.py#L412")
    assert evidence_url("sglang", "0.5.8", "sglang/srt/models/llama.py") == (
        "https://github.com/sgl-project/sglang/blob/v0.5.8/python/sglang/srt/models/llama.py")
    assert evidence_url("vllm", "0.32.0", "compat/known_issues.py") is None  # compat's own data: no upstream file
    assert evidence_url("vllm", "0.32.0", "sglang/srt/x.py:3") is None and evidence_url("vllm", "0.32.0", None) is None
    check = {"issues": [{"id": "x", "title": "lower acceptance", "link": "https://github.com/vllm-project/vllm/issues/40551"},
                        {"id": "y", "title": "no link", "link": None}]}
    assert issue_links(check) == [{"title": "lower acceptance", "url": "https://github.com/vllm-project/vllm/issues/40551"}]
