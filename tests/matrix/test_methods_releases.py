"""The methods of the releases the issue names (real releases, fetched once into the user cache): SGLang 0.5.23's
eight algorithms and NEXTN, the release each arrives in, and vLLM 0.34.0's 38 methods with their drafter classes
and layer-id readers; P-EAGLE before and after vLLM 0.34.0; the suffix package before and after 0.34.0."""

import pytest

from compat.method_table import release_methods
from conftest import release_report

pytestmark = pytest.mark.network


def _rows(engine, version):
    return {r.family: r for r in release_methods(release_report(engine, version))}


def test_sglang_0_5_23_has_eight_algorithms_and_nextn():
    fact = release_report("sglang", "0.5.23")["methods"]
    assert [n["name"] for n in fact["names"]] == ["DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP",
                                                  "STANDALONE", "NGRAM"]
    assert fact["names"][0]["location"] == "sglang/srt/speculative/spec_info.py:39"
    (nextn,) = fact["aliases"]
    assert nextn["runs_as"] == "EAGLE" and len(nextn["forms"]) == 2  # the resolver and from_string's reserved alias
    assert fact["plugins"]["location"] == "sglang/srt/speculative/spec_info.py:68"


@pytest.mark.parametrize("name, before, first", [("DFLASH", "0.5.10.post1", "0.5.11"), ("FROZEN_KV_MTP", "0.5.11", "0.5.12"),
                                                 ("DSPARK", "0.5.15.post1", "0.5.16"), ("UNO", "0.5.19", "0.5.20")])
def test_each_sglang_algorithm_arrives_in_its_release(name, before, first):
    assert name not in release_report("sglang", before)["methods"]["accepted"]
    assert name in release_report("sglang", first)["methods"]["accepted"]


def test_vllm_0_34_0_lists_38_methods_with_drafters_and_readers():
    report = release_report("vllm", "0.34.0")
    assert len(report["methods"]["names"]) == 38
    rows = _rows("vllm", "0.34.0")
    assert sum(len(r.names) for r in rows.values()) == 38
    assert "DFlashDraftModel" in rows["dflash"].drafters and "Qwen3DSparkModel" in rows["dspark"].drafters
    assert "Eagle3LlamaForCausalLM" in rows["eagle3"].drafters and "DeepSeekMTPModel" in rows["mtp"].drafters
    reader = rows["dflash"].reader[0]
    assert "dflash_config.target_layer_ids +1" in reader and "eagle3_utils.py:103" in reader
    assert any("sample_from_anchor (default True" in b for b in rows["dspark"].block)
    assert all(n.runs_as == "mtp" for n in rows["mtp"].names if n.name != "mtp")


def test_p_eagle_is_served_by_0_33_0_and_refused_by_0_34_0():
    old = release_report("vllm", "0.33.0")["methods"]
    assert old["speculators_types"]["peagle"]["raises"] is None
    assert {"PEagleDraftModel", "PeagleLlamaForCausalLM"} <= set(old["drafters"])
    new = release_report("vllm", "0.34.0")["methods"]
    assert "not supported" in new["speculators_types"]["peagle"]["raises"]
    assert not {"PEagleDraftModel", "PeagleLlamaForCausalLM"} & set(new["drafters"])


def test_suffix_needs_arctic_inference_until_0_34_0():
    assert release_report("vllm", "0.33.0")["methods"]["methods"]["suffix"]["venv"]["install"] == "pip install arctic-inference==0.1.1"
    assert "venv" not in release_report("vllm", "0.34.0")["methods"]["methods"]["suffix"]
