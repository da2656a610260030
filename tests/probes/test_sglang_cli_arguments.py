"""The `cli_arguments` probe (SGLang): every option of `python -m sglang.launch_server`, in each of the three
ways releases declare them (explicit add_argument, annotated dataclass fields, msgspec namespaces)."""

from __future__ import annotations


import pytest

from compat.probes.sglang.cli_arguments import cli_arguments


def by_name(result):
    out = {}
    for a in result["arguments"]:
        out[a["name"]] = a
        for alias in a["aliases"]:
            out[alias] = a
    return out


def test_add_argument_release(release):
    args = by_name(cli_arguments(release("sglang", "0.5.8")))
    assert args["--tp-size"]["name"] == "--tensor-parallel-size" and args["--tp-size"]["value"] == "int"
    assert args["--speculative-algorithm"]["choices"] == ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"]
    assert args["--trust-remote-code"]["value"] == "flag"
    assert "trtllm_mla" in args["--attention-backend"]["choices"]
    assert args["--speculative-draft-model"]["name"] == "--speculative-draft-model-path"


def test_msgspec_namespace_release(release):
    result = cli_arguments(release("sglang", "0.5.23"))
    args = by_name(result)
    assert len(result["arguments"]) > 400  # every namespace, not only the speculative one
    assert args["--port"]["value"] == "int" and args["--port"]["location"].startswith("sglang/srt/arg_groups/")
    assert args["--speculative-eagle-topk"]["value"] == "int"
    assert result["parser"]["underscores_to_dashes"] is False


@pytest.fixture
def release(pinned_release):
    """release(engine, version) -> the real release (a pinned one, fetched once into the user cache)."""
    return pinned_release
