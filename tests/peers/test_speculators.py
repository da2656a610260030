"""speculators 0.9.0 itself judges compat's speculators layout, and compat reads what speculators writes.

- `speculators convert` (its own CLI, in the peers venv) turns a SpecForge-style drafter into the
  speculators format; compat reads that output (convert, doctor) with every tensor byte unchanged;
- compat's `--to speculators` output loads with speculators' own `SpeculatorModelConfig.from_pretrained`
  (its pydantic schema validates the config) and `SpeculatorModel.from_pretrained`, and the loaded
  fc / lm_head / d2t / t2d equal the source's bytes;
- the two converters agree on the same input: the same tensors byte for byte, the same config as
  speculators parses it;
- a trip from speculators' output through every other layout compat writes and back gives the same
  config.json and the same bytes.
"""

from __future__ import annotations

import json
import os

import pytest

from ckpt_builders import TRAINED_ON, write_drafter
from peer_venv import compat, peers_venv, run_in_peers
from peer_files import config, digests, write_verifier

pytestmark = [pytest.mark.peers]

THROUGH = ("eagle", "vllm", "modelopt", "nemo", "specforge")


@pytest.fixture(scope="module")
def work(tmp_path_factory, peers_python):
    root = tmp_path_factory.mktemp("speculators")
    target = write_verifier(root / "target")
    source = write_drafter(root / "specforge-trained", "eagle")  # midlayer.*, nested output-of ids = TRAINED_ON - 1
    cli = peers_venv() / "bin" / "speculators"
    import subprocess

    done = subprocess.run([str(cli), "convert", str(source), "--algorithm", "eagle3", "--verifier", str(target),
                           "--output-path", str(root / "by-speculators"),
                           # speculators ignores the input's eagle_config; its ids are vLLM's capture-before ones
                           "--algorithm-kwargs", json.dumps({"eagle_aux_hidden_state_layer_ids": TRAINED_ON})],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    made = compat("convert", "ckpt", str(source), str(root / "by-compat"), "--to", "speculators", "--target", str(target))
    assert made.returncode == 0, made.stderr
    backs = []
    for layout in THROUGH:
        hop = compat("convert", "ckpt", str(root / "by-speculators"), str(root / f"hop-{layout}"), "--to", layout, "-qq")
        assert hop.returncode == 0, (layout, hop.stderr)
        back = compat("convert", "ckpt", str(root / f"hop-{layout}"), str(root / f"back-{layout}"), "--to", "speculators", "-qq")
        assert back.returncode == 0, (layout, back.stderr)
        backs.append(str(root / f"back-{layout}"))
    loaded = run_in_peers(peers_python, "speculators_load.py", str(root / "by-compat"), str(root / "by-speculators"), *backs)
    return root, target, source, loaded


def test_compat_output_loads_in_speculators_with_the_source_tensors(work):
    root, _, source, loaded = work
    mine = loaded[str(root / "by-compat")]
    assert "error" not in mine, mine
    assert (mine["config_class"], mine["model_class"]) == ("Eagle3SpeculatorConfig", "Eagle3DraftModel")
    assert mine["config"]["eagle_aux_hidden_state_layer_ids"] == TRAINED_ON  # SpecForge's output-of ids + 1
    want = digests(source)
    for name in ("fc.weight", "lm_head.weight", "d2t", "t2d", "embed_tokens.weight", "layers.0.self_attn.q_proj.weight"):
        assert mine["tensors"][name][2] == want[name], name


def test_the_two_converters_agree(work):
    root, _, _, loaded = work
    assert digests(root / "by-compat") == digests(root / "by-speculators")
    mine, theirs = loaded[str(root / "by-compat")], loaded[str(root / "by-speculators")]
    # auto_map names the config.py speculators copies beside its output (for AutoConfig with remote code);
    # compat writes no code, and speculators' own loader does not need it (it loaded both)
    theirs_config = dict(theirs["config"])
    assert theirs_config.pop("auto_map") == {"": "config.Eagle3SpeculatorConfig"} and "auto_map" not in mine["config"]
    assert mine["config"] == theirs_config
    # the decoder-layer config as speculators parses it; the version stamps differ by construction
    stamps = {"transformers_version", "_name_or_path"}
    assert {k: v for k, v in mine["layer"].items() if k not in stamps} == {k: v for k, v in theirs["layer"].items() if k not in stamps}


def test_speculators_output_is_read_by_compat_convert(work, tmp_path):
    root, target, _, _ = work
    done = compat("convert", "ckpt", str(root / "by-speculators"), str(tmp_path / "vllm"), "--to", "vllm", "--target", str(target))
    assert done.returncode == 0, done.stderr
    assert "[speculators, safetensors]" in done.stdout
    assert digests(tmp_path / "vllm") == digests(root / "by-speculators")
    assert config(tmp_path / "vllm")["eagle_aux_hidden_state_layer_ids"] == TRAINED_ON


@pytest.mark.network
def test_speculators_output_needs_no_conversion_on_vllm_0_32(work):
    """The false alarm of issue 22: vLLM reads speculators configs itself (SpeculatorsConfig, from 0.10.1)."""
    root, target, _, _ = work
    done = compat("doctor", str(target), str(root / "by-speculators"), "--engine", "vllm==0.32.0", "--json")
    report = json.loads(done.stdout)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["drafter-architecture"]["verdict"] == "pass", checks["drafter-architecture"]
    assert "reads the speculators config Eagle3Speculator itself, as Eagle3LlamaForCausalLM" in checks["drafter-architecture"]["detail"]
    assert checks["layer-ids"]["verdict"] == "pass" and checks["drafter-tensors"]["verdict"] == "pass"
    assert done.returncode == 0 and "convert" not in json.dumps(report.get("fixes"))
    sglang = json.loads(compat("doctor", str(target), str(root / "by-speculators"), "--engine", "sglang==0.5.14", "--json").stdout)
    refused = {c["check"]: c for c in sglang["checks"]}["drafter-architecture"]
    assert refused["verdict"] == "fail" and "no code under sglang/srt reads speculators_model_type" in refused["detail"]


@pytest.mark.parametrize("layout", THROUGH)
def test_a_trip_through_another_layout_and_back_keeps_every_byte_and_field(work, layout):
    root, _, _, loaded = work
    start, back = root / "by-speculators", root / f"back-{layout}"
    kept = digests(start)
    if layout == "modelopt":
        # ModelOpt's form has no embedding (its _check_valid_sd refuses the key; engines share the target's):
        # the one tensor that trip cannot keep, and speculators' loader takes it from the verifier again
        assert "embed_tokens.weight" not in digests(root / "hop-modelopt")
        del kept["embed_tokens.weight"]
    assert digests(back) == kept
    assert config(back) == config(start)
    assert "error" not in loaded[str(back)]
    assert loaded[str(back)]["config"] == loaded[str(start)]["config"]
