"""What a drafter must be before it is written: every layer whole, shapes that fit its config, vocab
maps that follow the rules (compat/vocab_maps.py), and a match with the --target. Each check raises
RefusedError with the first problem, or fills what the checkpoint implies (and says so in `notes`)."""

from __future__ import annotations

from compat.checkpoints import LLAMA_LAYER0, MLA_LAYER0, REQUIRED_TOP, DrafterConfig, layer_index
from compat.core.errors import RefusedError
from compat.core.output import plural
from compat.target import Target
from compat.vocab_maps import DerivedMap, derive_missing, vocab_map_problems

from .source import SourceTensor


def check_layers(drafter: DrafterConfig, tensors: dict[str, SourceTensor], notes: list[str]) -> None:
    missing_top = [name for name in REQUIRED_TOP if name not in tensors]
    if missing_top:
        raise RefusedError(f"the checkpoint has no {', '.join(missing_top)}: engines would leave "
                           f"{'it' if len(missing_top) == 1 else 'them'} randomly initialised without a word",
                           hint="export the drafter again with every trained tensor (lm_head included)")
    layers = sorted({k for k in map(layer_index, tensors) if k is not None})
    if not layers:
        raise RefusedError("the checkpoint has no decoder layer (no midlayer.* or layers.0.* tensors)")
    if layers != list(range(len(layers))):
        raise RefusedError(f"decoder layers {layers} are not numbered 0..{len(layers) - 1}")
    if drafter.num_hidden_layers != len(layers):
        notes.append(f"num_hidden_layers: config says {drafter.num_hidden_layers}, the checkpoint holds {plural(len(layers), 'layer')}; "
                     f"writing {len(layers)} (a target's layer count here breaks both engines)")
        drafter.num_hidden_layers = len(layers)
    expected = MLA_LAYER0 if drafter.family == "mla" else LLAMA_LAYER0
    for k in layers:
        wanted = [s for s in expected if k == 0 or s != "hidden_norm.weight"]
        missing = [f"layers.{k}.{s}" for s in wanted if f"layers.{k}.{s}" not in tensors]
        if missing:
            raise RefusedError(f"decoder layer {k} lacks {', '.join(missing)}: engines would keep random weights there silently",
                               hint="the export dropped part of the layer; export again")


def _shape(tensors: dict[str, SourceTensor], name: str) -> tuple[int, ...] | None:
    return tensors[name].shape if name in tensors else None


def _required_shape(tensors: dict[str, SourceTensor], name: str) -> tuple[int, ...]:
    """The shape of a REQUIRED_TOP tensor (check_layers refused a checkpoint without one)."""
    return tensors[name].shape


def check_shapes(drafter: DrafterConfig, tensors: dict[str, SourceTensor], notes: list[str]) -> None:
    hidden = drafter.hidden_size
    norm = _required_shape(tensors, "norm.weight")
    if norm != (hidden,):
        raise RefusedError(f"norm.weight has shape {list(norm)}, config.json hidden_size is {hidden}",
                           hint="the config does not belong to these weights")
    lm_head = _required_shape(tensors, "lm_head.weight")
    if len(lm_head) != 2 or lm_head[1] != hidden:
        raise RefusedError(f"lm_head.weight has shape {list(lm_head)}, expected [draft_vocab_size, {hidden}]")
    if drafter.draft_vocab_size is None:
        notes.append(f"draft_vocab_size: absent from config.json, set to lm_head rows ({lm_head[0]})")
        drafter.draft_vocab_size = lm_head[0]
    if lm_head[0] != drafter.draft_vocab_size:
        raise RefusedError(f"lm_head.weight has {lm_head[0]} rows but draft_vocab_size is {drafter.draft_vocab_size}: "
                           "row i of lm_head scores draft token i, so they must be equal",
                           hint="fix draft_vocab_size in config.json, or the export truncated lm_head")
    embed = _shape(tensors, "embed_tokens.weight")
    if embed is not None:
        if drafter.vocab_size is None:
            drafter.vocab_size = embed[0]
        if embed != (drafter.vocab_size, hidden):
            raise RefusedError(f"embed_tokens.weight has shape {list(embed)}, expected [vocab_size {drafter.vocab_size}, hidden {hidden}]")
    fc = _required_shape(tensors, "fc.weight")
    per_aux = drafter.target_hidden_size or hidden
    expected_in = drafter.aux_count * per_aux
    if len(fc) != 2 or fc[0] != hidden or fc[1] != expected_in:
        raise RefusedError(f"fc.weight has shape {list(fc)}, expected [{hidden}, {drafter.aux_count} aux states x "
                           f"{'target_hidden_size' if drafter.target_hidden_size else 'hidden_size'} {per_aux} = {expected_in}]",
                           hint="set target_hidden_size (or the layer-id count) to what the drafter was trained with")


def check_vocab_maps(drafter: DrafterConfig, tensors: dict[str, SourceTensor], notes: list[str], *,
                     identity: bool = False) -> list[DerivedMap]:
    """Refuse the first broken vocab-map rule; return the map to derive when one is missing, and with
    `identity` (a destination that needs both, like SpecForge's loader) the identity pair for a
    full-vocabulary drafter that has neither."""
    d2t, t2d = tensors.get("d2t"), tensors.get("t2d")
    if drafter.vocab_size is None and t2d is not None and len(t2d.shape) == 1:
        drafter.vocab_size = t2d.shape[0]  # t2d spans the target vocabulary
    problems = vocab_map_problems(drafter.draft_vocab_size, drafter.vocab_size, d2t, t2d)
    if problems:
        raise RefusedError(problems[0].message, hint=problems[0].fix)
    derived, derive_notes = derive_missing(drafter.draft_vocab_size, drafter.vocab_size, d2t, t2d)
    if identity and d2t is None and t2d is None:
        derived = identity_maps(drafter)
    notes.extend([d.note for d in derived] + derive_notes)
    return derived


def check_target(drafter: DrafterConfig, tensors: dict[str, SourceTensor], target: Target, notes: list[str]) -> None:
    where = f"--target {target.path}"
    problems = []
    per_aux = drafter.target_hidden_size or drafter.hidden_size
    if target.hidden_size and per_aux != target.hidden_size:
        problems.append(f"the drafter expects target hidden states of width {per_aux} "
                        f"({'target_hidden_size' if drafter.target_hidden_size else 'hidden_size'}), the target's hidden_size is {target.hidden_size}")
    if target.vocab_size:
        if drafter.vocab_size is None:
            drafter.vocab_size = target.vocab_size
            notes.append(f"vocab_size: set to the target's {target.vocab_size}")
        elif drafter.vocab_size != target.vocab_size:
            problems.append(f"the drafter's vocab_size (target vocabulary: embed_tokens rows, t2d length) is {drafter.vocab_size}, "
                            f"the target's is {target.vocab_size}")
    fc = tensors["fc.weight"].shape
    if target.hidden_size and fc[1] != drafter.aux_count * target.hidden_size:
        problems.append(f"fc.weight takes {fc[1]} inputs, the target gives {drafter.aux_count} x {target.hidden_size} = "
                        f"{drafter.aux_count * target.hidden_size}")
    ids, n = drafter.layer_ids.capture_before, target.num_hidden_layers
    if ids and n:
        top = n - 1 if target.family == "deepseek" else n  # Llama-family targets also capture the final pre-norm state (id n)
        bad = [i for i in ids if not 0 <= i <= top]
        if bad:
            problems.append(f"layer ids {bad} (capture-before) are outside the target's {n} layers (0..{top})")
    draft_context = drafter.fields.get("max_position_embeddings")
    if target.max_position_embeddings and isinstance(draft_context, int) and draft_context < target.max_position_embeddings:
        notes.append(f"warning: max_position_embeddings {draft_context} is below the target's {target.max_position_embeddings}: "
                     "SGLang refuses the pair (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1), vLLM before 0.30 limits the context; "
                     "kept as trained")
    if problems:
        raise RefusedError(f"the drafter does not match {where}: " + "; ".join(problems),
                           hint="convert against the target the drafter was trained for")


def identity_maps(drafter: DrafterConfig) -> list[DerivedMap]:
    """d2t all zeros and t2d all true: the maps SpecForge's model starts with for a full vocabulary."""
    vocab = drafter.vocab_size
    if vocab is None or drafter.draft_vocab_size not in (None, vocab):
        return []  # a reduced vocabulary without maps was refused above; an unknown one cannot be sized
    return [DerivedMap("d2t", "I64", (vocab,), bytes(8 * vocab), f"d2t: identity (zeros, {vocab} entries): full vocabulary"),
            DerivedMap("t2d", "BOOL", (vocab,), b"\x01" * vocab, f"t2d: identity (all {vocab} true): full vocabulary")]
