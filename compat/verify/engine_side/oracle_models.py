"""Tiny oracle targets and EAGLE-3 drafters, written to disk: safetensors + config.json, no tokenizer.

Runs in the engine's interpreter (torch and safetensors come with every vLLM); compat itself never
imports it. As a script: `python oracle_models.py target FAMILY DIR [SEED]` and
`python oracle_models.py drafter TARGET_DIR DIR KIND [JSON options]` print one JSON manifest line.

The models are built so that what the engine does can be *read off* acceptance:

- Every target is a "permutation bigram": token x is always followed by perm(x), whatever the
  layers add, because the target's lm_head reads only code A of the residual stream (the token's
  own embedding row) and the layers are small. perm keeps the draft vocabulary closed.
- The residual stream has four parts: A (dims 0..63) the token code, S (one channel per target
  layer, 64..71) the layer signatures, B (72..126) a second code only drafters read, and a
  constant channel (127, always 1). The MLP of target layer l writes ~1 into its own signature
  channel S_l and nothing else touches S, so the state *entering* layer k (what both engines call
  aux layer id k, capture-before) has exactly S_0..S_{k-1} set: each layer id has a signature.
- The MLP of layer FLIP_LAYER flips the sign of B (about -2B), leaving A alone.

Drafters (one Llama-style EAGLE-3 layer, lm_head over the draft vocabulary, d2t offsets):
- "oracle": fc copies the last aux state; lm_head row of token y is built from A and the *flipped*
  B of embed(perm^-2(y)), so its first proposal is x_{t+2} (accepted every time) only when it is
  loaded as written (rows, d2t offsets, fc width) and its last aux id is above FLIP_LAYER.
  With ids one too low (output-of ids read as capture-before ids) or vLLM's default ids (2, 4, 5)
  A and B cancel and acceptance collapses.
- "canary": the draft vocabulary is split into classes; the walk of the target never leaves a
  class. Class (slot j, depth k) holds a 3-cycle of tokens and, for each, one or two decoy tokens
  whose lm_head row is the token's own row plus a signature test on aux slot j (layer k-1 ran;
  layer k did not). The drafter proposes the right token only when slot j was fed the state
  entering layer k, so per-class acceptance *measures* which layer each slot got. A control class
  without decoys is accepted whenever d2t is applied as offsets (target id = draft id + d2t).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

VOCAB = 512
DRAFT_VOCAB = 256
HIDDEN = 128
NUM_LAYERS = 8
CODE_NORM = 8.0           # every A and B code has this norm: scores do not depend on the token drawn
A_DIMS = slice(0, 64)
SIG_START = 64            # signature channel of target layer l: SIG_START + l
B_DIMS = slice(SIG_START + NUM_LAYERS, 127)
CONST_DIM = 127
LAYER_WEIGHT_STD = 0.03   # small enough that the layers never change the bigram's argmax
LM_HEAD_SCALE = 0.1
AUX_LAYER_IDS = [1, 3, 6]  # capture-before ids of the oracle drafter; deliberately not the default (2, 4, 5)
FLIP_LAYER = 5
CYCLE = 3                 # tokens per canary class
DECOY_WEIGHT = 3.0        # a decoy beats its token by DECOY_WEIGHT * (signature - 1/2)
SIGNATURE_THRESHOLD = 0.5
FAMILY_ARCH = {"llama": "LlamaForCausalLM", "qwen3": "Qwen3ForCausalLM",
               "deepseek_v3": "DeepseekV3ForCausalLM", "kimi_k2": "DeepseekV3ForCausalLM"}
MANIFEST = "compat-oracle.json"  # beside config.json; the engines ignore it

LLAMA_HEADS, LLAMA_KV_HEADS, LLAMA_HEAD_DIM, INTERMEDIATE = 4, 2, 32, 256
MLA = {"heads": 2, "q_lora_rank": 64, "kv_lora_rank": 512, "rope": 64, "nope": 128, "v": 128}  # CPU MLA: 512 and 64 only


# -- the shared world: embedding, permutation, draft vocabulary, canary classes -----------------

def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _codes(g: torch.Generator, rows: int, width: int) -> torch.Tensor:
    codes = torch.randn(rows, width, generator=g)
    return codes / codes.norm(dim=1, keepdim=True) * CODE_NORM


def _small(g: torch.Generator, *shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=g) * LAYER_WEIGHT_STD


def canary_classes(num_slots: int, num_layers: int = NUM_LAYERS) -> list[dict]:
    """Class (slot, depth): the drafter is right iff aux slot `slot` is the state entering layer `depth`."""
    classes = [{"name": "control", "control": True, "tests": []}]
    for slot in range(num_slots):
        for depth in range(num_layers + 1):
            tests = ([["ran", depth - 1]] if depth >= 1 else []) + ([["not-ran", depth]] if depth < num_layers else [])
            classes.append({"name": f"slot{slot}-depth{depth}", "slot": slot, "depth": depth, "tests": tests})
    return classes


def build_world(seed: int, num_slots: int = 3) -> dict:
    g = _generator(seed)
    embed = torch.zeros(VOCAB, HIDDEN)
    embed[:, A_DIMS] = _codes(g, VOCAB, A_DIMS.stop - A_DIMS.start)
    embed[:, B_DIMS] = _codes(g, VOCAB, B_DIMS.stop - B_DIMS.start)
    embed[:, CONST_DIM] = 1.0
    # ids 0 and 1 (bos, eos) stay out, so every d2t offset is >= 2: a drafter whose d2t is ignored is never right
    draft_vocab = torch.sort(2 + torch.randperm(VOCAB - 2, generator=g)[:DRAFT_VOCAB]).values
    shuffled = draft_vocab[torch.randperm(DRAFT_VOCAB, generator=g)].tolist()
    perm = [-1] * VOCAB
    classes = canary_classes(num_slots)
    needed = sum(CYCLE * (1 + len(c["tests"])) for c in classes)
    if needed > DRAFT_VOCAB:
        raise ValueError(f"{num_slots} aux slots need {needed} draft-vocab tokens; there are {DRAFT_VOCAB}")
    for cls in classes:
        cls["members"] = [shuffled.pop() for _ in range(CYCLE)]
        cls["decoys"] = [{"token": shuffled.pop(), "of": member, "test": test}
                         for member in cls["members"] for test in cls["tests"]]
        for i, member in enumerate(cls["members"]):
            perm[member] = cls["members"][(i + 1) % CYCLE]
    pool = [t for t in draft_vocab.tolist() if perm[t] < 0]  # decoys and leftovers: any permutation
    others = sorted(set(range(VOCAB)) - set(draft_vocab.tolist()))
    for group in (pool, others):
        order = torch.randperm(len(group), generator=g).tolist()
        for src, dst in zip(group, [group[i] for i in order]):
            perm[src] = dst
    return {"seed": seed, "embed": embed, "perm": perm, "draft_vocab": draft_vocab.tolist(), "classes": classes}


def _inverse(perm: list[int], steps: int) -> list[int]:
    inverse = [0] * len(perm)
    for x, y in enumerate(perm):
        inverse[y] = x
    out = list(range(len(perm)))
    for _ in range(steps):
        out = [inverse[x] for x in out]
    return out


# -- targets ------------------------------------------------------------------------------------

def _attention(g: torch.Generator, family: str, prefix: str, in_width: int) -> dict[str, torch.Tensor]:
    a = f"{prefix}.self_attn"
    if family in ("deepseek_v3", "kimi_k2"):
        qk = MLA["nope"] + MLA["rope"]
        return {
            f"{a}.q_a_proj.weight": _small(g, MLA["q_lora_rank"], in_width),
            f"{a}.q_a_layernorm.weight": torch.ones(MLA["q_lora_rank"]),
            f"{a}.q_b_proj.weight": _small(g, MLA["heads"] * qk, MLA["q_lora_rank"]),
            f"{a}.kv_a_proj_with_mqa.weight": _small(g, MLA["kv_lora_rank"] + MLA["rope"], in_width),
            f"{a}.kv_a_layernorm.weight": torch.ones(MLA["kv_lora_rank"]),
            f"{a}.kv_b_proj.weight": _small(g, MLA["heads"] * (MLA["nope"] + MLA["v"]), MLA["kv_lora_rank"]),
            f"{a}.o_proj.weight": _small(g, HIDDEN, MLA["heads"] * MLA["v"]),
        }
    q, kv = LLAMA_HEADS * LLAMA_HEAD_DIM, LLAMA_KV_HEADS * LLAMA_HEAD_DIM
    out = {f"{a}.q_proj.weight": _small(g, q, in_width), f"{a}.k_proj.weight": _small(g, kv, in_width),
           f"{a}.v_proj.weight": _small(g, kv, in_width), f"{a}.o_proj.weight": _small(g, HIDDEN, q)}
    if family == "qwen3":
        out |= {f"{a}.q_norm.weight": torch.ones(LLAMA_HEAD_DIM), f"{a}.k_norm.weight": torch.ones(LLAMA_HEAD_DIM)}
    return out


def _layer(g: torch.Generator, family: str, prefix: str, in_width: int) -> dict[str, torch.Tensor]:
    return {
        **_attention(g, family, prefix, in_width),
        f"{prefix}.mlp.gate_proj.weight": _small(g, INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.up_proj.weight": _small(g, INTERMEDIATE, HIDDEN),
        f"{prefix}.mlp.down_proj.weight": _small(g, HIDDEN, INTERMEDIATE),
        f"{prefix}.input_layernorm.weight": torch.ones(HIDDEN),
        f"{prefix}.post_attention_layernorm.weight": torch.ones(HIDDEN),
    }


def _gated_neuron(tensors: dict, prefix: str, neuron: int, reads: int, writes: int, weight: float) -> None:
    """MLP neuron `neuron` outputs weight * silu(10 * const) * x[reads] into channel `writes` (const ~ 1 after the norm)."""
    gate, up, down = (tensors[f"{prefix}.mlp.{p}_proj.weight"] for p in ("gate", "up", "down"))
    gate[neuron] = 0.0
    gate[neuron, CONST_DIM] = 10.0
    up[neuron] = 0.0
    up[neuron, reads] = 1.0
    down[:, neuron] = 0.0
    down[writes, neuron] = weight


def _target_layer(g: torch.Generator, family: str, layer: int) -> dict[str, torch.Tensor]:
    prefix = f"model.layers.{layer}"
    tensors = _layer(g, family, prefix, HIDDEN)
    exact = list(range(SIG_START, SIG_START + NUM_LAYERS)) + [CONST_DIM]  # channels only the signature neurons write
    tensors[f"{prefix}.self_attn.o_proj.weight"][exact] = 0.0
    tensors[f"{prefix}.mlp.down_proj.weight"][exact] = 0.0
    _gated_neuron(tensors, prefix, 0, CONST_DIM, SIG_START + layer, 0.1)  # ~ 0.1 * 10 * const * const = 1
    if layer == FLIP_LAYER:
        for i, dim in enumerate(range(B_DIMS.start, B_DIMS.stop)):
            _gated_neuron(tensors, prefix, 1 + i, dim, dim, -0.2)  # ~ -2 B
    return tensors


def _common_config() -> dict:
    return {"vocab_size": VOCAB, "hidden_size": HIDDEN, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 0,
            "eos_token_id": 1, "hidden_act": "silu"}


def _llama_attention_config() -> dict:
    return {"num_attention_heads": LLAMA_HEADS, "num_key_value_heads": LLAMA_KV_HEADS,
            "head_dim": LLAMA_HEAD_DIM,  # CPU attention rejects head size 16
            "intermediate_size": INTERMEDIATE}


def target_config(family: str) -> dict:
    config = {"architectures": [FAMILY_ARCH[family]], "model_type": family, **_common_config(),
              "num_hidden_layers": NUM_LAYERS}
    if family in ("deepseek_v3", "kimi_k2"):
        return config | {
            "num_attention_heads": MLA["heads"], "num_key_value_heads": MLA["heads"], "intermediate_size": INTERMEDIATE,
            "q_lora_rank": MLA["q_lora_rank"], "kv_lora_rank": MLA["kv_lora_rank"], "qk_rope_head_dim": MLA["rope"],
            "qk_nope_head_dim": MLA["nope"], "v_head_dim": MLA["v"], "rope_scaling": None,
            # MoE fields present (the config class expects them) but unused: every layer is dense
            "first_k_dense_replace": NUM_LAYERS, "moe_layer_freq": 1, "n_routed_experts": 4, "n_shared_experts": 1,
            "num_experts_per_tok": 2, "moe_intermediate_size": 64, "n_group": 1, "topk_group": 1,
            "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": True, "routed_scaling_factor": 1.0,
        }
    return config | _llama_attention_config() | ({"attention_bias": False} if family == "qwen3" else {})


def _write(path: Path, config: dict, tensors: dict[str, torch.Tensor], manifest: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path / "model.safetensors"), metadata={"format": "pt"})
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if manifest is not None:
        (path / MANIFEST).write_text(json.dumps(manifest) + "\n")
    return path


def write_target(family: str, path: Path, seed: int = 0) -> dict:
    """A random 8-layer target of `family` (llama, qwen3, deepseek_v3, kimi_k2) on the bigram world of `seed`."""
    if family not in FAMILY_ARCH:
        raise ValueError(f"unknown family {family!r}; known: {', '.join(FAMILY_ARCH)}")
    world = build_world(seed)
    g = _generator(seed + 1000)
    embed = world["embed"]
    lm_head = LM_HEAD_SCALE * _a_only(embed[_inverse(world["perm"], 1)])
    tensors = {"model.embed_tokens.weight": embed, "model.norm.weight": torch.ones(HIDDEN), "lm_head.weight": lm_head}
    for layer in range(NUM_LAYERS):
        tensors |= _target_layer(g, family, layer)
    config = target_config(family)
    manifest = {"family": family, "seed": seed, "path": str(path), "config": config, "perm": world["perm"],
                "draft_vocab": world["draft_vocab"], "classes": world["classes"], "num_layers": NUM_LAYERS,
                "hidden_size": HIDDEN, "aux_layer_ids": AUX_LAYER_IDS, "flip_layer": FLIP_LAYER}
    _write(path, config, tensors, manifest)
    return manifest


def _a_only(rows: torch.Tensor) -> torch.Tensor:
    out = torch.zeros_like(rows)
    out[:, A_DIMS] = rows[:, A_DIMS]
    return out


def read_target(path: Path) -> tuple[dict, torch.Tensor]:
    manifest = json.loads((Path(path) / MANIFEST).read_text())
    embed = load_file(str(Path(path) / "model.safetensors"))["model.embed_tokens.weight"]
    return manifest, embed


# -- drafters -----------------------------------------------------------------------------------

def _drafter_config(manifest: dict, num_aux: int, where: str | None, ids: list[int] | None, architecture: str) -> dict:
    config = {"architectures": [architecture], "model_type": "llama", **_common_config(), **_llama_attention_config(),
              "num_hidden_layers": 1, "draft_vocab_size": DRAFT_VOCAB, "target_hidden_size": manifest["hidden_size"]}
    if ids is not None and where in (None, "top-level"):
        config["eagle_aux_hidden_state_layer_ids"] = list(ids)
    elif ids is not None:
        config[where] = {"eagle_aux_hidden_state_layer_ids": list(ids), "use_aux_hidden_state": True}
    return config


def _base_drafter(manifest: dict, layer_prefix: str, num_aux: int, seed: int) -> dict[str, torch.Tensor]:
    draft_vocab = torch.tensor(manifest["draft_vocab"])
    tensors = {"fc.weight": torch.zeros(HIDDEN, num_aux * manifest["hidden_size"]), "norm.weight": torch.ones(HIDDEN),
               # offsets, not ids: target_id = draft_id + d2t[draft_id]
               "d2t": (draft_vocab - torch.arange(DRAFT_VOCAB)).to(torch.int64),
               f"{layer_prefix}.hidden_norm.weight": torch.ones(HIDDEN)}
    tensors |= _layer(_generator(seed), "llama", layer_prefix, 2 * HIDDEN)
    return tensors


def oracle_drafter(manifest: dict, embed: torch.Tensor, path: Path, *, layout: str = "vllm", seed: int = 2) -> Path:
    """The drafter that is right at the first position when the engine feeds it `AUX_LAYER_IDS`, in vLLM's layout
    ("vllm") or SpecForge's ("specforge")."""
    specforge = layout == "specforge"
    prefix = "midlayer" if specforge else "layers.0"
    num_aux = len(manifest["aux_layer_ids"])
    tensors = _base_drafter(manifest, prefix, num_aux, seed)
    tensors["fc.weight"][:, (num_aux - 1) * HIDDEN:] = torch.eye(HIDDEN)
    source = embed[[_inverse(manifest["perm"], 2)[t] for t in manifest["draft_vocab"]]]
    head = torch.zeros(DRAFT_VOCAB, HIDDEN)
    head[:, A_DIMS] = source[:, A_DIMS]
    head[:, B_DIMS] = -source[:, B_DIMS]  # expects B flipped: fed from above FLIP_LAYER
    tensors["lm_head.weight"] = LM_HEAD_SCALE * head
    if not specforge:
        config = _drafter_config(manifest, num_aux, "top-level", manifest["aux_layer_ids"], "Eagle3LlamaForCausalLM")
    else:  # SpecForge: midlayer.*, d2t + t2d, output-of-layer ids (capture-before - 1) only in eagle_config
        t2d = torch.zeros(VOCAB, dtype=torch.bool)
        t2d[manifest["draft_vocab"]] = True
        tensors["t2d"] = t2d
        config = _drafter_config(manifest, num_aux, "eagle_config", [i - 1 for i in manifest["aux_layer_ids"]],
                                 "LlamaForCausalLMEagle3")
    return _write(path, config, tensors)


def canary_drafter(manifest: dict, embed: torch.Tensor, path: Path, *, where: str | None, ids: list[int] | None,
                   num_aux: int, seed: int = 3) -> Path:
    """The drafter whose per-class acceptance says which target layer each aux slot was fed."""
    n, hidden = manifest["num_layers"], manifest["hidden_size"]
    if num_aux * n > CONST_DIM - SIG_START - 1:
        raise ValueError(f"{num_aux} aux slots x {n} layers do not fit the drafter's signature channels")
    tensors = _base_drafter(manifest, "layers.0", num_aux, seed)
    fc = tensors["fc.weight"]
    for slot in range(num_aux):
        base = slot * hidden
        fc[A_DIMS, base + A_DIMS.start:base + A_DIMS.stop] = torch.eye(A_DIMS.stop - A_DIMS.start) / num_aux
        for layer in range(n):
            fc[_reading(slot, layer, n), base + SIG_START + layer] = 1.0
    fc[CONST_DIM, CONST_DIM] = 1.0
    # the drafter's own layer writes only channels nothing reads: its output is fc's, normalised
    used = list(range(0, SIG_START + num_aux * n)) + [CONST_DIM]
    tensors["layers.0.self_attn.o_proj.weight"][used] = 0.0
    tensors["layers.0.mlp.down_proj.weight"][used] = 0.0
    row_of = {t: i for i, t in enumerate(manifest["draft_vocab"])}
    back2 = _inverse(manifest["perm"], 2)
    head = torch.zeros(DRAFT_VOCAB, HIDDEN)

    def token_row(token: int) -> torch.Tensor:
        row = torch.zeros(HIDDEN)
        row[A_DIMS] = LM_HEAD_SCALE * embed[back2[token], A_DIMS]
        return row

    for cls in manifest["classes"]:
        if cls.get("slot") is not None and cls["slot"] >= num_aux:
            continue  # no such slot in this drafter: its class stays without rows
        for member in cls["members"]:
            head[row_of[member]] = token_row(member)
        for decoy in cls["decoys"]:
            row = token_row(decoy["of"])
            kind, layer = decoy["test"]
            sign = 1.0 if kind == "not-ran" else -1.0  # "not-ran" decoys win when the layer ran, and vice versa
            row[_reading(cls["slot"], layer, n)] += sign * DECOY_WEIGHT
            row[CONST_DIM] -= sign * DECOY_WEIGHT * SIGNATURE_THRESHOLD
            head[row_of[decoy["token"]]] = row
    tensors["lm_head.weight"] = head
    return _write(path, _drafter_config(manifest, num_aux, where, ids, "Eagle3LlamaForCausalLM"), tensors)


def _reading(slot: int, layer: int, num_layers: int) -> int:
    """The drafter channel holding layer `layer`'s signature as seen in aux slot `slot`."""
    return SIG_START + slot * num_layers + layer


def class_prompts(manifest: dict, length: int = 6) -> dict[str, list[int]]:
    """One token-id prompt per class: its cycle, repeated, so the walk goes on inside the class."""
    return {c["name"]: [c["members"][i % CYCLE] for i in range(length)] for c in manifest["classes"]}


def walk(manifest: dict, prompt: list[int], length: int) -> list[int]:
    """What the target must generate greedily after `prompt`."""
    token, out = prompt[-1], []
    for _ in range(length):
        token = manifest["perm"][token]
        out.append(token)
    return out


def main(argv: list[str]) -> int:
    kind = argv[1] if len(argv) > 1 else ""
    if kind == "target" and len(argv) in (4, 5):
        manifest = write_target(argv[2], Path(argv[3]), int(argv[4]) if len(argv) == 5 else 0)
    elif kind == "drafter" and len(argv) in (5, 6):
        manifest, embed = read_target(Path(argv[2]))
        options = json.loads(argv[5]) if len(argv) == 6 else {}
        if argv[4] == "canary":
            canary_drafter(manifest, embed, Path(argv[3]), where=options.get("where"), ids=options.get("ids"),
                           num_aux=int(options.get("num_aux", 3)))
        else:
            oracle_drafter(manifest, embed, Path(argv[3]), layout=options.get("layout", "vllm"))
        manifest = {"path": argv[3], "config": json.loads((Path(argv[3]) / "config.json").read_text())}
    else:
        print("usage: oracle_models.py target FAMILY DIR [SEED] | drafter TARGET_DIR DIR oracle|canary [JSON]",
              file=sys.stderr)
        return 2
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
