"""Round trips between every pair of layouts: tensors byte-identical, configs as each engine expects."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from safetensors import safe_open

from compat.cli import main as compat_main
from ckpt_builders import DRAFT_VOCAB, TRAINED_ON, VOCAB

LLAMA_LAYOUTS = ["eagle", "vllm", "sglang", "speculators"]
MLA_LAYOUTS = ["mla", "vllm", "sglang"]
MLA_SGLANG = "0.5.16"  # a release with the MLA drafter and the conditional DeepSeek offset


def tensor_bytes(directory: Path) -> dict[str, bytes]:
    """Every tensor's raw bytes by canonical name, read through the safetensors library."""
    out = {}
    for path in sorted(directory.glob("*.safetensors")):
        with safe_open(str(path), "np") as f:
            for name in f.keys():
                out[name] = f.get_tensor(name).tobytes()
    return out


def canonical(name: str) -> str:
    return "layers.0." + name[len("midlayer."):] if name.startswith("midlayer.") else name


def canonical_bytes(directory: Path) -> dict[str, bytes]:
    return {canonical(n): b for n, b in tensor_bytes(directory).items()}


def run(*args) -> int:
    return compat_main(["convert", "ckpt", *(str(a) for a in args)])


def make_source(layout: str, family: str, drafter, tmp_path: Path, target: Path) -> Path:
    native = "mla" if family == "mla" else "eagle"
    if layout in ("eagle", "speculators", "mla") or (layout == "vllm" and family == "llama"):
        return drafter(layout)
    # SGLang native drafters exist only as conversions (the trainers' layout plus a release rule);
    # the fixtures hold MLA drafters in their trainer layout only
    out = tmp_path / f"{layout}-source-{family}"
    version = ["--engine-version", MLA_SGLANG] if family == "mla" and layout == "sglang" else []
    assert run(drafter(native), out, "--to", layout, "--target", target, *version) == 0
    return out


def expect_config(config: dict, layout: str, family: str) -> None:
    """What each destination must say so its engine loads the drafter and feeds it layers TRAINED_ON."""
    nested = (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    top = config.get("eagle_aux_hidden_state_layer_ids")
    mla = family == "mla"
    if layout == "vllm":
        assert config["architectures"] == ["Eagle3DeepseekV2ForCausalLM" if mla else "Eagle3LlamaForCausalLM"]
        assert top == TRAINED_ON and nested is None
    elif layout == "sglang":
        assert config["architectures"] == ["Eagle3DeepseekV2ForCausalLM" if mla else "LlamaForCausalLMEagle3"]
        # Llama target: +1 on every release; DeepSeek target on >= 0.5.13: first id 3 != 1, so no offset
        assert nested == (TRAINED_ON if mla else [i - 1 for i in TRAINED_ON]) and top is None
        assert config["tie_word_embeddings"] is False and "norm_before_residual" not in config
    elif layout in ("eagle", "mla"):
        assert config["architectures"] == ["Eagle3DeepseekV2ForCausalLM" if mla else "LlamaForCausalLMEagle3"]
        assert top == TRAINED_ON and nested == [i - 1 for i in TRAINED_ON]
    elif layout == "speculators":
        assert config["speculators_model_type"] == "eagle3" and config["architectures"] == ["Eagle3Speculator"]
        assert config["transformer_layer_config"]["vocab_size"] == VOCAB and top == TRAINED_ON
        assert config["norm_before_residual"] is False and config["speculators_config"]["verifier"]["name_or_path"]
    if layout != "speculators":
        assert config["model_type"] == ("kimi_k2" if mla else "llama")
        assert config["vocab_size"] == VOCAB and config["num_hidden_layers"] == 1
    assert config["draft_vocab_size"] == DRAFT_VOCAB


def expect_names(names: set[str], layout: str) -> None:
    if layout in ("eagle", "sglang"):
        assert "midlayer.mlp.up_proj.weight" in names and not any(n.startswith("layers.") for n in names)
    else:
        assert "layers.0.mlp.up_proj.weight" in names and not any(n.startswith("midlayer.") for n in names)
    assert not any(n.startswith("model.") for n in names)


PAIRS = [("llama", a, b) for a, b in itertools.permutations(LLAMA_LAYOUTS, 2)] + \
        [("mla", a, b) for a, b in itertools.permutations(MLA_LAYOUTS, 2)]


@pytest.mark.parametrize("family, source_layout, dest_layout", [
    pytest.param(*pair, id=f"{pair[0]}:{pair[1]}->{pair[2]}",
                 marks=[pytest.mark.network] if pair[0] == "mla" and "sglang" in pair[1:] else [])  # names a release
    for pair in PAIRS])
def test_round_trip(tmp_path, drafter, llama_target, deepseek_target, family, source_layout, dest_layout):
    target = deepseek_target if family == "mla" else llama_target
    version = ["--engine-version", MLA_SGLANG] if family == "mla" else []
    src = make_source(source_layout, family, drafter, tmp_path, target)
    original = tensor_bytes(src)

    there, back = tmp_path / "there", tmp_path / "back"
    # a hand-made vLLM-layout drafter's top-level ids say nothing of their convention: these were capture-before
    told = ["--layer-ids-convention", "capture-before"] if source_layout == "vllm" and family == "llama" else []
    assert run(src, there, "--to", dest_layout, "--target", target, *told, *(version if dest_layout == "sglang" else [])) == 0
    expect_config(json.loads((there / "config.json").read_text()), dest_layout, family)
    expect_names(set(tensor_bytes(there)), dest_layout)
    assert canonical_bytes(there) == {canonical(n): b for n, b in original.items()}  # byte-identical, renamed only

    assert run(there, back, "--to", source_layout, "--target", target, *(version if source_layout == "sglang" else [])) == 0
    assert tensor_bytes(back) == original  # same names, same bytes
    expect_config(json.loads((back / "config.json").read_text()), source_layout, family)
    record = json.loads((back / "compat_convert.json").read_text())
    assert record["layer_ids"]["capture_before"] == TRAINED_ON and record["source"]["layout"] == dest_layout


@pytest.mark.parametrize("dest", ["eagle", "speculators"])
def test_mla_drafter_refused_by_llama_only_layouts(tmp_path, drafter, deepseek_target, dest, capsys):
    src = drafter("mla")
    assert run(src, tmp_path / "out", "--to", dest, "--target", deepseek_target) == 4
    assert "MLA" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_llama_drafter_refused_by_mla_layout(tmp_path, drafter, llama_target, capsys):
    assert run(drafter("eagle"), tmp_path / "out", "--to", "mla", "--target", llama_target) == 4
    assert "Llama-style" in capsys.readouterr().err


def test_sharded_output_and_sharded_input(tmp_path, drafter, llama_target):
    src = drafter("eagle")
    sharded = tmp_path / "sharded"
    assert run(src, sharded, "--to", "vllm", "--max-shard-size", "40KB") == 0
    index = json.loads((sharded / "model.safetensors.index.json").read_text())
    files = sorted(p.name for p in sharded.glob("*.safetensors"))
    assert len(files) > 2 and set(index["weight_map"].values()) == set(files)
    assert canonical_bytes(sharded) == canonical_bytes(src)
    merged = tmp_path / "merged"
    assert run(sharded, merged, "--to", "eagle", "--target", llama_target) == 0
    assert [p.name for p in merged.glob("*.safetensors")] == ["model.safetensors"]
    assert tensor_bytes(merged) == tensor_bytes(src)


def test_pytorch_bin_source(tmp_path, llama_target, torch):
    from ckpt_builders import canonical_tensors, eagle_config

    src = tmp_path / "bin-src"
    src.mkdir()
    tensors = {("midlayer." + k[9:] if k.startswith("layers.0.") else k): torch.from_numpy(v.copy())
               for k, v in canonical_tensors().items()}
    tensors["lm_head.weight"] = tensors["lm_head.weight"].to(torch.bfloat16)  # a dtype numpy cannot hold
    torch.save(tensors, src / "pytorch_model.bin")
    (src / "config.json").write_text(json.dumps(eagle_config()))
    out = tmp_path / "out"
    assert run(src, out, "--to", "vllm", "--target", llama_target) == 0
    got = tensor_bytes_raw(out)
    for name, tensor in tensors.items():
        flat = tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        assert got[canonical(name)] == flat


def tensor_bytes_raw(directory: Path) -> dict[str, bytes]:
    """Raw bytes straight from the file (the safetensors numpy API cannot read bf16)."""
    from compat.safetensors_stream import read_header, read_tensor_bytes

    return {n: read_tensor_bytes(i) for n, i in read_header(directory / "model.safetensors").tensors.items()}


def test_dtype_cast_only_floats(tmp_path, drafter, llama_target):
    src = drafter("eagle")
    out = tmp_path / "out"
    assert run(src, out, "--to", "vllm", "--dtype", "bfloat16", "--target", llama_target) == 0
    from compat.safetensors_stream import read_header

    dtypes = {n: t.dtype for n, t in read_header(out / "model.safetensors").tensors.items()}
    assert dtypes["fc.weight"] == "BF16" and dtypes["d2t"] == "I64" and dtypes["t2d"] == "BOOL"
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "bfloat16"
