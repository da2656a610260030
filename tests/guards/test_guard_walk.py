"""The guard reader walks a release's validation with a line's values (compat/guards/): a small vLLM-shaped tree
(tests/spec_sources.py) read by the spec_validation probe, then walked. What is known decides; what is not is
"cannot tell", never a pass."""

from __future__ import annotations

import pytest

import spec_sources as src
from compat.guards.run import Given, evaluate


@pytest.fixture(scope="module")
def fact(tmp_path_factory):
    return src.spec_validation_fact(tmp_path_factory.mktemp("tree"))


def walk(fact, spec, *, settings=None, drafter=src.DRAFTER, platform="cuda"):
    models = {"/m/target": src.LLAMA, "/m/eagle3-drafter": drafter, "/m/small": {**src.LLAMA, "num_hidden_layers": 2}}
    return evaluate(fact, Given(settings or {}, models, "/m/target", spec, platform), extra_keys="forbid")


def test_a_line_the_code_takes_passes(fact):
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter", "num_speculative_tokens": 3})
    assert out.verdict == "passes", (out.refused, out.maybe)
    assert out.result.get("draft_tensor_parallel_size") == 1  # the target's, as _verify_tp returns it


def test_a_field_left_out_is_refused_where_the_code_raises(fact):
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter"})
    assert out.verdict == "refused"
    site = out.refused.site
    assert site.message == "A speculative model was provided, but `num_speculative_tokens` was not provided"
    assert site.location == f"vllm/config/speculative.py:{_line('was not provided')}"
    assert "self.num_speculative_tokens is None" in out.refused.guard
    assert "num_speculative_tokens" in out.refused.reads


def test_the_drafters_n_predict_fills_what_the_line_leaves_out(fact):
    out = walk(fact, {"model": "/m/eagle3-drafter"}, drafter={**src.DRAFTER, "n_predict": 2})
    assert out.verdict == "passes" and out.result.get("num_speculative_tokens") == 2
    assert out.result.get("method") == "eagle3"  # named after the drafter's path, as the code does


def test_two_options_that_must_agree(fact):
    out = walk(fact, {"method": "ngram", "prompt_lookup_min": 5, "prompt_lookup_max": 2, "num_speculative_tokens": 3})
    assert out.refused.site.message == "prompt_lookup_min=5 must be <= prompt_lookup_max=2"
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter", "num_speculative_tokens": 3,
                      "draft_tensor_parallel_size": 2})
    assert out.refused.site.message == "size=2 cannot be other value than 1 or target model tensor_parallel_size"
    assert out.refused.site.function == "SpeculativeConfig._verify_tp"
    assert "draft_tensor_parallel_size" in out.refused.reads  # handed down by the caller
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter", "num_speculative_tokens": 3,
                      "draft_tensor_parallel_size": 2}, settings={"tensor_parallel_size": 2})
    assert out.verdict == "passes"


def test_a_default_the_line_omits_comes_from_the_dataclass(fact):
    out = walk(fact, {"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 3})
    assert out.refused.site.message == "prompt_lookup_min=5 must be <= prompt_lookup_max=4"  # min defaulted to 5


def test_an_alias_is_renamed_before_the_checks(fact):
    out = walk(fact, {"method": "deepseek_mtp", "model": "/m/small", "num_speculative_tokens": 1})
    assert out.verdict == "passes" and out.result.get("method") == "mtp"


def test_what_the_code_cannot_tell_is_never_a_pass(fact):
    out = walk(fact, {"method": "suffix", "num_speculative_tokens": 3})
    assert out.verdict == "unknown" and out.refused is None
    assert out.maybe[0].site.exception == "ImportError" and "has_arctic_inference(...)" in out.maybe[0].unknown


def test_a_bound_and_an_unknown_key_are_pydantics(fact):
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter", "num_speculative_tokens": 0})
    assert out.verdict == "refused" and "Input should be greater than 0" in out.refused.site.message
    assert out.refused.site.location.startswith("vllm/engine/arg_utils.py:")  # where it is built, as pydantic raises
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter", "num_speculative_tokens": 3, "methd": "x"})
    assert out.verdict == "refused" and "methd: Unexpected keyword argument" in out.refused.site.message


def test_the_builder_refuses_a_key_given_twice(fact):
    out = walk(fact, {"method": "eagle3", "model": "/m/eagle3-drafter", "num_speculative_tokens": 3},
               settings={"spec_tokens": 2})
    assert "mutually exclusive" in out.refused.site.message and out.refused.site.function == \
        "EngineArgs.create_speculative_config"
    out = walk(fact, None, settings={"spec_tokens": 2})
    assert out.verdict == "passes" and out.result.get("num_speculative_tokens") == 2  # the shortcut alone builds it
    assert walk(fact, None).result is None  # no speculative config: nothing built, nothing refused


def _line(marker: str) -> int:
    import textwrap

    lines = textwrap.dedent(src.SPECULATIVE).splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)  # the file starts with the snippet's newline
