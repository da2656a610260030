"""explain says what the engine checked at a raise, read from the release's source (the condition, the literal values
it compares, the user's value from the message), and the first later release whose check lets that value pass,
found by bisection over the real releases' sources. The messages are rendered from each release's own template."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from release_text import render, site_of

from compat.explain import explain, sites_of
from compat.explain.text import from_text

REPO = Path(__file__).resolve().parents[2]


def compat(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True, timeout=900, cwd=REPO)


def test_the_whitelist_guard_and_its_list_are_read_with_file_and_line(vllm_016):
    _, index = sites_of(vllm_016)
    site = site_of(index, "Eagle3 is only supported for", "raise")
    guard = site.guard
    assert guard is not None and guard["raises_when"] is True and "eagle3_target_supported" in guard["test"]
    listed = guard["names"]["eagle3_target_supported"]
    relpath, _, line = listed["at"].rpartition(":")
    assert relpath == site.file and "eagle3_target_supported = [" in vllm_016.text(relpath).splitlines()[int(line) - 1]
    source = "\n".join(vllm_016.text(relpath).splitlines()[int(line) - 1:site.line])
    assert listed["value"] and all(f'"{model_type}"' in source for model_type in listed["value"])
    assert site.holes and site.holes[-1] == "self.target_model_config.hf_text_config.model_type"


@pytest.mark.parametrize("model_type,first,how", [("kimi_k2", "0.18.0", "lets it pass"),
                                                  ("gpt2", "0.22.0", "no longer makes this check")])
def test_the_first_release_whose_check_lets_the_target_pass(vllm_016, model_type, first, how):
    """kimi_k2 joins the list in 0.18.0 (renamed aux_hidden_states_supported in 0.17.0); gpt2 never does, and the
    check is gone in 0.22.0 (the research notes' record of the whitelist, here found from the code)."""
    _, index = sites_of(vllm_016)
    site = site_of(index, "Eagle3 is only supported for", "raise")
    message = "ValueError: " + render(site, "['llama', 'qwen']", repr(model_type))
    proc = compat("explain", message, "--engine", "vllm==0.16.0", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (finding,) = json.loads(proc.stdout)["findings"]
    check = finding["check"]
    assert check["values"] == {"self.target_model_config.hf_text_config.model_type": model_type}
    assert check["raises_here"] is True and check["names"]["eagle3_target_supported"]["value"]
    assert check["passes_from"] == first and how in check["passes_how"]
    assert f"lets '{model_type}' pass: {first}" in finding["cause"]  # said in the cause, beside the catalog's words


def test_an_assert_says_its_condition(vllm_016):
    """0.16.0's CPU runner: `assert self.speculative_config is None, "spec decode is not supported."`."""
    _, index = sites_of(vllm_016)
    site = site_of(index, "spec decode is not supported", "assert")
    found = explain(from_text("AssertionError: " + render(site)), vllm_016)
    check = found.findings[0]["check"]
    assert check["test"] == "self.speculative_config is None" and check["raises_when"] is False
    assert "raises unless `self.speculative_config is None`" in check["says"]


def test_an_uncatalogued_site_gets_the_code_s_words_not_an_empty_cause(vllm_032):
    """A raise compat's catalog has no cause for: the cause is what the code checked."""
    _, index = sites_of(vllm_032)
    uncatalogued = [s for s in index.sites if s.kind == "raise" and s.guard and s.guard["names"] and "{}" not in s.template
                    and len(s.template) > 30]
    assert uncatalogued
    site = uncatalogued[0]
    found = explain(from_text(f"{site.exception}: {site.template}"), vllm_032)
    finding = next(f for f in found.findings if f["site"] == site.location)
    if finding["cause_id"] is None:
        assert "raises when" in finding["cause"] or "raises unless" in finding["cause"]
        assert "catalog has no cause" not in finding["cause"]
        name = next(iter(site.guard["names"]))
        assert name in finding["cause"]


def test_a_warning_says_what_the_engine_checked_before_logging_it(vllm_032):
    """A logger call under an `if` has its guard read as a raise's is: vLLM 0.32.0 warns about the scheduled tokens
    only when a speculative config is set (vllm/config/vllm.py)."""
    _, index = sites_of(vllm_032)
    site = site_of(index, "based on the speculative decoding settings", "log")
    assert site.guard is not None and "self.speculative_config is not None" in site.guard["test"]
    found = explain(from_text("WARNING 12-05 09:11:52 [vllm.py:1] " + render(site, "2048")), vllm_032)
    warning = next(f for f in found.findings if f["site"] == site.location)
    assert warning["kind"] == "warning" and "logs it when `self.speculative_config is not None" in warning["check"]["says"]
    assert warning["check"]["passes_from"] is None  # a warning is not bisected over the later releases


UTILS = "vllm/v1/worker/gpu/spec_decode/utils.py"
DFLASH = "vllm/v1/worker/gpu/spec_decode/dflash/speculator.py"


def test_a_raise_no_condition_guards_names_the_call_that_decided(vllm_032):
    """`get_parallel_drafting_token_id` raises at its end when no key it tries is in the drafter's config: no `if` is
    around that raise, so the cause says so and names the caller the traceback shows (the DFlash speculator).
    Modelled from vLLM 0.32.0's source (tests/explain/release_text.py): frames of its real files and lines."""
    from release_text import line_of, traceback

    _, index = sites_of(vllm_032)
    site = site_of(index, "Model config must specify `dflash_config.mask_token_id`", "raise")
    assert site.file == UTILS and not site.guard
    lines = traceback(vllm_032, [(DFLASH, "self.parallel_drafting_token_id = get_parallel_drafting_token_id(")],
                      (site.file, site.line), f"{site.exception}: {render(site)}")
    found = explain(from_text("\n".join(lines)), vllm_032)
    first = found.findings[0]
    assert first["site"] == site.location and first["located_by"] == "traceback"
    assert first["cause_id"] is None  # no catalogued cause: the code's own words
    caller = line_of(vllm_032, DFLASH, "self.parallel_drafting_token_id = get_parallel_drafting_token_id(")
    assert "no `if` or `except` around the raise" in first["cause"]
    assert f"the call that decided it: {DFLASH}:{caller}" in first["cause"]
    assert "catalog has no cause" not in first["cause"]
