"""What verify reads before the engine runs: the two model directories and the prompts.

Prompts are texts when the target has a tokenizer; otherwise (or with --prompt-ids) token ids
drawn from the drafter's draft vocabulary, which its d2t names (target id = draft id + d2t[draft
id]): a greedy walk that starts there is where the drafter can be right. d2t is read from the
safetensors header and the few bytes of that one tensor (compat's own reader; no numpy).
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from compat.core.errors import RefusedError, UsageError
from compat.safetensors_stream import read_header, read_tensor_bytes

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tiktoken.model", "vocab.json")
DEFAULT_TEXTS = (
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Speculative decoding speeds up inference because",
    "Translate to German: The weather is nice today.\nGerman:",
    "1, 2, 3, 5, 8, 13,",
)
# For methods that draft from the context: text that says something again, as code edits and lists do.
REPEATING_TEXTS = (
    "Repeat the list exactly: apples, pears, plums, cherries, apples, pears, plums, cherries, apples, pears,",
    "x = compute(a, b)\ny = compute(a, b)\nz = compute(a, b)\nw = compute(",
    "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick",
    "1 2 3 4 5 1 2 3 4 5 1 2 3 4 5 1 2",
)
PROMPT_LENGTH = 8  # token-id prompts
MAX_D2T_BYTES = 64 * 1024 * 1024  # a d2t of 8M entries is no drafter; refuse before reading it
INT_FORMATS = {"I64": "q", "I32": "i", "U32": "I", "U64": "Q"}


class ModelReadError(RefusedError):
    """A target or drafter directory is not what verify can run."""


@dataclass(frozen=True)
class ModelDir:
    path: Path
    config: dict
    architecture: str | None
    model_type: str | None
    num_layers: int | None
    vocab_size: int | None
    max_positions: int | None
    has_tokenizer: bool
    special_ids: frozenset[int] = field(default_factory=frozenset)

    def to_json(self) -> dict:
        return {"path": str(self.path), "architecture": self.architecture, "model_type": self.model_type,
                "num_hidden_layers": self.num_layers, "vocab_size": self.vocab_size, "tokenizer": self.has_tokenizer}


def read_model_dir(path: str | Path, role: str) -> ModelDir:
    """The model directory `path` (config.json + weights) as the engine will load it."""
    directory = Path(path).expanduser()
    if directory.name == "config.json" and directory.is_file():
        directory = directory.parent
    if directory.exists() and not directory.is_dir():  # there, but the wrong kind: 4; nothing there: 2
        raise ModelReadError(f"{role} {path}: a file, not a model directory",
                             hint=f"give the {role} model directory (config.json + weights)")
    if not directory.is_dir():
        raise UsageError(f"{role} {path}: no such directory", hint=f"give the {role} model directory (config.json + weights)")
    config_path = directory / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelReadError(f"{config_path}: missing; the engine cannot load the {role} without it") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelReadError(f"{config_path}: not readable JSON ({err})") from None
    if not isinstance(config, dict):
        raise ModelReadError(f"{config_path}: not a JSON object")
    text_config = config.get("text_config")
    text = text_config if isinstance(text_config, dict) else config
    architectures = config.get("architectures") or []
    return ModelDir(
        path=directory.resolve(), config=config,
        architecture=architectures[0] if architectures and isinstance(architectures[0], str) else None,
        model_type=config.get("model_type"), num_layers=_int(text.get("num_hidden_layers")),
        vocab_size=_int(text.get("vocab_size")), max_positions=_int(text.get("max_position_embeddings")),
        has_tokenizer=any((directory / name).is_file() for name in TOKENIZER_FILES),
        special_ids=frozenset(_ids(text, "bos_token_id", "eos_token_id", "pad_token_id")),
    )


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ids(config: dict, *keys: str) -> list[int]:
    out: list[int] = []
    for key in keys:
        value = config.get(key)
        out += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, int) and not isinstance(v, bool)]
    return out


# -- d2t ------------------------------------------------------------------------------------------

def drafter_files(directory: Path) -> list[Path]:
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map") or {}
        except (OSError, json.JSONDecodeError) as err:
            raise ModelReadError(f"{index}: not readable JSON ({err})") from None
        return sorted({directory / name for name in weight_map.values() if isinstance(name, str)})
    return sorted(directory.glob("*.safetensors"))


def read_d2t(directory: Path) -> list[int] | None:
    """The drafter's d2t offsets (None when it ships none), read from its safetensors."""
    for path in drafter_files(directory):
        if not path.is_file():
            raise ModelReadError(f"{path}: named by the index but missing")
        header = read_header(path)
        for name, info in header.tensors.items():
            if name != "d2t" and not name.endswith(".d2t"):
                continue
            if info.dtype not in INT_FORMATS or len(info.shape) != 1:
                raise ModelReadError(f"{path}: tensor {name!r} is {info.dtype} {list(info.shape)}; d2t is a 1-d integer tensor")
            if info.nbytes > MAX_D2T_BYTES:
                raise ModelReadError(f"{path}: tensor {name!r} is {info.nbytes} bytes; no draft vocabulary is that large")
            count = info.shape[0]
            return list(struct.unpack(f"<{count}{INT_FORMATS[info.dtype]}", read_tensor_bytes(info)))
    return None


def draft_vocabulary(d2t: list[int], vocab_size: int | None) -> list[int]:
    """Target ids of the draft vocabulary: draft id i is target id i + d2t[i]."""
    ids = [i + offset for i, offset in enumerate(d2t)]
    bad = [t for t in ids if t < 0 or (vocab_size is not None and t >= vocab_size)]
    if bad:
        raise ModelReadError(f"d2t maps draft ids outside the target vocabulary (e.g. {bad[0]}; vocab_size {vocab_size})",
                             hint="the drafter was built for another target, or its d2t holds ids rather than offsets")
    return ids


def draw_prompt_ids(pool: list[int], count: int, length: int = PROMPT_LENGTH, seed: int = 0) -> list[list[int]]:
    """`count` prompts of `length` ids drawn (with a fixed seed) from `pool`."""
    if not pool:
        raise ModelReadError("no token ids to draw prompts from")
    rng = random.Random(seed)
    return [[rng.choice(pool) for _ in range(length)] for _ in range(count)]


@dataclass(frozen=True)
class PromptPlan:
    kind: str  # "text" | "token-ids"
    prompts: list
    source: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "count": len(self.prompts), "source": self.source}


def plan_prompts(target: ModelDir, drafter: ModelDir | None, *, texts: list[str] | None = None, prompt_ids: bool = False,
                 count: int = 4, repeating: bool = False) -> PromptPlan:
    """The prompts of a run: given texts, the built-in texts (a tokenizer), or token ids drawn from the draft vocabulary
    (a d2t) or the target's. `repeating`: for methods that draft only from the context (n-gram, suffix), each drawn
    id prompt is a segment said three times, the repetition those methods look up."""
    if texts and prompt_ids:
        raise UsageError("give either --prompt texts or --prompt-ids, not both")
    if texts:
        if not target.has_tokenizer:
            raise UsageError(f"--prompt: the target {target.path} has no tokenizer files, so text cannot be encoded",
                             hint="drop --prompt (token-id prompts are drawn from the draft vocabulary)")
        return PromptPlan("text", list(texts), "given with --prompt")
    if target.has_tokenizer and not prompt_ids:
        pool_texts = REPEATING_TEXTS if repeating else DEFAULT_TEXTS
        return PromptPlan("text", [pool_texts[i % len(pool_texts)] for i in range(count)],
                          "built-in texts" + (" that repeat themselves" if repeating else ""))
    d2t = read_d2t(drafter.path) if drafter is not None else None
    if d2t is not None:
        pool = [t for t in draft_vocabulary(d2t, target.vocab_size) if t not in target.special_ids]
        source = f"drawn from the drafter's draft vocabulary ({len(d2t)} ids, its d2t)"
    else:
        if target.vocab_size is None:
            raise ModelReadError(f"{target.path / 'config.json'}: no vocab_size, and no drafter d2t to draw prompt ids from")
        pool = [t for t in range(target.vocab_size) if t not in target.special_ids]
        source = f"drawn from the target vocabulary ({target.vocab_size} ids{'; the drafter has no d2t' if drafter else ''})"
    if repeating:
        segments = draw_prompt_ids(pool, count, length=PROMPT_LENGTH // 2)
        return PromptPlan("token-ids", [segment * 3 for segment in segments], source + ", each a segment said three times")
    return PromptPlan("token-ids", draw_prompt_ids(pool, count), source)


def read_prompts_file(path: str | Path, count: int) -> PromptPlan:
    """`--prompts FILE`: one prompt a line, as vLLM's offline API takes it: {"prompt": "text"} or
    {"prompt_token_ids": [ids]} (one kind per file; blank lines and # comments skipped); the first `count`."""
    file = Path(path).expanduser()
    try:  # nothing there: 2; there but not a file of prompts: 4 (as --server's --prompts)
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"--prompts {path}: no such file") from None
    except IsADirectoryError:
        raise RefusedError(f"--prompts {path}: a directory, not a JSONL file") from None
    except UnicodeDecodeError:
        raise RefusedError(f"--prompts {path}: not UTF-8 text") from None
    except OSError as err:
        raise RefusedError(f"--prompts {path}: cannot read it ({err.strerror})") from None
    prompts: list = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise RefusedError(f"--prompts {path}: line {number} is not JSON ({err.msg})") from None
        ids = item.get("prompt_token_ids") if isinstance(item, dict) else None
        text = item.get("prompt") if isinstance(item, dict) else None
        if isinstance(ids, list) and ids and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            prompts.append(ids)
        elif isinstance(text, str) and text:
            prompts.append(text)
        else:
            raise RefusedError(f"--prompts {path}: line {number} has neither a \"prompt\" text nor \"prompt_token_ids\"",
                             hint='one prompt a line: {"prompt": "..."} or {"prompt_token_ids": [1, 2, 3]}')
    if not prompts:
        raise RefusedError(f"--prompts {path}: no prompts in it")
    if len({isinstance(p, str) for p in prompts}) > 1:
        raise RefusedError(f"--prompts {path}: mixes texts and token ids; one kind per file")
    chosen = [prompts[i % len(prompts)] for i in range(count)]
    return PromptPlan("text" if isinstance(chosen[0], str) else "token-ids", chosen, f"read from {file}")
