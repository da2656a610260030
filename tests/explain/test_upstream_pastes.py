"""explain on what users paste upstream, read against the release each thread ran (pinned, fetched: `network`): an
issue title holding the error, a traceback flattened onto one line, an error Python raised at an access of the
engine's, an assert quoted by its text, a paragraph in the user's words, the user's own error, and a paste that names
its release without --engine. Each test cites its thread; the sites are checked against the release's own file and
line, the causes against what the thread's maintainers said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from release_text import frame, line_of, site_of, traceback

from compat.explain import explain, sites_of
from compat.explain.text import from_text

REPO = Path(__file__).resolve().parents[2]


def compat(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", *args], capture_output=True, text=True, timeout=900, cwd=REPO)


def _explain(tree, text: str):
    return explain(from_text(text), tree)


def _code_at(tree, site: str) -> str:
    relpath, _, line = site.rpartition(":")
    return tree.text(relpath).splitlines()[int(line) - 1].strip()


@pytest.fixture(scope="module")
def vllm_0102(pinned_release):
    return pinned_release("vllm", "0.10.2")


@pytest.fixture(scope="module")
def vllm_0151(pinned_release):
    return pinned_release("vllm", "0.15.1")


@pytest.fixture(scope="module")
def sglang_0523(pinned_release):
    return pinned_release("sglang", "0.5.23")


# -- titles --------------------------------------------------------------------------------------------------------
def test_a_title_quoting_an_assert_by_its_expression(vllm_0102):
    """vllm-project/vllm#25647's title (vLLM 0.10.2, Qwen3-Next MTP), the assert cut where the title ended: the
    release's assert whose text it is, with the assert's own message, which says what to change."""
    title = ("[Bug]: 4xH800 Qwen/Qwen3-Next-80B-A3B-Instruct MTP, assert error, assert (m.num_reqs * (self.num_spec + 1) "
             "<= m.num_actual_tokens")
    (finding,) = _explain(vllm_0102, title).findings
    assert finding["site"].startswith("vllm/v1/attention/backends/gdn_attn.py:")
    assert _code_at(vllm_0102, finding["site"]).startswith("assert (m.num_reqs * (self.num_spec + 1) <= m.num_actual_tokens")
    assert finding["located_by"] == "assert text (cut)"
    assert "Make sure all cudagraph capture sizes <= max_num_seq" in finding["cause"]
    assert any(lever["name"] == "num_speculative_tokens" for lever in finding["change"])


def test_a_title_holding_an_f_string_message_the_users_words_go_on_after(vllm_0102):
    """vllm-project/vllm#24967's title: the registry's message with the user's architecture in its hole, cut after its
    first sentence, then the user's words. The drafter's architecture is one the release does not register."""
    title = ("[Bug]: ValueError: Model architectures ['EagleQwen2ForCausalLM'] are not supported for now. vllm not loading "
             "with EAGLE spec decode using drafter model EAGLE-Qwen2-7B-Instruct and main model Qwen2-7B-")
    (finding,) = _explain(vllm_0102, title).findings
    assert finding["site"].startswith("vllm/model_executor/models/registry.py:")
    relpath, _, line = finding["site"].rpartition(":")
    raised = "\n".join(vllm_0102.text(relpath).splitlines()[int(line) - 1:int(line) + 3])
    assert "raise ValueError(" in raised and "are not supported for now" in raised
    assert finding["located_by"] == "message cut short" and finding["match"]["how"] == "cut"
    assert finding["cause_id"] == "drafter-architecture-unknown" and "['EagleQwen2ForCausalLM']" in finding["cause"]


def test_a_title_of_sglang_cut_after_a_literal(pinned_release):
    """sgl-project/sglang#5441's title (SGLang 0.4.5): the registry's message ending where its first literal does."""
    tree = pinned_release("sglang", "0.4.5")
    (finding,) = _explain(tree, "[Bug] ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now.").findings
    relpath, _, line = finding["site"].rpartition(":")
    assert relpath == "sglang/srt/models/registry.py"
    assert "are not supported for now" in "\n".join(tree.text(relpath).splitlines()[int(line) - 1:int(line) + 3])
    assert finding["kind"] == "error" and finding["exception"] == "ValueError"


def test_a_title_whose_cause_is_the_options_that_select_the_path(pinned_release):
    """sgl-project/sglang#9330's title (filed by a maintainer, SGLang 0.5.1, launched with `--speculative-algorithm
    EAGLE --attention-backend trtllm_mla --prefill-attention-backend flashinfer`): the assert, and the options its
    condition reads, followed to the server arguments they come from."""
    tree = pinned_release("sglang", "0.5.1")
    found = _explain(tree, "[Bug] AssertionError: Currently HybridAttentionBackend does not support speculative decoding.")
    (finding,) = found.findings
    assert "does not support speculative decoding" in _code_at(tree, finding["site"]) + "\n".join(
        tree.text(finding["site"].rpartition(":")[0]).splitlines()[int(finding["site"].rpartition(":")[2]):][:2])
    options = {lever["name"] for lever in finding["change"] if lever["kind"] == "option"}
    assert {"--attention-backend", "--prefill-attention-backend", "--speculative-algorithm"} <= options
    assert "what selects this path: the option --" in finding["cause"]


# -- a traceback flattened onto one line ----------------------------------------------------------------------------
PREFIX = "(EngineCore_DP0 pid=2109652) ERROR 09-18 12:03:12 [core.py:712] "


def test_a_flattened_traceback_finds_the_raise_it_ends_in(vllm_0102):
    """vllm-project/vllm#25134 (vLLM 0.10.2 from source, Qwen3-30B-A3B-FP8 + a SpecForge drafter): the engine core's
    record as the thread shows it, its exception line as vllm#25927 quotes it, all on one line. Its raise is the
    runner's refusal of a target without the EAGLE-3 interface; maintainers: "Resolved by #26485" (Qwen3-MoE
    SupportsEagle3, from 0.12.0)."""
    lines = [PREFIX + "EngineCore failed to start.", PREFIX + "Traceback (most recent call last):",
             PREFIX + '  File "/home/wangyxbh/vllm/vllm/v1/engine/core.py", line 703, in run_engine_core',
             PREFIX + "    engine_core = EngineCoreProc(*args, **kwargs)",
             PREFIX + '  File "/home/wangyxbh/vllm/vllm/v1/engine/core.py", line 502, in __init__',
             PREFIX + "    super().__init__(vllm_config, executor_class, log_stats,",
             PREFIX + "RuntimeError: Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested"]
    whole = _explain(vllm_0102, "\n".join(lines)).findings[0]
    flat = _explain(vllm_0102, " ".join(lines)).findings[0]
    assert flat["site"] == whole["site"] and flat["cause_id"] == whole["cause_id"] == "no-eagle3-interface"
    assert flat["process"] == "EngineCore_DP0 pid=2109652" and flat["traceback"]
    relpath, _, line = flat["site"].rpartition(":")
    assert relpath == "vllm/v1/worker/gpu_model_runner.py"
    assert "Model does not support EAGLE3 interface" in "\n".join(vllm_0102.text(relpath).splitlines()[int(line) - 1:int(line) + 2])


# -- errors Python raises at an access ------------------------------------------------------------------------------
POSITIONS = "AttributeError: 'EagleProposer' object has no attribute 'positions'"


def test_an_attribute_error_without_a_traceback_finds_the_line_that_reads_it(vllm_0151):
    """vllm-project/vllm#34607 (vLLM 0.15.1, Qwen3-VL-4B + eagle3: "With vllm==0.13.1 it works"): the proposer reads
    `self.positions` under `if self.uses_mrope:`, where its __init__ set only `mrope_positions`."""
    (finding,) = _explain(vllm_0151, f"[Bug]: specualative decoding error in 0.15.1 {POSITIONS}").findings
    assert _code_at(vllm_0151, finding["site"]) == "positions = self.positions[:, last_token_indices]"
    assert finding["located_by"] == "message names" and finding["access"]["class"] == "EagleProposer"
    (defined,) = finding["access"]["defined"]
    assert defined["when"] == "not self.uses_mrope" and _code_at(vllm_0151, defined["at"]).startswith("self.positions =")
    assert "under `if self.uses_mrope:`, where it was never set" in finding["cause"]
    (lever,) = finding["change"]
    assert lever["code"] == "self.draft_model_config.uses_mrope"  # the draft model's M-RoPE: what the user chose


def test_an_attribute_error_with_its_traceback_is_located_by_the_frames(vllm_0151):
    """The same failure as vllm#34607's traceback shows it, its frames from the engine core's busy loop down to the
    proposer (modelled from 0.15.1's source: the thread's paste is cut in the excerpt compat can read)."""
    relpath = "vllm/v1/spec_decode/eagle.py"
    site = (relpath, line_of(vllm_0151, relpath, "positions = self.positions[:, last_token_indices]"))
    lines = traceback(vllm_0151, [("vllm/v1/engine/core.py", "engine_core.run_busy_loop()"),
                                  ("vllm/v1/worker/gpu_model_runner.py", "draft_token_ids = self.drafter.propose(")],
                      site, POSITIONS)
    (finding,) = _explain(vllm_0151, "\n".join(lines)).findings
    assert finding["site"] == f"{relpath}:{site[1]}" and finding["located_by"] == "traceback"
    assert "sets `positions` only when `not self.uses_mrope`" in finding["cause"]


def test_a_target_class_read_as_the_draft_model(sglang_0523):
    """sgl-project/sglang#36528 (EAGLE3 without --speculative-draft-model-path loads the target as the draft):
    `Qwen2ForCausalLM` lacks `set_embed`, a Llama target lacks `hot_token_id`. The sites the thread names
    (`EagleDraftWorker.init_lm_head`), the classes that have the names, and the option the fix PR (sglang#36593)
    requires: "Require --speculative-draft-model-path"."""
    embed = _explain(sglang_0523, "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'set_embed'").findings[0]
    assert _code_at(sglang_0523, embed["site"]) == "self.draft_runner.model.set_embed(embed)"
    assert embed["function"] == "EagleDraftWorker.init_lm_head"
    assert "Qwen2ForCausalLM (sglang/srt/models/qwen2.py:" in embed["cause"] and "`set_embed_and_head`" in embed["cause"]
    assert any(d["class"] == "LlamaForCausalLM" for d in embed["access"]["defined_by_others"])
    assert [lever["name"] for lever in embed["change"]] == ["--speculative-draft-model-path"]
    hot = _explain(sglang_0523, "AttributeError: 'LlamaForCausalLM' object has no attribute 'hot_token_id'").findings[0]
    assert _code_at(sglang_0523, hot["site"]) == "if self.draft_runner.model.hot_token_id is not None:"
    assert any(d["class"] == "LlamaForCausalLMEagle3" for d in hot["access"]["defined_by_others"])


def test_a_keyword_the_callee_does_not_take(pinned_release):
    """vllm-project/vllm#48452 (vLLM 0.24.0): `EagleMiniCPMForCausalLM.forward() got an unexpected keyword argument
    'inputs_embeds'`; the maintainers' fix: "Missing inputs_embeds argument". explain reads what forward takes in the
    release, and the proposer's dict of arguments that passes it."""
    tree = pinned_release("vllm", "0.24.0")
    text = "TypeError: EagleMiniCPMForCausalLM.forward() got an unexpected keyword argument 'inputs_embeds'"
    (finding,) = _explain(tree, text).findings
    assert "it takes (input_ids, positions, hidden_states)" in finding["cause"]
    takes_at = finding["cause"].split("hidden_states) (")[1].split(")")[0]
    assert takes_at.startswith("vllm/model_executor/models/minicpm_eagle.py:") and _code_at(tree, takes_at) == "def forward("
    could = {c["site"].rpartition(":")[0] for c in finding["could_be"]}
    assert "vllm/v1/spec_decode/llm_base_proposer.py" in could


# -- prose ---------------------------------------------------------------------------------------------------------
def test_a_paragraph_naming_a_class_a_method_and_a_flag(sglang_0523):
    """sgl-project/sglang#36528's own words: the names it gives (`Qwen2ForCausalLM`, `set_embed`, the flags) meet at
    the release's line that calls `set_embed` on the draft runner's model."""
    text = ("Starting SGLang with `--speculative-algorithm EAGLE3` but without `--speculative-draft-model-path` can "
            "silently use the target checkpoint as the draft model.\n1. `Qwen/Qwen2.5-0.5B-Instruct` loads the target "
            "as both target and draft, then crashes because `Qwen2ForCausalLM` does not implement the embed-only EAGLE3 "
            "draft method `set_embed`.")
    found = _explain(sglang_0523, text)
    (finding,) = found.findings
    assert finding["located_by"] == "names in the text"
    assert _code_at(sglang_0523, finding["site"]) == "self.draft_runner.model.set_embed(embed)"
    assert {"Qwen2ForCausalLM", "set_embed", "--speculative-draft-model-path"} <= set(found.searched)


def test_names_the_release_does_not_have_are_said_searched_for(vllm_032):
    proc = compat("explain", "[Bug]: eagle3 fails: Qwen3ForCausalLM has no frobnicate_hidden_states", "--engine",
                  "vllm==0.32.0", "--offline", "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"] == [] and {"Qwen3ForCausalLM", "frobnicate_hidden_states"} <= set(doc["searched_for"])
    human = compat("explain", "[Bug]: eagle3 fails: Qwen3ForCausalLM has no frobnicate_hidden_states", "--engine",
                   "vllm==0.32.0", "--offline")
    assert "searched the release for: Qwen3ForCausalLM, frobnicate_hidden_states" in human.stdout


# -- the user's own error ------------------------------------------------------------------------------------------
def test_the_users_raising_frame_is_the_users_not_the_engines(vllm_032):
    """A KeyError raised in the user's own script, with vLLM's frames above it (a custom logits processor the engine
    called; its frames modelled from 0.32.0's source) and with a script in a folder named like the engine: neither
    is pinned on a site of vLLM; the user's line is cited."""
    engine = frame(vllm_032, "vllm/v1/worker/gpu_model_runner.py",
                   line_of(vllm_032, "vllm/v1/worker/gpu_model_runner.py", "def execute_model(") + 1)
    for path in ("/home/me/jobs/processors.py", "/home/me/vllm/processors.py"):
        lines = ["Traceback (most recent call last):", *engine, f'  File "{path}", line 18, in apply',
                 '    bias = self.table[request["speculative_model"]]', "KeyError: 'speculative_model'"]
        (finding,) = _explain(vllm_032, "\n".join(lines)).findings
        assert finding["kind"] == "unrelated" and finding["site"] is None and finding["cause_id"] == "user-code"
        assert finding["raised_by_user"] == {"path": path, "line": 18, "function": "apply",
                                             "code": 'bias = self.table[request["speculative_model"]]'}
        assert f"{path}:18 in apply" in finding["cause"] and "the line that raised is yours" in finding["cause"]


# -- no --engine: the release the paste names -------------------------------------------------------------------------
def test_a_paste_that_names_its_release_needs_no_engine(vllm_0151):
    text = f"INFO 02-16 10:00:00 [api_server.py:1] vLLM API server version 0.15.1\n{POSITIONS}"
    proc = compat("explain", text, "--offline", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["version"] == "0.15.1" and doc["release_named_by_text"][0]["said"] == "vLLM API server version 0.15.1"
    assert _code_at(vllm_0151, doc["findings"][0]["site"]) == "positions = self.positions[:, last_token_indices]"
    human = compat("explain", text, "--offline")
    assert "no --engine given: the text names vllm 0.15.1 (line 1: `vLLM API server version 0.15.1`)" in human.stdout


def test_a_paste_that_names_no_release_still_asks_for_one():
    proc = compat("explain", POSITIONS)
    assert proc.returncode == 2 and "the text names no release either" in proc.stderr


def test_a_checkout_of_another_release_is_still_the_engines(vllm_032):
    """vllm-project/vllm#25134's frames are a source checkout (`/home/wangyxbh/vllm/vllm/...`): a frame there is the
    engine's even when this release no longer has its file (V0's spec_decode worker is gone from 0.32.0), so the
    error is not said to be the user's; the access is not followed into later releases (no line of this one)."""
    lines = ["Traceback (most recent call last):",
             '  File "/home/wangyxbh/vllm/vllm/spec_decode/spec_decode_worker.py", line 388, in _run_speculative_decoding_step',
             "    proposal_scores = self.scorer.score_proposals(", "KeyError: 8"]
    (finding,) = _explain(vllm_032, "\n".join(lines)).findings
    assert finding["kind"] == "error" and finding["raised_by_user"] is None
    assert finding["site"] == "vllm/spec_decode/spec_decode_worker.py:388" and "no longer makes" not in finding["cause"]
