"""The spec_validation probe on LMDeploy (pinned releases, read from their released source): the CLI's builder of the
speculative config (`get_speculative_config(args)`, lmdeploy/cli/utils.py) and `SpeculativeConfig`'s fields and
`__post_init__` (lmdeploy/messages.py), in the form doctor's evaluator walks (compat/guards/), evaluated here with
the values a launch line gives by its argparse dests.

What is modelled: LMDeploy needs CUDA and does not run here, so each expectation is read off the source line cited
(the pinned wheel's file:line). The engine's side (ConfigBuilder.build_specdecode_config, the DFlash validators) is not
walked yet; the fact lists its raises under `unwalked`, each with the methods whose path reaches it, and the walk
counts them as raises that may happen on those methods' lines.
"""

from __future__ import annotations

import pytest

from compat.guards.run import Given, evaluate
from compat.guards.values import Unknown
from compat.probes.lmdeploy.spec_validation import spec_validation

pytestmark = pytest.mark.network

# the parser's defaults of `lmdeploy serve api_server` 0.18.0 (lmdeploy/cli/utils.py:835-856 add_spec_group)
DEFAULTS = {"speculative_algorithm": None, "speculative_draft_model": None, "speculative_num_draft_tokens": 1,
            "speculative_dflash_block_size": None, "backend": "pytorch"}


def walk(fact: dict, **line) -> object:
    return evaluate(fact, Given({**DEFAULTS, **line}, {}, "/models/target"))


def test_0_10_0_has_no_speculative_config_to_read(pinned_release):
    fact = spec_validation(pinned_release("lmdeploy", "0.10.0"))
    assert fact["present"] is False and "0.11.0" in fact["reason"]


@pytest.mark.parametrize("version, builder, config", [
    ("0.11.0", "lmdeploy/cli/utils.py:102", "lmdeploy/messages.py:604"),
    ("0.17.0", "lmdeploy/cli/utils.py:91", "lmdeploy/messages.py:822"),
    ("0.18.0", "lmdeploy/cli/utils.py:91", "lmdeploy/messages.py:861"),
])
def test_the_builder_and_the_config_are_read_with_file_and_line(pinned_release, version, builder, config):
    fact = spec_validation(pinned_release("lmdeploy", version))
    assert fact["present"] and fact["entry"] == "get_speculative_config" and fact["location"] == builder
    args, spec = fact["classes"][0], fact["classes"][1]
    assert args["fields"]["speculative_num_draft_tokens"]["default"] == 1  # the parser's default
    assert args["fields"]["speculative_algorithm"]["option"] == "--speculative-algorithm"
    assert f"{spec['file']}:{spec['line']}" == config and spec["fields"]["method"]["required"] is True
    # 0.18.0 passes the block size on as the config's dflash_block_size, through a local of the same name
    feeds = args["fields"].get("speculative_dflash_block_size", {}).get("feeds")
    assert feeds == (["dflash_block_size"] if version == "0.18.0" else None)
    assert bool(spec["construction"]) == (version == "0.18.0")  # __post_init__ arrives with DFlash


def test_a_line_the_release_takes_passes(pinned_release):
    """InternLM/lmdeploy#3945's line: `--speculative-algorithm eagle3 --speculative-draft-model ...`, no raise on the way
    (cli/utils.py:96-102 builds the config; messages.py:877 checks only dflash_block_size, None here)."""
    outcome = walk(spec_validation(pinned_release("lmdeploy", "0.18.0")), speculative_algorithm="eagle3",
                   speculative_draft_model="/models/drafter", speculative_num_draft_tokens=3)
    assert outcome.verdict == "passes" and outcome.result.get("num_speculative_tokens") == 3


def test_the_block_size_without_an_algorithm_is_refused_by_the_cli(pinned_release):
    """cli/utils.py:103-104: `elif dflash_block_size is not None: raise ValueError('--speculative-dflash-block-size
    requires --speculative-algorithm dflash.')` (SGLang documents the same flag as an alias of its draft-token count,
    sgl-project/sglang#23553: a line carried over from SGLang meets it)."""
    outcome = walk(spec_validation(pinned_release("lmdeploy", "0.18.0")), speculative_dflash_block_size=8)
    assert outcome.refused is not None
    site = outcome.refused.site
    assert site.location == "lmdeploy/cli/utils.py:104" and site.message.startswith("--speculative-dflash-block-size requires")


@pytest.mark.parametrize("line, message, site", [
    ({"speculative_algorithm": "eagle3", "speculative_dflash_block_size": 8},
     'dflash_block_size is supported only when method="dflash".', "lmdeploy/messages.py:881"),
    ({"speculative_algorithm": "dflash", "speculative_dflash_block_size": 1},
     "dflash_block_size must be an integer greater than or equal to 2.", "lmdeploy/messages.py:883"),
])
def test_the_config_refuses_a_block_size_it_cannot_use(pinned_release, line, message, site):
    outcome = walk(spec_validation(pinned_release("lmdeploy", "0.18.0")), **line)
    assert outcome.refused is not None and outcome.refused.site.message == message
    assert outcome.refused.site.location == site


def test_the_block_size_sets_the_draft_token_count_and_the_checkpoints_checks_stay_unknown(pinned_release):
    """messages.py:886: `self.num_speculative_tokens = self.dflash_block_size - 1` (the option overrides the count).
    What the engine then checks for DFlash on the checkpoint (pytorch/config.py:764 parse_dflash_config) reads the
    draft's config as ModelConfig.from_pretrained builds it (not modelled), and dp/ep (a nested definition): each of
    those raises may happen."""
    outcome = walk(spec_validation(pinned_release("lmdeploy", "0.18.0")), speculative_algorithm="dflash",
                   speculative_dflash_block_size=16, speculative_num_draft_tokens=3)
    assert outcome.refused is None and outcome.result.get("num_speculative_tokens") == 15
    assert outcome.verdict == "unknown"
    sites = {m.site.location: m for m in outcome.maybe}
    # the checkpoint's dflash_config: the draft's model config is built by ModelConfig.from_pretrained, not modelled
    assert sites["lmdeploy/pytorch/spec_decode/dflash_utils.py:72"].site.message == \
        "DFlash checkpoint requires a dflash_config dictionary."
    # the distribution check, in the nested definition the walk does not enter
    assert "not walked" in sites["lmdeploy/pytorch/spec_decode/dflash_utils.py:169"].unknown[-1]


def test_a_release_before_dflash_has_no_such_check(pinned_release):
    """0.17.0's builder does not read the block size (cli/utils.py:91-101): the walk passes (its parser refuses the
    unknown option, which the launch-arguments check says)."""
    outcome = walk(spec_validation(pinned_release("lmdeploy", "0.17.0")), speculative_algorithm="eagle3",
                   speculative_dflash_block_size=8)
    assert outcome.verdict == "passes"


def test_a_value_the_line_does_not_settle_is_unknown_never_a_guess(pinned_release):
    """A block size the line leaves to the environment (`--speculative-dflash-block-size $BLOCK`): whether
    messages.py:880-883 raise depends on it, so the walk says so (the raise at messages.py:883 may happen), never a pass."""
    outcome = walk(spec_validation(pinned_release("lmdeploy", "0.18.0")), speculative_algorithm="dflash",
                   speculative_dflash_block_size=Unknown("$BLOCK"))
    assert outcome.verdict == "unknown" and outcome.refused is None
    assert outcome.maybe[0].site.location == "lmdeploy/messages.py:883"  # first; the engine's DFlash checks follow
    assert outcome.maybe[0].unknown[-1] == "self.dflash_block_size < 2"  # what could not be told, as the code says it


def test_the_engine_side_not_walked_is_named_with_the_methods_that_reach_it(pinned_release):
    """Each raise the walk does not reach, with the methods on whose path it sits, read from the `if`s around it and its
    callers: the DFlash distribution check is called in a nested definition under `elif speculative_config.method ==
    'dflash'` (pytorch/engine/config_builder.py:226-231), which the walk does not enter; the proposer registry raises
    for a method it lacks (spec_decode/proposers/base.py:223-228). What the walk reads (the cache check,
    dflash_utils.py:174) is not listed."""
    fact = spec_validation(pinned_release("lmdeploy", "0.18.0"))
    by_site = {entry["location"]: entry for entry in fact["unwalked"]}
    assert by_site["lmdeploy/pytorch/spec_decode/dflash_utils.py:169"]["values"] == ["dflash"]  # via a nested def
    assert "lmdeploy/pytorch/spec_decode/dflash_utils.py:179" not in by_site
    registry = by_site["lmdeploy/pytorch/spec_decode/proposers/base.py:228"]
    assert "values" not in registry and "dflash" in registry["except"] and "eagle3" in registry["except"]
    assert all("values" in e or "except" in e for e in fact["unwalked"])  # none on every method's path


@pytest.mark.parametrize("version, engine", [("0.11.0", False), ("0.12.0", True), ("0.18.0", True)])
def test_the_engine_stage_is_read_where_the_release_has_its_config_builder(pinned_release, version, engine):
    """ConfigBuilder (pytorch/engine/config_builder.py) arrives in 0.12.0; the CLI builds PytorchEngineConfig from the
    line under `if backend == 'pytorch':` (cli/serve.py)."""
    fact = spec_validation(pinned_release("lmdeploy", version))
    assert ("engine" in fact) == engine
    if engine:
        stage = fact["engine"]
        assert stage["function"] == "ConfigBuilder.build_specdecode_config"
        assert stage["from_args"]["enable_prefix_caching"] == "enable_prefix_caching"
        assert stage["when"]["setting"] == "backend" and stage["when"]["equals"] == "pytorch"
        assert stage["when"]["location"].startswith("lmdeploy/cli/serve.py:")


def test_the_engine_refuses_prefix_caching_for_dflash(pinned_release):
    """dflash_utils.py:177-179, called from SpecDecodeConfig.from_config (pytorch/config.py:741) on a dflash line:
    `if getattr(cache_config, 'enable_prefix_caching', False): raise ValueError(...)`; the cache config is the one
    ConfigBuilder.build_cache_config builds from the engine config the CLI builds from `--enable-prefix-caching`."""
    fact = spec_validation(pinned_release("lmdeploy", "0.18.0"))
    outcome = walk(fact, speculative_algorithm="dflash", speculative_dflash_block_size=16, enable_prefix_caching=True,
                   quant_policy=0, device="cuda")
    assert outcome.refused is not None and outcome.refused.site.location == "lmdeploy/pytorch/spec_decode/dflash_utils.py:179"
    assert outcome.refused.site.message.startswith("DFlash V1 does not support prefix-cache reuse yet.")
    # the same line on another backend: the release picks the engine from the model, so it may raise there
    other = walk(fact, speculative_algorithm="dflash", speculative_dflash_block_size=16, enable_prefix_caching=True,
                 quant_policy=0, device="cuda", backend="turbomind")
    assert other.refused is None and "lmdeploy/pytorch/spec_decode/dflash_utils.py:179" in {m.site.location for m in other.maybe}


def test_a_method_no_engine_check_is_on_passes_on_every_release(pinned_release):
    """0.11.0-0.17.0 have no raise on the engine's side but the registry's, which the parser's choices keep a CLI
    line from: an eagle3 line passes."""
    for version in ("0.11.0", "0.17.0"):
        outcome = walk(spec_validation(pinned_release("lmdeploy", version)), speculative_algorithm="eagle3",
                       speculative_draft_model="/models/drafter")
        assert outcome.verdict == "passes", (version, [m.site for m in outcome.maybe])
