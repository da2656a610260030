"""The matrix's LMDeploy column (`compat matrix --engine lmdeploy`): its cells on two pinned releases, built by the
command line as a user runs it, and its page in a real headless Chromium (cdp.py), offline.

What the cells must say is LMDeploy's source (network: 0.16.0 and 0.17.0, read from their wheels): a SpecForge drafter
(`LlamaForCausalLMEagle3`) for a Llama target needs the conversion to LMDeploy's layout (its config builder renames
only `LlamaForCausalLM`); Kimi-K2.5's EAGLE-3 arrives in 0.17.0 (configurations/kimi_k2.py, InternLM/lmdeploy#4846);
a Qwen3 target's class captures no EAGLE-3 layers; DFlash, an LMDeploy name from 0.18.0 (compat/engines/lmdeploy.py
METHOD_NAMES), is "no" on 0.17.0 with the release that has it named. Each check links the line of LMDeploy's repository at the release's tag. LMDeploy needs CUDA: nothing runs.
"""

from __future__ import annotations

import json
import re

import pytest

from cdp import Browser, chromium_binary
from cli_helpers import compat

from compat.doctor.diagnose import DOES_NOT_WORK, NEEDS_CONVERT

pytestmark = pytest.mark.network
RANGE = ">=0.16.0,<=0.17.0"
EVIDENCE = re.compile(r"^https://github\.com/InternLM/lmdeploy/blob/v(?P<v>[\d.]+)/(?P<path>lmdeploy/[\w/.-]+\.py)#L\d+$")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("lmdeploy-site")
    run = compat("matrix", "--engine", "lmdeploy", "--releases", f"lmdeploy:{RANGE}", "--family", "llama", "--family",
                 "kimi-k2.5", "--family", "qwen3", "--out", out, timeout=1800)
    assert run.code == 0, run.err
    return out


@pytest.fixture(scope="module")
def cells(site):
    document = json.loads((site / "matrix.json").read_text())
    assert document["engines"]["lmdeploy"]["versions"] == ["0.16.0", "0.17.0"]
    return {(r["version"], r["column"]): r for r in document["rows"]}


def test_the_cells_say_what_lmdeploys_source_does(cells):
    llama = cells["0.17.0", "llama/specforge"]
    assert llama["verdict"] == NEEDS_CONVERT and llama["failing"] == ["drafter-architecture"]
    assert any("--to lmdeploy" in step for step in llama["fix_steps"])
    assert cells["0.16.0", "kimi-k2.5/specforge"]["verdict"] == DOES_NOT_WORK  # no Kimi EAGLE-3 yet
    assert cells["0.17.0", "kimi-k2.5/specforge"]["verdict"] == NEEDS_CONVERT
    assert "target-interface" in cells["0.17.0", "qwen3/specforge"]["failing"]
    dflash = cells["0.17.0", "qwen3/specforge-dflash"]
    named = next(c for c in dflash["checks"] if c["check"] == "method-name")  # 0.17.0 has no dflash: 0.18.0 does
    assert dflash["verdict"] == DOES_NOT_WORK and dflash["failing"] == ["method-name"] and "0.18.0" in named["detail"], named["detail"]
    links = [c["evidence"] for c in llama["checks"] if c.get("evidence")]
    assert links and all(EVIDENCE.match(link).group("v") == "0.17.0" for link in links)


@pytest.fixture(scope="module")
def browser():
    import parts  # tests/parts.py: skip with the command that installs it (fail under CI=true)

    parts.require("chromium", None if chromium_binary() else "no chromium on PATH")
    with Browser() as b:
        yield b


def test_the_page_renders_lmdeploys_column(browser, site, cells):
    page = site / "matrix.html"
    browser.open(page)
    assert browser.evaluate("document.querySelectorAll(\"#matrix tbody tr[data-engine='lmdeploy']\").length") == 2
    texts = browser.evaluate("[...document.querySelectorAll('#matrix td.c')].map(t => t.textContent)")
    assert len(texts) == len(cells) and "convert" in texts and "can't tell" in texts and all(texts)
    browser.click("#matrix tr[data-engine='lmdeploy'] td.c")
    title = browser.evaluate("document.querySelector('#details h2').textContent")
    assert title.startswith("lmdeploy 0.")
    links = browser.evaluate("[...document.querySelectorAll('#details .check a')].map(a => a.href)")
    assert any(EVIDENCE.match(a) for a in links)
    assert browser.errors() == [] and browser.requests() == [page.resolve().as_uri()]
