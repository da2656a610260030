"""Tiny models for the real-engine tests, written by the product's builder
(compat/verify/engine_side/oracle_models.py, what `compat verify --canary` uses) in the engine
venv's interpreter: this process needs neither torch nor numpy.

The models are built so that acceptance is a measurement (see oracle_models.py):
- every target is a permutation bigram: the greedy continuation of x is perm(x) whatever the layers
  add, and perm keeps the draft vocabulary closed;
- the "oracle" drafter is right at its first draft position (x_{t+2}) only when the engine loads it as
  written and feeds it the target layers it declares (AUX_LAYER_IDS, capture-before): its last id
  must be above FLIP_LAYER, where the target flips the sign of a code only the drafter reads. With
  the ids one too low (SpecForge's output-of ids read as capture-before ids) or vLLM's default ids
  (2, 4, 5), acceptance collapses.
"""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

BUILDER = Path(__file__).resolve().parents[2] / "compat" / "verify" / "engine_side" / "oracle_models.py"


@dataclass
class TinyTarget:
    """A target written to `path`, with what a test needs to know about it."""

    path: Path
    config: dict
    perm: list[int]          # greedy next token of x is perm[x]
    draft_vocab: list[int]   # sorted target ids in the draft vocabulary
    aux_layer_ids: list[int]

    def walk(self, prompt: list[int], length: int) -> list[int]:
        """The greedy continuation of `prompt`: `length` steps of perm from its last token."""
        token, out = prompt[-1], []
        for _ in range(length):
            token = int(self.perm[token])
            out.append(token)
        return out

    def prompts(self, count: int, length: int, seed: int = 7) -> list[list[int]]:
        """Token-id prompts made of draft-vocab tokens (so the greedy walk stays in it)."""
        rng = random.Random(seed)
        return [[rng.choice(self.draft_vocab) for _ in range(length)] for _ in range(count)]


class TinyModels:
    """The builder, run by the engine venv's python."""

    def __init__(self, python: Path):
        self.python = python

    def _build(self, *args: str) -> dict:
        proc = subprocess.run([str(self.python), str(BUILDER), *args], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"the model builder failed:\n{proc.stdout}\n{proc.stderr}"
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def _target(self, family: str, path: Path) -> TinyTarget:
        m = self._build("target", family, str(path))
        return TinyTarget(Path(m["path"]), m["config"], m["perm"], m["draft_vocab"], m["aux_layer_ids"])

    def write_llama_target(self, path: Path) -> TinyTarget:
        """A random 8-layer Llama, head_dim 32, vocab 512."""
        return self._target("llama", path)

    def write_kimi_k2_target(self, path: Path) -> TinyTarget:
        """A `kimi_k2` DeepSeek-V3 MLA target: 8 dense layers (first_k_dense_replace = all)."""
        return self._target("kimi_k2", path)

    def write_eagle3_drafter_vllm(self, path: Path, target: TinyTarget) -> Path:
        """The oracle drafter as vLLM loads it natively: `layers.0.*`, d2t only, top-level capture-before ids."""
        self._build("drafter", str(target.path), str(path), "oracle", json.dumps({"layout": "vllm"}))
        return path

    def write_eagle3_drafter_specforge(self, path: Path, target: TinyTarget) -> Path:
        """The same drafter (same weights) in SpecForge's layout: `midlayer.*`, d2t + t2d, no embedding, and
        the ids only in `eagle_config`, as output-of-layer ids (vLLM capture-before - 1)."""
        self._build("drafter", str(target.path), str(path), "oracle", json.dumps({"layout": "specforge"}))
        return path


METHOD_BUILDER = BUILDER.with_name("method_models.py")


def write_draft_model(python: Path, path: Path, target: TinyTarget, vocab: int | None = None) -> Path:
    """The target's first two layers as a draft model (every draft accepted); `vocab`: cut to another vocabulary."""
    args = [str(python), str(METHOD_BUILDER), "draft_model", str(target.path), str(path)] + ([str(vocab)] if vocab else [])
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the model builder failed:\n{proc.stdout}\n{proc.stderr}"
    return path


def write_dflash_drafter(python: Path, path: Path, target: TinyTarget) -> Path:
    """A z-lab layout DFlash drafter with a random layer (it drafts; its drafts are not built to be right)."""
    proc = subprocess.run([str(python), str(METHOD_BUILDER), "dflash", str(target.path), str(path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the model builder failed:\n{proc.stdout}\n{proc.stderr}"
    return path
