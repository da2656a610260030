"""doctor's release-validation on LMDeploy launch lines (pinned releases, read from their released source): the walk of
the release's own builder and config (the spec_validation fact, probes/lmdeploy/spec_validation.py) with the line's
argparse dests, the parser's defaults where the line says nothing.

What is modelled: LMDeploy needs CUDA and cannot run here, so no preflight: each expectation is read off the source
line cited in the pinned wheel. The lines: InternLM/lmdeploy#3945 (`lmdeploy serve api_server ... --backend pytorch
--speculative-algorithm eagle3 --speculative-draft-model ...`), and the DFlash block size of 0.18.0 (the feature asked
in InternLM/lmdeploy#4530; SGLang's flag of the same name is an alias of its draft-token count, sgl-project/sglang#23553,
which is how a line carried over from SGLang gets it with another algorithm).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compat.checks import Ctx, Drafter, Options, get_check
from compat.checks._release_code import outcome_of
from compat.launch_line import fixed_words, read_line
from compat.report import build_report
from compat.target import read_target

pytestmark = pytest.mark.network

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
         "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 512,
         "max_position_embeddings": 256}
LINE = "lmdeploy serve api_server ROOT/target --backend pytorch --speculative-algorithm {method} " \
       "--speculative-draft-model ROOT/drafter"


def run(pinned_release, root: Path, version: str, line: str):
    return get_check("release-validation")(context(pinned_release, root, version, line))


def context(pinned_release, root: Path, version: str, line: str) -> Ctx:
    for name, config in (("target", LLAMA), ("drafter", {**LLAMA, "num_hidden_layers": 1})):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(config))
    launch = read_line(line.replace("ROOT", str(root)))
    return Ctx(build_report(pinned_release("lmdeploy", version)), read_target(root / "target"),
               Drafter(root / "drafter", {**LLAMA, "num_hidden_layers": 1}, {}), Options(launch=launch))


@pytest.mark.parametrize("version", ["0.11.0", "0.18.0"])
def test_the_line_of_3945_passes(pinned_release, tmp_path, version):
    result = run(pinned_release, tmp_path, version, LINE.format(method="eagle3") + " --speculative-num-draft-tokens 3")
    assert result.verdict == "pass", result.detail
    assert "the release's validation lets the line through" in result.detail


def test_a_block_size_with_another_algorithm_is_refused_and_the_fix_drops_the_option(pinned_release, tmp_path):
    """messages.py:880-881: `if self.method != 'dflash': raise ValueError('dflash_block_size is supported only when
    method="dflash".')`; the option reaches it as the config's dflash_block_size (cli/utils.py:95-101), so the fix
    drops `--speculative-dflash-block-size 8` from the line (a bare flag would still set it)."""
    line = LINE.format(method="eagle3") + " --speculative-dflash-block-size 8 --speculative-num-draft-tokens 3"
    result = run(pinned_release, tmp_path, "0.18.0", line)
    assert result.verdict == "fail" and result.location == "lmdeploy/messages.py:881", result.detail
    assert 'lmdeploy 0.18.0 refuses this line at start-up: ValueError: dflash_block_size is supported only when ' \
           'method="dflash".' in result.detail
    fixed = fixed_words(read_line(line.replace("ROOT", str(tmp_path))), list(result.edits))
    assert "--speculative-dflash-block-size" not in fixed and "8" not in fixed, fixed
    assert fixed[-2:] == ["--speculative-num-draft-tokens", "3"]


def test_a_block_size_below_two_gets_the_value_the_release_takes(pinned_release, tmp_path):
    """messages.py:882-883: `if self.dflash_block_size < 2: raise ValueError(...)`: the fix is the 2 it compares with."""
    result = run(pinned_release, tmp_path, "0.18.0", LINE.format(method="dflash") + " --speculative-dflash-block-size 1")
    assert result.verdict == "fail" and result.location == "lmdeploy/messages.py:883", result.detail
    assert "dflash_block_size must be an integer greater than or equal to 2." in result.detail
    assert {e.option: e.value for e in result.edits} == {"--speculative-dflash-block-size": 2}


def test_a_block_size_without_an_algorithm_is_refused_by_the_cli(pinned_release, tmp_path):
    """cli/utils.py:103-104: the option alone, no speculative algorithm: refused before any config is built."""
    line = "lmdeploy serve api_server ROOT/target --backend pytorch --speculative-dflash-block-size 8"
    result = run(pinned_release, tmp_path, "0.18.0", line)
    assert result.verdict == "fail" and result.location == "lmdeploy/cli/utils.py:104", result.detail
    assert "--speculative-dflash-block-size requires --speculative-algorithm dflash." in result.detail


def test_a_dflash_line_the_engine_takes_cannot_be_told_the_checkpoints_checks_are_not_settled(pinned_release, tmp_path):
    """The config takes block size 16 (messages.py:877-886) and the engine's cache and device checks pass
    (dflash_utils.py:174-191); the checks of the checkpoint's dflash_config (dflash_utils.py:68-158) read the draft's
    config as ModelConfig.from_pretrained builds it, which doctor does not model: "cannot tell", never a pass."""
    result = run(pinned_release, tmp_path, "0.18.0", LINE.format(method="dflash") + " --speculative-dflash-block-size 16")
    assert result.verdict == "warn" and result.undecided, result.detail
    assert "DFlash checkpoint requires a dflash_config dictionary." in result.detail
    assert result.location == "lmdeploy/pytorch/spec_decode/dflash_utils.py:72", result.location


def test_0_10_0_cannot_tell_there_is_no_speculative_config(pinned_release, tmp_path):
    """0.10.0 has no speculative decoding (no add_spec_group, no SpeculativeConfig): nothing of the release's to walk."""
    result = run(pinned_release, tmp_path, "0.10.0", "lmdeploy serve api_server ROOT/target --backend pytorch")
    assert result.verdict == "warn" and "cannot tell" in result.detail


@pytest.mark.parametrize("extra, said, site", [
    # dflash_utils.py:177-182 validate_dflash_cache_config, called by SpecDecodeConfig.from_config (pytorch/config.py:741)
    ("--enable-prefix-caching", "DFlash V1 does not support prefix-cache reuse yet. Disable enable_prefix_caching.",
     "lmdeploy/pytorch/spec_decode/dflash_utils.py:179"),
    ("--quant-policy 8", "DFlash V1 does not support KV-cache quantization yet. Set quant_policy=0.",
     "lmdeploy/pytorch/spec_decode/dflash_utils.py:182"),
    # dflash_utils.py:185-191 validate_dflash_runtime_config (pytorch/config.py:742): the device the CLI passes on
    ("--device ascend", "DFlash V1 requires CUDA because draft context K/V materialization uses CUDA kernels. "
     "Got device_type='ascend'.", "lmdeploy/pytorch/spec_decode/dflash_utils.py:191"),
])
def test_the_engines_dflash_checks_refuse_what_the_line_sets_and_the_fix_drops_it(pinned_release, tmp_path, extra, said,
                                                                                   site):
    """The engine's side, walked: the engine config the CLI builds from the line (cli/serve.py PytorchEngineConfig(...)),
    the cache config ConfigBuilder builds from it, then build_specdecode_config and SpecDecodeConfig.from_config.
    Users carry these options to DFlash lines: z-lab/dflash#52 serves DFlash with `--enable-prefix-caching`, and
    vllm-project/vllm#41559 is DFlash with a quantized KV cache; LMDeploy 0.18.0 refuses both at start-up."""
    line = LINE.format(method="dflash") + " --speculative-dflash-block-size 16 " + extra
    result = run(pinned_release, tmp_path, "0.18.0", line)
    assert result.verdict == "fail" and result.location == site, result.detail
    assert said in result.detail
    fixed = fixed_words(read_line(line.replace("ROOT", str(tmp_path))), list(result.edits))
    assert extra.split()[0] not in fixed and fixed[-2:] == ["--speculative-dflash-block-size", "16"], fixed


@pytest.mark.parametrize("extra, unknown", [
    # dflash_utils.py:164-171, called only in a nested definition (config_builder.py:226-231) the walk does not enter
    ("--dp 2", "not walked (method = 'dflash')"),
    # cli/serve.py:237-247: another backend is replaced by the one autoget_backend picks for the model
    ("--enable-prefix-caching --backend turbomind", "whether the release runs this engine (backend is not 'pytorch'"),
])
def test_what_the_walk_cannot_settle_is_cannot_tell(pinned_release, tmp_path, extra, unknown):
    line = LINE.format(method="dflash").replace(" --backend pytorch", "") + " --speculative-dflash-block-size 16 " + extra
    if "--backend" not in extra:
        line += " --backend pytorch"
    ctx = context(pinned_release, tmp_path, "0.18.0", line)
    result = get_check("release-validation")(ctx)
    assert result.verdict == "warn" and result.undecided, result.detail
    outcome = outcome_of(ctx)
    assert outcome is not None and outcome.refused is None
    assert any(unknown in " ".join(m.unknown) for m in outcome.maybe), [m.unknown for m in outcome.maybe]
