"""Reading a drafter directory the plain way, for the peers tests: raw tensor bytes from the safetensors
header (any dtype, nothing decoded) and config.json, keyed by canonical name."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from ckpt_builders import HEAD_DIM, HEADS, HIDDEN, INTER, LLAMA_FIELDS, TARGET_LAYERS, VOCAB
from compat.checkpoints import canonical_name


def raw_tensors(directory: Path) -> dict[str, tuple[str, list[int], bytes]]:
    """name -> (dtype, shape, bytes) of every tensor in every .safetensors file of `directory`."""
    out = {}
    for path in sorted(Path(directory).glob("*.safetensors")):
        data = path.read_bytes()
        (size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + size])
        header.pop("__metadata__", None)
        for name, info in header.items():
            start, end = info["data_offsets"]
            out[name] = (info["dtype"], info["shape"], data[8 + size + start:8 + size + end])
    return out


def digests(directory: Path) -> dict[str, str]:
    """canonical name -> sha256 of the tensor's bytes (the names each layout spells differently)."""
    return {canonical_name(name) or name: hashlib.sha256(raw).hexdigest() for name, (_, _, raw) in raw_tensors(directory).items()}


def config(directory: Path) -> dict:
    return json.loads((Path(directory) / "config.json").read_text())


def write_verifier(path: Path, layers: int = TARGET_LAYERS) -> Path:
    """A tiny Llama target that loaders can read: a full config.json and the three tensors speculators
    takes from a verifier (embed_tokens, lm_head, the final norm)."""
    path.mkdir(parents=True)
    fields = {k: v for k, v in LLAMA_FIELDS.items() if k != "num_hidden_layers"}
    (path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", **fields,
                                                  "num_hidden_layers": layers, "torch_dtype": "float16"}))
    rng = np.random.default_rng(7)
    save_file({"model.embed_tokens.weight": rng.standard_normal((VOCAB, HIDDEN)).astype(np.float16),
               "lm_head.weight": rng.standard_normal((VOCAB, HIDDEN)).astype(np.float16),
               "model.norm.weight": np.ones(HIDDEN, np.float16)}, str(path / "model.safetensors"), metadata={"format": "pt"})
    assert (HEADS, HEAD_DIM, INTER) == (4, 16, 128)  # the shapes the loaders build from LLAMA_FIELDS
    return path
