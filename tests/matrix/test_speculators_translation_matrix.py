"""doctor names every key of a speculators-format drafter that a release's translation drops, with the release that
starts carrying it, on the real translation tables of every vLLM release that has one (algos.py, from 0.10.1); on the
releases before, doctor says the release reads no speculators-format drafter at all.

The drafters are the configs speculators writes, field for field, at the releases that added each key
(vllm-project/speculators, src/speculators/models/eagle3.py or .../eagle3/config.py):
- v0.2.0 eagle3.py:79 `eagle_aux_hidden_state_layer_ids` (PR #142);
- v0.5.0 eagle3/config.py:58 `norm_before_fc` (gpt-oss heads, PR #337);
- v0.7.0 eagle3/config.py:66 `fc_norm` (PR #670) and :76 `norm_output` (Eagle 3.1, PR #610).
What a release carries is read twice: by the `speculators_carried` probe (the updater's assignments, AST) and, here,
independently, by the text of the release's algos.py (`config_dict.get("KEY"` / `config_dict["KEY"]`); the first
release that carries a key is the bisection doctor runs over the cached releases, held to a scan of every one
(vLLM 0.11.1 for the ids, 0.19.0 for norm_before_fc, 0.25.0 for fc_norm and norm_output).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from compat.checks import Ctx, Drafter, Options, get_check
from compat.doctor.inputs import recognise
from compat.doctor.releases import ReleaseFinder
import pinned
from compat.target import Target

pytestmark = [pytest.mark.matrix, pytest.mark.network]

ALGOS = "vllm/transformers_utils/configs/speculators/algos.py"
TRANSLATED_FROM = "0.10.1"  # the first release with ALGOS (test_releases_before_the_translation_read_none holds it)
TRANSLATING, BEFORE = pinned.matrix("vllm", since=TRANSLATED_FROM), pinned.matrix("vllm", before=TRANSLATED_FROM)
HIDDEN, VOCAB = 64, 1024
BY_SPECULATORS = {  # the key each speculators release added, and the value an EAGLE-3 head it trains sets
    "v0.2.0": {"eagle_aux_hidden_state_layer_ids": [2, 16, 29]},
    "v0.5.0": {"norm_before_fc": True},
    "v0.7.0-fc-norm": {"fc_norm": True},
    "v0.7.0-eagle-3.1": {"norm_output": True, "norm_before_fc": True},
}
FIRST = {"eagle_aux_hidden_state_layer_ids": "0.11.1", "norm_before_fc": "0.19.0", "fc_norm": "0.25.0",
         "norm_output": "0.25.0"}


def speculators_config(**keys) -> dict:
    return {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
            "transformer_layer_config": {"model_type": "llama", "hidden_size": HIDDEN, "vocab_size": VOCAB,
                                         "num_hidden_layers": 1, "intermediate_size": 128},
            "draft_vocab_size": 256, "norm_before_residual": False, "target_hidden_size": None,
            "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                   "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                                   "verifier": {"name_or_path": "t", "architectures": ["LlamaForCausalLM"]}},
            **keys}


def carries(version: str, key: str) -> bool:
    """The release's algos.py copies `key` (its text, read apart from the probe)."""
    tree = pinned.fetch("vllm", version)
    if not tree.exists(ALGOS):
        return False
    text = tree.read_bytes(ALGOS).decode()
    return f'config_dict.get("{key}"' in text or f'config_dict["{key}"]' in text


def context(report: dict, config: dict, finder, tensors: dict | None = None) -> Ctx:
    target = Target(Path("/models/target"), Path("/models/target/config.json"), {}, "llama", "llama",
                    ["LlamaForCausalLM"], "LlamaForCausalLM", 32, VOCAB, HIDDEN, None)
    tensors = tensors or {"fc.weight": ("F32", (HIDDEN, 3 * HIDDEN)),
                          "layers.0.self_attn.q_proj.weight": ("F32", (HIDDEN, 2 * HIDDEN))}
    drafter = recognise(Drafter(Path("/models/drafter"), config, tensors), target)
    return Ctx(report, target, drafter, Options(), releases=finder.bound(report["version"]))


@pytest.fixture(scope="module")
def finder(versions_of):
    cached = [v for v in versions_of("vllm") if Version(v) >= Version("0.10.0")]
    return ReleaseFinder("vllm", versions=cached)


@pytest.mark.parametrize("version", BEFORE)
def test_releases_before_the_translation_read_none(report_of, version, finder):
    """No translation table: doctor does not name dropped keys, it says the release has no speculators-format reader."""
    assert not pinned.fetch("vllm", version).exists(ALGOS)
    ctx = context(report_of("vllm", version), speculators_config(**BY_SPECULATORS["v0.7.0-eagle-3.1"]), finder)
    translation, architecture = get_check("drafter-translation")(ctx), get_check("drafter-architecture")(ctx)
    assert translation.verdict == "pass" and "does not translate this config" in translation.detail, translation.detail
    assert architecture.verdict == "fail" and "has no speculators-format reader" in architecture.detail, architecture.detail


@pytest.mark.parametrize("vllm_version", TRANSLATING)
@pytest.mark.parametrize("made_by", sorted(BY_SPECULATORS))
def test_a_dropped_key_is_named_with_the_release_that_carries_it(vllm_report, vllm_version, made_by, finder):
    keys = BY_SPECULATORS[made_by]
    result = get_check("drafter-translation")(context(vllm_report, speculators_config(**keys), finder))
    dropped = [k for k in keys if not carries(vllm_version, k)]
    assert (result.verdict == "fail") is bool(dropped), (made_by, result.detail)
    if not dropped:
        assert result.location and result.location.startswith(ALGOS + ":")
        return
    assert set(result.evidence["dropped"]) == set(dropped)
    for key in dropped:
        assert f"{key} = {keys[key]!r} (carried from {FIRST[key]})" in result.detail, result.detail
        listed = sorted(finder._versions or [], key=Version)
        assert carries(FIRST[key], key) and not carries(listed[listed.index(FIRST[key]) - 1], key)
    assert result.location.startswith(ALGOS + ":") and "update_eagle3" in result.detail
    assert result.release is not None and result.release.first == max((FIRST[k] for k in dropped), key=Version)


# The weights each switch builds in speculators' Eagle3DraftModel (0.9.0 src/speculators/models/eagle3/core.py:122
# input_norm over the concatenated aux states; :131 one fc_norm per aux state), and what a release needs to load them:
# the translation carrying the switch, and (fc_norm) the drafter class building the module.
SWITCHED_WEIGHTS = {"norm_before_fc": {"input_norm.weight": (3 * HIDDEN,)},
                    "fc_norm": {f"fc_norm.{i}.weight": (HIDDEN,) for i in range(3)}}
LLAMA_EAGLE3 = "vllm/model_executor/models/llama_eagle3.py"


def head(extra: dict) -> dict:
    names = ("input_layernorm", "hidden_norm", "post_attention_layernorm")
    shapes = {"fc.weight": (HIDDEN, 3 * HIDDEN), "norm.weight": (HIDDEN,), "lm_head.weight": (256, HIDDEN),
              **{f"layers.0.{n}.weight": (HIDDEN,) for n in names},
              **{f"layers.0.self_attn.{p}_proj.weight": (HIDDEN, 2 * HIDDEN) for p in "qkv"},
              "layers.0.self_attn.o_proj.weight": (HIDDEN, HIDDEN), "layers.0.mlp.gate_proj.weight": (128, HIDDEN),
              "layers.0.mlp.up_proj.weight": (128, HIDDEN), "layers.0.mlp.down_proj.weight": (HIDDEN, 128), **extra}
    return {name: ("F32", shape) for name, shape in shapes.items()} | {"d2t": ("I64", (256,)), "t2d": ("BOOL", (VOCAB,))}


def loads(version: str, switch: str) -> bool:
    """The release loads the switch's weights (read from its text, apart from the probes): it carries the switch, and
    its drafter class builds the module."""
    tree = pinned.fetch("vllm", version)
    built = switch != "fc_norm" or "self.fc_norm = nn.ModuleList" in tree.read_bytes(LLAMA_EAGLE3).decode()
    return carries(version, switch) and built


@pytest.mark.parametrize("vllm_version", TRANSLATING)
@pytest.mark.parametrize("switch", sorted(SWITCHED_WEIGHTS))
def test_a_weight_the_loader_leaves_out_is_named_with_the_release_that_loads_it(vllm_report, vllm_version, switch,
                                                                               finder):
    weights = SWITCHED_WEIGHTS[switch]
    ctx = context(vllm_report, speculators_config(**{switch: True}), finder, head(weights))
    result = get_check("drafter-tensors")(ctx)
    assert (result.verdict == "fail") is not loads(vllm_version, switch), result.detail
    if result.verdict == "pass":
        return
    listed = sorted(finder._versions or [], key=Version)
    first = next(v for v in listed if Version(v) > Version(vllm_version) and loads(v, switch))
    assert first == FIRST[switch]  # what speculators' switch needs arrives once, and stays
    for name in weights:
        assert f"{name} (" in result.detail and result.evidence["loaded_from"][name] == first, result.detail
    assert result.release is not None and result.release.first == first
