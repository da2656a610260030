"""Issue 24, point 5: `compat probe` of a release leads with a one-screen summary (methods, the whitelist or interface
gate, the aux-id rule, the accepted keys, what compat patched); --full adds every fact; --json is unchanged; a fact
with no value (compat_plugin when no plugin is installed) is not printed as a section saying None."""

from __future__ import annotations

import json

import pytest

from cli_helpers import compat

pytestmark = pytest.mark.network  # vLLM 0.11.0 and SGLang 0.5.8, fetched once into the user cache


def test_a_release_leads_with_one_screen(tmp_path):
    run = compat("probe", "--engine", "vllm==0.11.0", env=None)
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert len(lines) <= 24  # one screen
    assert lines[0].startswith("vllm 0.11.0  released: ")
    labels = [line.split("  ")[0] for line in lines[1:] if line and not line.startswith(" ")]
    assert labels[:5] == ["methods", "EAGLE-3 gate", "aux layer ids", "accepted keys", "compat patched"]
    text = " ".join(run.out.split())
    assert "eagle3" in text and "llama, qwen, minicpm, gpt_oss" in text and "vllm/config/speculative.py:545" in text
    assert "default (2, n // 2, n - 3) always" in text  # 0.11.0 ignores the drafter's ids
    assert "unknown keys dropped silently" in text and "nothing (no compat patch record" in text
    assert "--full" in lines[-1] and "None" not in run.out


def test_full_adds_the_details_without_a_none_section():
    run = compat("probe", "--engine", "vllm==0.11.0", "--full")
    assert run.code == 0, run.err
    assert run.out.index("compat patched") < run.out.index("(eagle3_whitelist)")  # the summary first
    assert len(run.out.splitlines()) > 100 and "model_types" in run.out
    assert "compat_plugin" not in run.out and "\nNone\n" not in run.out


def test_json_is_unchanged_and_sglang_gets_its_own_words():
    report = compat("probe", "--engine", "vllm==0.11.0", "--json").json()
    assert report["compat_plugin"] is None and report["eagle3_whitelist"]["model_types"]  # the keys stay
    run = compat("probe", "--engine", "sglang==0.5.8")
    assert run.code == 0, run.err
    text = " ".join(run.out.split())
    assert "--speculative-algorithm 4 names (Enum): EAGLE, EAGLE3, STANDALONE, NGRAM; NEXTN runs as EAGLE" in text
    assert "no model-type whitelist" in text
    assert "eagle_config.eagle_aux_hidden_state_layer_ids" in text and "--speculative-* flags" in text
    json.dumps(report)
