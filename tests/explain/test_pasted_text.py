"""What people paste instead of the whole message: a fragment, the message without its values, their own words, a
file's path; and no release named at all. The texts are made from the releases' own templates (the error_sites
probe's), transformed as people paste them; never written here as an engine's output."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from release_text import render, site_of

from compat.explain import explain, sites_of
from compat.explain.nearest import literal_words
from compat.explain.text import from_text

REPO = Path(__file__).resolve().parents[2]
WHITELIST = "Eagle3 is only supported for"


def compat(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def _explain(tree, text: str):
    return explain(from_text(text), tree)


def test_a_fragment_names_its_site_and_says_it_is_a_fragment(vllm_016):
    found = _explain(vllm_016, "Model does not support EAGLE3 interface")
    (finding,) = found.findings
    _, index = sites_of(vllm_016)
    site = site_of(index, "Model does not support EAGLE3 interface", "raise")
    assert finding["site"] == site.location and finding["located_by"] == "message fragment"
    assert finding["match"]["how"] == "fragment" and finding["cause_id"] == "no-eagle3-interface"


def test_the_message_without_its_values(vllm_016):
    """The whitelist's message with its list of model types and the type left out."""
    _, index = sites_of(vllm_016)
    site = site_of(index, WHITELIST, "raise")
    without = site.template.replace("{}", "").split(". Got")[0]
    (finding,) = _explain(vllm_016, without).findings
    assert finding["site"] == site.location and finding["cause_id"] == "target-not-whitelisted"
    whole = _explain(vllm_016, "ValueError: " + render(site, "['llama', 'qwen']", "'kimi_k2'")).findings[0]
    assert whole["site"] == site.location and whole["located_by"] == "message" and whole["match"] is None


def test_a_fragment_of_a_longer_message_is_said_to_fit_it_too(vllm_032):
    """vLLM 0.32.0 raises "Model does not support EAGLE3 interface" (model runner V2) and the same words followed by
    more (runner V1): the text is the first whole and a fragment of the second, and both are said."""
    (finding,) = _explain(vllm_032, "Model does not support EAGLE3 interface").findings
    assert finding["located_by"] == "message"
    assert [n["how"] for n in finding["also_fits"]] == ["fragment"]
    assert "aux_hidden_state_outputs" in finding["also_fits"][0]["template"]


def test_fragments_of_every_specific_message_name_their_site(vllm_032):
    """A run of five words from the middle of each message of the release's speculative-decoding files that has
    at least eight literal words: the site that raises it is found (or it is among the nearest, when another
    message holds the same run)."""
    _, index = sites_of(vllm_032)
    rng = random.Random(31)
    sites = [s for s in index.sites if s.kind == "raise" and len(literal_words(s.template)) >= 8 and "{}" not in
             s.template.split(" ")[0]]
    assert len(sites) > 100
    missed = []
    for site in rng.sample(sites, 60):
        piece = next(p for p in sorted(site.template.split("{}"), key=len, reverse=True))
        words = piece.split()
        start = rng.randint(0, max(0, len(words) - 5))
        fragment = " ".join(words[start:start + 5])
        if len(literal_words(fragment)) < 3:
            continue
        found = _explain(vllm_032, fragment)
        named = {f["site"] for f in found.findings} | {a for f in found.findings for a in f["also_at"]}
        near = {n["site"] for entry in found.nearest for n in entry["sites"]}
        near |= {a for entry in found.nearest for n in entry["sites"] for a in n["also_at"]}
        if site.location not in named | near:
            missed.append((fragment, site.location))
    assert not missed, missed


def test_a_message_pasted_without_its_values_may_skip_a_word_glued_to_one(vllm_032):
    """vLLM 0.32.0's registry says "... supported in vLLM until v{}, ...": pasted without its values, the `v` glued
    to the version is gone too; the text still names that site, said to leave a word of the message out."""
    _, index = sites_of(vllm_032)
    site = site_of(index, "was supported in vLLM until v", "raise")
    without = " ".join(w for w in render(site, "EagleForCausalLM", "0.10.0").split()[:12]
                       if not any(ch.isdigit() for ch in w) and w != "EagleForCausalLM")
    assert "until and" in without  # `v0.10.0,` went with its value
    (finding,) = _explain(vllm_032, without).findings
    assert finding["site"] == site.location and finding["located_by"] == "message fragment"
    assert finding["match"]["words_left_out"] == 1 and "1 of the message's words left out" in finding["match"]["says"]


def test_a_fragment_a_message_holds_whole_beats_one_that_skips_words(vllm_032):
    """"Cannot find any model weights with" is the default loader's message whole and the Run:ai loader's ("Cannot
    find any safetensors model weights with") with a word skipped: the default loader's site is the one named."""
    _, index = sites_of(vllm_032)
    whole = site_of(index, "Cannot find any model weights with", "raise")
    skipping = site_of(index, "Cannot find any safetensors model weights with", "raise")
    assert whole.location != skipping.location
    (finding,) = _explain(vllm_032, "Cannot find any model weights with").findings
    assert finding["site"] == whole.location and finding["match"]["words_left_out"] == 0
    assert _explain(vllm_032, "Cannot find any model weights with").nearest == []


def test_other_words_get_the_nearest_sites_with_scores_not_a_match(vllm_032):
    """The runner V1 message in the user's own words, and the model types' message on a release without it."""
    found = _explain(vllm_032, "the model doesn't support the eagle3 interface, it was asked for aux hidden states")
    sites = [n for entry in found.nearest for n in entry["sites"]] + [f.get("match") or {} for f in found.findings]
    assert any("EAGLE3 interface" in (n.get("template") or "") for n in sites)
    for entry in found.nearest:
        assert all(0 < n["score"] <= 1 and n["says"] for n in entry["sites"])
    nothing = _explain(vllm_032, "the weather was fine and the coffee was hot")
    assert nothing.findings == [] and nothing.nearest == []


def test_a_file_path_given_as_the_text_is_read_as_a_log(tmp_path, vllm_016):
    _, index = sites_of(vllm_016)
    site = site_of(index, WHITELIST, "raise")
    log = tmp_path / "server.log"
    log.write_text("INFO starting\nValueError: " + render(site, "['llama']", "'gpt2'") + "\n")
    proc = compat("explain", str(log), "--engine", "vllm==0.16.0", "--offline", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["input"] == str(log) and doc["lines_read"] == 2
    assert doc["findings"][0]["site"] == site.location


def test_no_release_named_searches_every_release_and_says_which_raise_it(vllm_016, vllm_032):
    """`--engine vllm` with no vLLM here and no version in the text: every release compat covers that the cache has
    (--offline; 0.16.0 and 0.32.0 at least) is searched; the whitelist message is raised by 0.16.0, not 0.32.0
    (removed in 0.22.0), and the answer says so."""
    _, index = sites_of(vllm_016)
    fragment = site_of(index, WHITELIST, "raise").template.split(" {}")[0]
    proc = compat("explain", fragment, "--engine", "vllm", "--offline", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    searched = {s["version"] for s in doc["releases_searched"]}
    assert {"0.16.0", "0.32.0"} <= searched and doc["release_guessed"]
    (finding,) = [f for f in doc["findings"] if f["kind"] == "error"]
    raised = finding["raised_in"]
    assert "0.16.0" in raised["versions"] and "0.32.0" not in raised["versions"] and doc["version"] in raised["versions"]
    human = compat("explain", fragment, "--engine", "vllm", "--offline")
    assert "searched every vllm release" in human.stdout and "raised by vllm" in human.stdout


EAGLE3_LONG = "Model does not support EAGLE3 interface but"  # gpu_model_runner.py, vLLM 0.10.1 - 0.33.0
EAGLE3_SHORT = "Model does not support EAGLE3 interface"  # the whole message of eagle3_utils.py from 0.17.0


def _every_release(text: str) -> dict:
    proc = compat("explain", text, "--engine", "vllm", "--offline", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_a_release_that_raises_only_the_head_of_the_message_did_not_write_it(vllm_016, vllm_032, vllm_034):
    """vLLM 0.34.0 raises `Model does not support EAGLE3 interface` and no longer the longer message that starts
    with it: a text holding the longer one was written by a release that raises it whole (it was explained against
    0.34.0, "raised by vllm 0.34.0" alone); the short one, whole, by the releases that raise it (not 0.16.0, whose
    message is longer); and a fragment of both by every release with either."""
    long = site_of(sites_of(vllm_032)[1], EAGLE3_LONG, "raise")
    short = next(s for s in sites_of(vllm_034)[1].sites if s.kind == "raise" and s.template == EAGLE3_SHORT)
    assert site_of(sites_of(vllm_016)[1], EAGLE3_LONG, "raise").template == long.template
    assert not [s for s in sites_of(vllm_034)[1].sites if s.template == long.template]  # the premise

    doc = _every_release(f"RuntimeError: {render(long)}")
    (finding,) = doc["findings"]
    assert finding["template"] == long.template and doc["version"] in finding["raised_in"]["versions"]
    assert {"0.16.0", "0.32.0"} <= set(finding["raised_in"]["versions"]) and "0.34.0" not in finding["raised_in"]["versions"]

    doc = _every_release(f"RuntimeError: {short.template}")
    (finding,) = doc["findings"]
    assert finding["template"] == short.template and finding["located_by"] == "message"
    assert {"0.32.0", "0.34.0"} <= set(finding["raised_in"]["versions"]) and "0.16.0" not in finding["raised_in"]["versions"]

    doc = _every_release("Model does not support EAGLE3")
    (finding,) = doc["findings"]
    assert finding["located_by"] == "message fragment"
    assert {"0.16.0", "0.32.0", "0.34.0"} <= set(finding["raised_in"]["versions"])
    sites = finding["raised_in"]["sites"]  # each release at the message it has
    assert any(at.startswith(long.file + ":") and "0.16.0" in versions for at, versions in sites.items())
    assert any(at == short.location and "0.34.0" in versions for at, versions in sites.items())


def test_a_release_whose_code_is_at_some_frames_beats_one_without_the_frames_files(vllm_016, vllm_032, vllm_034):
    """A traceback of 0.32.0 whose caller's frame fits no release (a line of the user's own build, say): 0.32.0 shows
    the raise at its frame; 0.16.0 has neither file, so none of its frames could be checked, and it was chosen (no
    frame against it counted as better than one frame of two)."""
    short = next(s for s in sites_of(vllm_032)[1].sites if s.kind == "raise" and s.template == EAGLE3_SHORT)
    assert not vllm_016.exists(short.file) and vllm_034.exists(short.file)  # the premise
    code = vllm_032.text(short.file).splitlines()[short.line - 1].strip()
    text = ("Traceback (most recent call last):\n"
            f'  File "/venv/lib/python3.12/site-packages/{short.file}", line 1, in caller\n'
            "    set_eagle3_aux_hidden_state_layers(model)\n"
            f'  File "/venv/lib/python3.12/site-packages/{short.file}", line {short.line}, in {short.function}\n'
            f"    {code}\n"
            f"RuntimeError: {EAGLE3_SHORT}\n")
    doc = _every_release(text)
    assert doc["version"] != "0.16.0" and doc["traceback_frames"]["fit"] == 1, (doc["version"], doc["traceback_frames"])
    fits = {s["version"]: s["fits"] for s in doc["releases_searched"]}
    assert fits["0.16.0"] is None and fits["0.32.0"] is False  # one frame of two is 0.32.0's; none could be 0.16.0's
    (finding,) = doc["findings"]
    assert finding["site"].startswith(short.file + ":") and finding["located_by"] == "traceback"
