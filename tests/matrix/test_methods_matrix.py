"""Every release's methods against the engines' version gates (METHOD_NAMES in compat/engines/ENGINE.py): a gate that
says a release has a name must agree with the release's own code, on every release of each engine; and each release's methods are
listed, family by family, with no name compat does not know and no summary that finds none."""

import pytest
from packaging.version import Version

from compat.method_table import UNKNOWN, release_methods
from compat.methods import all_methods
from compat.report_summary import methods as summary_methods

pytestmark = [pytest.mark.matrix, pytest.mark.network]


def _gated(engine: str, version: str) -> set[str]:
    return {n.name for m in all_methods() for n in m.accepted(engine, version) if not n.shared}


def _probed(report) -> set[str]:
    fact = report["methods"]
    assert fact["present"] is True, fact
    if report["engine"] == "sglang":
        return set(fact["accepted"])
    return {n["name"] for n in fact["names"]}


def test_vllm_method_gates_match_the_release(vllm_report, vllm_version):
    assert _probed(vllm_report) == _gated("vllm", vllm_version)
    rows = release_methods(vllm_report)
    assert UNKNOWN not in {r.family for r in rows}
    assert sum(len(r.names) for r in rows) == len(vllm_report["methods"]["names"])


def test_sglang_method_gates_match_the_release(sglang_report, sglang_version):
    assert _probed(sglang_report) == _gated("sglang", sglang_version)
    text, where = summary_methods(sglang_report)
    assert "not found" not in text and "NEXTN runs as EAGLE" in text and where
    rows = release_methods(sglang_report)
    assert UNKNOWN not in {r.family for r in rows}
    mtp = next(r for r in rows if r.family == "mtp")
    assert any(n.name == "NEXTN" and n.runs_as == "EAGLE" for n in mtp.names)


@pytest.mark.parametrize("version", __import__("pinned").versions("lmdeploy"))
def test_lmdeploy_method_gates_match_the_release(report_of, version):
    """LMDeploy's --speculative-algorithm choices (0.10.0: none) against compat/engines/lmdeploy.py's gates."""
    fact = report_of("lmdeploy", version)["methods"]
    assert set(fact.get("accepted") or []) == _gated("lmdeploy", version)


def test_sglang_block_key_of_dspark(sglang_report, sglang_version):
    """sglang#30982: SGLang reads a DSpark drafter's sample_from_anchor from 0.5.19; 0.5.16-0.5.18 always read the
    block gamma wide (DeepSpec's layout), so a speculators- or SpecForge-trained drafter is read one slot early."""
    block = sglang_report["methods"].get("block") or {}
    if "DSPARK" not in block:
        assert Version(sglang_version) < Version("0.5.16")
        return
    reads = block["DSPARK"]
    if Version(sglang_version) >= Version("0.5.19"):
        assert [(r["key"], r["default"]) for r in reads] == [("sample_from_anchor", True)]
    else:
        assert reads == []
