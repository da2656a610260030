"""Sample targets and drafters to try every example on: what `compat samples DIR` writes.

Only a target's config.json and a drafter's config.json and safetensors header matter to compat (doctor,
convert, explain never run a model), so the tensors are tiny; the names, shapes, dtypes and config fields are
what the real producers write (research checkpoint-formats.md 1.1 and 2.3): a SpecForge drafter has
`midlayer.*` names, no embed_tokens, d2t and t2d, `LlamaForCausalLMEagle3`, model_type llama and output-of
layer ids under eagle_config. The tests' own builders (tests/doctor/doctor_models.py, with numpy) write the
same files; tests/cli/test_cli_samples.py holds the two to the same names, shapes and configs.

Written with the standard library and compat's own safetensors writer: a plain `pip install .` has no numpy.
The values are a fixed pseudo-random draw, so two runs write byte-identical files.
"""

from __future__ import annotations

import array
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HIDDEN = 64
HEADS = 2
HEAD_DIM = 32
INTERMEDIATE = 128
VOCAB = 1024
DRAFT_VOCAB = 256
KIMI_LAYERS = 61


@dataclass(frozen=True)
class Sample:
    name: str  # the folder's name, as the README's examples spell it
    kind: str  # "target" | "drafter"
    about: str  # one line: what it is and what it shows
    write: Callable[[Path], Path]


def write_target(directory: Path, *, model_type: str, architecture: str, layers: int, extra: dict | None = None) -> Path:
    """A target model directory with only its config.json (compat never reads a target's weights)."""
    directory.mkdir(parents=True, exist_ok=True)
    config = {"architectures": [architecture], "model_type": model_type, "num_hidden_layers": layers,
              "hidden_size": HIDDEN, "vocab_size": VOCAB, **(extra or {})}
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def kimi_k2_target(directory: Path) -> Path:
    """Kimi-K2-Instruct's config: model_type kimi_k2, DeepseekV3ForCausalLM, 61 layers, remote-code config."""
    return write_target(directory, model_type="kimi_k2", architecture="DeepseekV3ForCausalLM", layers=KIMI_LAYERS,
                        extra={"auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}})


def kimi_k25_target(directory: Path) -> Path:
    """Kimi-K2.5: a multimodal wrapper whose text_config is the 61-layer Kimi-K2 language model."""
    return write_target(directory, model_type="kimi_k25", architecture="KimiK25ForConditionalGeneration",
                        layers=KIMI_LAYERS, extra={"text_config": {
                            "model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"],
                            "num_hidden_layers": KIMI_LAYERS, "hidden_size": HIDDEN, "vocab_size": VOCAB}})


def llama_layer(prefix: str) -> dict[str, tuple[int, ...]]:
    q = HEADS * HEAD_DIM
    return {
        f"{prefix}input_layernorm.weight": (HIDDEN,),
        f"{prefix}hidden_norm.weight": (HIDDEN,),
        f"{prefix}post_attention_layernorm.weight": (HIDDEN,),
        f"{prefix}self_attn.q_proj.weight": (q, 2 * HIDDEN),
        f"{prefix}self_attn.k_proj.weight": (q, 2 * HIDDEN),
        f"{prefix}self_attn.v_proj.weight": (q, 2 * HIDDEN),
        f"{prefix}self_attn.o_proj.weight": (HIDDEN, q),
        f"{prefix}mlp.gate_proj.weight": (INTERMEDIATE, HIDDEN),
        f"{prefix}mlp.up_proj.weight": (INTERMEDIATE, HIDDEN),
        f"{prefix}mlp.down_proj.weight": (HIDDEN, INTERMEDIATE),
    }


def eagle3_config(architecture: str = "LlamaForCausalLMEagle3", **extra: object) -> dict:
    """An EAGLE-3 head's config.json as the trainers write it (one decoder layer, a draft vocabulary)."""
    return {
        "architectures": [architecture], "model_type": "llama", "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
        "intermediate_size": INTERMEDIATE, "num_hidden_layers": 1, "rms_norm_eps": 1e-6,
        "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "max_position_embeddings": 4096, **extra,
    }


def eagle3_drafter(directory: Path, config: dict, *, prefix: str) -> Path:
    """An EAGLE-3 head: one decoder layer under `prefix`, fc fusing 3 hidden states, the draft lm_head, d2t/t2d."""
    shapes = {**llama_layer(prefix), "fc.weight": (HIDDEN, 3 * HIDDEN), "norm.weight": (HIDDEN,),
              "lm_head.weight": (DRAFT_VOCAB, HIDDEN)}
    return _write_model(directory, config, shapes, maps=True)


def specforge_drafter(directory: Path, *, layer_ids: list[int], prefix: str) -> Path:
    """What SpecForge's train_eagle3.py saves for a Kimi-K2 target: no embed, d2t/t2d, ids under eagle_config."""
    ids = {"eagle_aux_hidden_state_layer_ids": list(layer_ids), "use_aux_hidden_state": True}
    return eagle3_drafter(directory, eagle3_config(eagle_config=ids), prefix=prefix)


def draft_model(directory: Path) -> Path:
    """A small causal LM of the target's family, whole (its own embedding, decoder layers and lm_head): a draft model."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
              "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM,
              "intermediate_size": INTERMEDIATE, "num_hidden_layers": 2, "rms_norm_eps": 1e-5, "vocab_size": VOCAB,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16", "max_position_embeddings": 4096}
    q = HEADS * HEAD_DIM
    shapes = {"model.embed_tokens.weight": (VOCAB, HIDDEN), "model.norm.weight": (HIDDEN,), "lm_head.weight": (VOCAB, HIDDEN)}
    for i in range(2):
        layer = f"model.layers.{i}."
        shapes.update({
            f"{layer}input_layernorm.weight": (HIDDEN,), f"{layer}post_attention_layernorm.weight": (HIDDEN,),
            f"{layer}self_attn.q_proj.weight": (q, HIDDEN), f"{layer}self_attn.k_proj.weight": (q, HIDDEN),
            f"{layer}self_attn.v_proj.weight": (q, HIDDEN), f"{layer}self_attn.o_proj.weight": (HIDDEN, q),
            f"{layer}mlp.gate_proj.weight": (INTERMEDIATE, HIDDEN), f"{layer}mlp.up_proj.weight": (INTERMEDIATE, HIDDEN),
            f"{layer}mlp.down_proj.weight": (HIDDEN, INTERMEDIATE),
        })
    return _write_model(directory, config, shapes, maps=False)


def dflash_drafter(directory: Path) -> Path:
    """What SpecForge writes for Qwen3-8B (configs/qwen3-8b-dflash.json): DFlashDraftModel, output-of ids under
    dflash_config, a block of 16."""
    config = {"architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "dflash.DFlashDraftModel"},
              "block_size": 16, "dflash_config": {"mask_token_id": 1000, "target_layer_ids": [1, 9, 17, 25, 33]},
              "model_type": "qwen3", "num_hidden_layers": 5, "num_target_layers": 36, "hidden_size": HIDDEN,
              "vocab_size": VOCAB}
    shapes = {"fc.weight": (HIDDEN, 5 * HIDDEN), "norm.weight": (HIDDEN,), "layers.0.self_attn.q_proj.weight": (HIDDEN, HIDDEN)}
    return _write_model(directory, config, shapes, maps=False)


def _write_model(directory: Path, config: dict, shapes: dict[str, tuple[int, ...]], *, maps: bool) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    _write_tensors(directory / "model.safetensors", shapes, maps=maps)
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def _write_tensors(path: Path, shapes: dict[str, tuple[int, ...]], *, maps: bool = True) -> None:
    """float32 weights from a fixed draw, and (`maps`) d2t/t2d maps that agree (a draft vocab of DRAFT_VOCAB target ids)."""
    from compat.safetensors_stream import OutputTensor, bytes_source, write_safetensors

    draw = random.Random(0)
    tensors = []
    for name, shape in shapes.items():
        count = 1
        for n in shape:
            count *= n
        tensors.append(("F32", name, shape, _little_endian(array.array("f", (draw.gauss(0, 1) for _ in range(count))))))
    if not maps:
        write_safetensors(path, [OutputTensor(name, bytes_source(dtype, shape, data, name), dtype)
                                 for dtype, name, shape, data in tensors], None)
        return
    used = sorted(draw.sample(range(VOCAB), DRAFT_VOCAB))
    tensors.append(("I64", "d2t", (DRAFT_VOCAB,), _little_endian(array.array("q", (t - d for d, t in enumerate(used))))))
    mask = bytearray(VOCAB)
    for token in used:
        mask[token] = 1
    tensors.append(("BOOL", "t2d", (VOCAB,), bytes(mask)))
    write_safetensors(path, [OutputTensor(name, bytes_source(dtype, shape, data, name), dtype)
                             for dtype, name, shape, data in tensors], None)


def _little_endian(values: array.array) -> bytes:
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


SAMPLES = (
    Sample("Kimi-K2.5", "target", "the seed case's target: a multimodal wrapper around the 61-layer Kimi-K2",
           kimi_k25_target),
    Sample("kimi-k25-eagle3-ft", "drafter", "the seed case's drafter: SpecForge-trained on output-of ids [2, 30, 58], "
           "saved with vLLM's names (layers.0.*), so nothing in it says the convention: doctor asks",
           lambda d: specforge_drafter(d, layer_ids=[2, 30, 58], prefix="layers.0.")),
    Sample("Kimi-K2-Instruct", "target", "Kimi-K2 (model_type kimi_k2, DeepseekV3ForCausalLM, 61 layers)",
           kimi_k2_target),
    Sample("kimi-k2-eagle3", "drafter", "a SpecForge-layout drafter for it (midlayer.*, d2t/t2d, ids [1, 29, 57]: "
           "SpecForge's layout says output-of)", lambda d: specforge_drafter(d, layer_ids=[1, 29, 57], prefix="midlayer.")),
    Sample("kimi-k2-eagle3-final", "drafter", "an EAGLE-3 head for Kimi-K2 fed the last layer's output (id 61, "
           "capture-before ids [2, 30, 61] at the top level)",
           lambda d: eagle3_drafter(d, eagle3_config("Eagle3LlamaForCausalLM", eagle_aux_hidden_state_layer_ids=[2, 30, 61]),
                                    prefix="layers.0.")),
    Sample("Llama-3.3-70B-Instruct", "target", "Llama 3.3 70B (model_type llama, LlamaForCausalLM, 80 layers)",
           lambda d: write_target(d, model_type="llama", architecture="LlamaForCausalLM", layers=80)),
    Sample("Llama-3.3-70B-Instruct-Eagle3", "drafter", "an EAGLE-3 head that records no layer ids, as "
           "nvidia/Llama-3.3-70B-Instruct-Eagle3 (vllm#50170): doctor asks which layers",
           lambda d: eagle3_drafter(d, eagle3_config(), prefix="midlayer.")),
    Sample("Qwen3-8B", "target", "Qwen3-8B (model_type qwen3, Qwen3ForCausalLM, 36 layers)",
           lambda d: write_target(d, model_type="qwen3", architecture="Qwen3ForCausalLM", layers=36)),
    Sample("qwen3-8b-dflash", "drafter", "a DFlash drafter for it as SpecForge writes one (dflash_config, output-of "
           "ids [1, 9, 17, 25, 33], block 16)", dflash_drafter),
    Sample("Llama-3.1-8B-Instruct", "target", "Llama 3.1 8B (model_type llama, LlamaForCausalLM, 32 layers)",
           lambda d: write_target(d, model_type="llama", architecture="LlamaForCausalLM", layers=32)),
    Sample("Llama-3.2-1B-Instruct", "drafter", "a draft model for it: a whole small causal LM of its family "
           "(embedding, 2 decoder layers, lm_head)", draft_model),
)


@dataclass(frozen=True)
class Written:
    sample: Sample
    path: Path
    state: str  # "written" | "unchanged" (the same sample was there already)


def write_samples(root: Path, names: list[str] | None = None) -> list[Written]:
    """Write the samples (or those named) under `root`, all or none.

    Each is written in a staging folder inside `root` first; a folder of the same name already there is kept when
    it holds the same files (an earlier `compat samples`), and otherwise refused before anything is moved: it may be
    a real model of the same name. The staging folder goes whatever happens (an interrupt included).
    """
    import shutil
    import tempfile

    from compat.core.errors import RefusedError

    wanted = [s for s in SAMPLES if names is None or s.name in names]
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".compat-samples-", dir=root))
    try:
        staged = [(sample, sample.write(staging / sample.name)) for sample in wanted]
        states = {}
        for sample, folder in staged:
            target = root / sample.name
            if not target.exists() and not target.is_symlink():
                states[sample.name] = "written"
            elif _same_files(folder, target):
                states[sample.name] = "unchanged"
            else:
                raise RefusedError(f"{target} exists and is not compat's {sample.name} sample (it may be a real model)",
                                   hint=f"write the samples into an empty folder: compat samples {root / 'compat-samples'}")
        for sample, folder in staged:
            if states[sample.name] == "written":
                folder.rename(root / sample.name)
        return [Written(sample, root / sample.name, states[sample.name]) for sample, _ in staged]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _same_files(new: Path, old: Path) -> bool:
    if not old.is_dir() or old.is_symlink():
        return False
    names = sorted(p.name for p in new.iterdir())
    if sorted(p.name for p in old.iterdir()) != names:
        return False
    return all((old / name).is_file() and (old / name).read_bytes() == (new / name).read_bytes() for name in names)
