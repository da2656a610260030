"""An assert without a message that fails inside a config's pydantic validation: pydantic says `Assertion failed, `
with nothing after and shows none of the validator's frames (vLLM's configs are pydantic dataclasses). explain names
the release's asserts without a message in the model pydantic names: the one, as the site; several, each with the
condition it checks, none presented as the site.

The block is pydantic's own (the installed pydantic renders it from a model of the same name); the sites are the
release's (vLLM 0.11.0: SpeculativeConfig has two asserts without a message, ModelConfig one), and the frame is the
line of the release's arg_utils.py that builds the config, as in a real `vllm serve` traceback."""

from __future__ import annotations

import traceback

import pytest
from pydantic.dataclasses import dataclass

from compat.explain import explain, sites_of
from compat.explain.text import from_text

ARG_UTILS = "vllm/engine/arg_utils.py"


@pytest.fixture(scope="module")
def vllm_011(pinned_release):
    return pinned_release("vllm", "0.11.0")


def _pydantic_block(model: str) -> str:
    """What pydantic prints for a failed bare assert in the validation of a model of this name."""

    def post_init(self) -> None:
        if self.method == "ngram":  # what `assert self.method != "ngram"` raises (pytest would rewrite the assert)
            raise AssertionError

    config = dataclass(type(model, (), {"__annotations__": {"method": str}, "method": "x", "__post_init__": post_init}))
    with pytest.raises(Exception, match=f"^1 validation error for {model}\n  Assertion failed") as caught:
        config(method="ngram")
    return "".join(traceback.format_exception_only(caught.value))


def _log(tree, model: str) -> str:
    """A traceback ending at the release's line that builds the config, then pydantic's block."""
    lines = tree.text(ARG_UTILS).splitlines()
    number = next(i for i, text in enumerate(lines, 1) if f"return {model}(" in text)
    return ("Traceback (most recent call last):\n"
            f'  File "/opt/venv/lib/python3.12/site-packages/{ARG_UTILS}", line {number}, in create_config\n'
            f"    {lines[number - 1].strip()}\n" + _pydantic_block(model))


def _bare_asserts(tree, model: str) -> list[str]:
    _, index = sites_of(tree)
    return [s.location for s in index.sites
            if s.kind == "assert" and not s.template and (s.function or "").partition(".")[0] == model]


def test_pydantic_s_block_is_its_own(vllm_011):
    block = _pydantic_block("SpeculativeConfig")
    assert "1 validation error for SpeculativeConfig" in block and "Assertion failed, " in block


def test_several_bare_asserts_are_each_named_and_none_is_the_site(vllm_011):
    expected = _bare_asserts(vllm_011, "SpeculativeConfig")
    assert len(expected) == 2  # the premise: vLLM 0.11.0's SpeculativeConfig.__post_init__, ngram's two lookups
    (finding,) = explain(from_text(_log(vllm_011, "SpeculativeConfig")), vllm_011).findings
    assert [c["site"] for c in finding["could_be"]] == expected
    assert finding["site"].startswith(ARG_UTILS)  # where the traceback ends, not one of the candidates
    assert all("prompt_lookup" in c["checks"] and c["checks"].startswith("SpeculativeConfig.") for c in finding["could_be"])
    assert "SpeculativeConfig's 2 asserts without a message" in finding["cause"]
    for location in expected:  # each candidate is an assert of the release, at its line
        relpath, _, line = location.rpartition(":")
        assert vllm_011.text(relpath).splitlines()[int(line) - 1].strip().startswith("assert ")


def test_the_only_bare_assert_is_the_site(vllm_011):
    (expected,) = _bare_asserts(vllm_011, "ModelConfig")
    (finding,) = explain(from_text(_log(vllm_011, "ModelConfig")), vllm_011).findings
    assert finding["site"] == expected and finding["located_by"] == "pydantic message" and not finding["could_be"]
    assert finding["cause"].startswith("raised by ModelConfig.")


def test_an_assert_with_a_message_is_not_guessed_among_the_bare_ones(vllm_011):
    """The control: pydantic's block with a message of the engine's names that assert, not the bare ones."""
    text = _log(vllm_011, "SpeculativeConfig").replace("Assertion failed,  [", "Assertion failed, target_model_config must be present for mtp [")
    (finding,) = explain(from_text(text), vllm_011).findings
    assert finding["site"].startswith("vllm/config/speculative.py:") and not finding["could_be"]
    assert finding["located_by"] == "pydantic message"
