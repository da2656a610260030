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


def test_the_releases_own_actions(release):
    """Deprecated options: refused by their Action when typed (0.5.3 `raise ValueError(self.help)`, 0.5.18
    `parser.error(self.error_message)`), or still a flag (DeprecatedStoreTrueAction's nargs=0), or a value where the
    call gives nargs=None; computed choices kept as code."""
    old = by_name(cli_arguments(release("sglang", "0.5.3")))
    assert old["--enable-ep-moe"]["value"] == "flag"
    assert old["--enable-ep-moe"]["refused"]["message"].startswith("ValueError: NOTE: --enable-ep-moe is deprecated.")
    assert old["--enable-ep-moe"]["refused"]["location"].startswith("sglang/srt/server_args.py:")
    mid = by_name(cli_arguments(release("sglang", "0.5.18")))
    assert mid["--enable-expert-distribution-metrics"]["refused"]["message"].startswith(
        "--enable-expert-distribution-metrics is no longer supported.")
    new = by_name(cli_arguments(release("sglang", "0.5.23")))
    assert new["--disable-cuda-graph"]["value"] == "flag" and "refused" not in new["--disable-cuda-graph"]
    assert new["--monokernel-backend"]["value"] == "str" and new["--monokernel-backend"]["choices"] == ["amd"]
    assert "choices" not in new["--reasoning-parser"] and "reasoning_parser_choices" in new["--reasoning-parser"]["choices_from"]


@pytest.fixture
def release(pinned_release):
    """release(engine, version) -> the real release (a pinned one, fetched once into the user cache)."""
    return pinned_release
