"""Every drafter tensor, under the name it has: does this release's loader take it?

A tensor the loader does not know is a load error (vLLM's AutoWeightsLoader) or is skipped without a
word (SGLang, vLLM's MLA drafter before AutoWeightsLoader); a layer tensor a release does not load
stays at random init. Either way acceptance collapses with no error, so both fail the check.
"""

from __future__ import annotations

from packaging.version import Version

from compat.checkpoints import LLAMA_LAYER0, MLA_LAYER0, REQUIRED_TOP, layer_index
from compat.checkpoints import sglang as sglang_layout
from compat.checkpoints import vllm as vllm_layout
from compat.checks import check
from compat.checks.vocab_maps import full_vocab
from compat.checks.drafter_architecture import resolved_architecture
from compat.doctor.context import FAIL, PASS, result

# Loader facts no probe reports yet (research sglang-eagle3.md 3.2, vllm-eagle3.md 4.2).
SGLANG_ACCEPTS_MODEL_PREFIX = Version("0.4.9")  # LlamaForCausalLMEagle3.load_weights tries name, then model.name
VLLM_UNKNOWN_NAMES_RAISE_MLA = Version("0.25.0")  # deepseek_eagle3 skips unknown names silently before AutoWeightsLoader


@check("drafter-tensors", "the release's loader takes every drafter tensor under its name", order=40, fixes=("convert",))
def drafter_tensors(ctx) -> dict:
    d = ctx.drafter
    if d.layout is None:
        return result(FAIL, d.read_error or "unknown drafter layout", None)
    load_errors, skipped, notes, canonical, loaded = [], [], [], set(), set()
    mla = "q_a_proj" in " ".join(d.tensors) or (d.architecture or "").startswith("Eagle3Deepseek")
    unknown_skipped = ctx.engine == "sglang" or (mla and ctx.at_least(VLLM_UNKNOWN_NAMES_RAISE_MLA) is False)
    for name in sorted(d.tensors):
        c = d.layout.to_canonical(name)
        if c is None:
            (skipped if unknown_skipped else load_errors).append(f"{name} (no such parameter)")
            continue
        canonical.add(c)
        problem = loader_problem(ctx, name, c)
        if problem is None:
            loaded.add(c)
        else:
            kind, text = problem
            (load_errors if kind == "error" else skipped).append(f"{name} ({text})")
    layer0 = MLA_LAYER0 if mla else LLAMA_LAYER0
    random = [n for n in [*(f"layers.0.{t}" for t in layer0), *REQUIRED_TOP] if n not in loaded]
    if "embed_tokens.weight" not in canonical:
        notes.append("no embed_tokens: the target's embedding is shared")
    if "t2d" in canonical:
        notes.append("t2d is not loaded by either engine (d2t is what they use)")
    parts = [f"{label}: " + ", ".join(items[:6]) + (" ..." if len(items) > 6 else "")
             for label, items in (("loading fails on", load_errors), ("skipped silently", skipped),
                                  ("left at random init (missing)", random)) if items]
    location = ctx.drafter_location(resolved_architecture(ctx))
    if parts:
        return result(FAIL, "; ".join(parts), location, skipped=skipped, random=random, load_errors=load_errors)
    return result(PASS, f"{len(d.tensors)} tensors ({d.layout.NAME} layout) all load" + (f"; {'; '.join(notes)}" if notes else ""),
                  location)


def loader_problem(ctx, name: str, canonical: str) -> tuple[str, str] | None:
    """("error" | "skip", why) when this release's loader does not take `name` as `canonical`."""
    prefixed = name.startswith("model.") and not name.startswith("model.lm_head")
    layer = layer_index(canonical)
    if ctx.engine == "vllm":
        if prefixed:
            return "error", "vLLM prefixes model. itself: model.model.* does not exist"
        if canonical == "d2t" and full_vocab(ctx.drafter) and ctx.at_least(vllm_layout.FULL_VOCAB_REJECTS_D2T):
            return "error", f"draft vocab == target vocab: vLLM >= {vllm_layout.FULL_VOCAB_REJECTS_D2T} has no draft_id_to_target_id"
        if layer and ctx.at_least(vllm_layout.MULTI_LAYER) is False:
            return "skip", f"vLLM before {vllm_layout.MULTI_LAYER} builds one drafter layer"
        return None
    if prefixed and ctx.at_least(SGLANG_ACCEPTS_MODEL_PREFIX) is False:
        return "skip", f"SGLang before {SGLANG_ACCEPTS_MODEL_PREFIX} loads model.* as model.model.*"
    bare = name[len("model."):] if prefixed else name
    if bare.startswith("layers.0.") and ctx.at_least(sglang_layout.LOADS_LAYERS_0) is False:
        return "skip", f"SGLang before {sglang_layout.LOADS_LAYERS_0} loads the first layer only as midlayer.*"
    if layer and ctx.at_least(sglang_layout.MULTI_LAYER) is False:
        return "skip", f"SGLang before {sglang_layout.MULTI_LAYER} builds one drafter layer"
    return None
