"""How an HF-style drafter config's declared layer ids are read: the rule the eagle, vllm, mla, modelopt
and nemo layouts share (top-level and `eagle_config` ids, compat's own record, the convention a user or a
trainer fingerprint gives), kept apart from the canonical vocabulary in _canonical.py.
"""

from __future__ import annotations

from ._canonical import (
    CAPTURE_BEFORE, BASIS_LAYOUT, NESTED_IDS, TOP_IDS, ConflictingLayerIds, LayerIds, ReadContext, ambiguous,
    compat_record, declared_ids, ids_from_declared, int_list,
)


def read_declared_ids(config: dict, ctx: ReadContext, *, nested_means: str | None, nested_why: str,
                      top_wins: bool) -> LayerIds:
    """The common reading rule for HF-style configs.

    - `ctx.told` (--layer-ids-convention, or a trainer fingerprint) says how to read the field that is
      present;
    - ids compat wrote (its record) are read back as the record says;
    - both fields present must agree as top = nested + 1 (what `--to eagle` writes for both engines:
      only top capture-before / nested output-of makes them agree);
    - otherwise the convention is unknown: top-level ids are not capture-before by assumption (vLLM
      reads them so, but a trainer or a hand edit may have written output-of ids), and nested ids
      mean `nested_means` (None: this layout cannot tell), else the user must say.
    `top_wins` is kept for the layouts' signature; a lone top-level field needs a convention too.
    """
    top, nested = declared_ids(config)
    if ctx.convention is None and (recorded := recorded_layer_ids(config)) is not None:
        return recorded
    if ctx.convention is not None:
        if nested is not None and not top_wins:
            return ctx.read_as_told(nested, NESTED_IDS)
        if top is not None:
            return ctx.read_as_told(top, TOP_IDS)
        if nested is not None:
            return ctx.read_as_told(nested, NESTED_IDS)
    if top is not None and nested is None:
        raise ambiguous(TOP_IDS, int_list(top, TOP_IDS),
                        "vLLM reads top-level ids as capture-before, but nothing records how the trainer wrote them "
                        "(speculators and TorchSpec --vllm write capture-before; a SpecForge config copied into this "
                        "field holds output-of ids)")
    if top is not None and nested is not None:
        top_ids, nested_ids = int_list(top, TOP_IDS), int_list(nested, NESTED_IDS)
        if top_ids == [i + 1 for i in nested_ids]:
            ids = ids_from_declared(top, CAPTURE_BEFORE, TOP_IDS, f"agrees with {NESTED_IDS} = {nested_ids} read as output-of")
            return ids
        if top_ids == nested_ids:
            raise ambiguous(f"{TOP_IDS} and {NESTED_IDS}", top_ids,
                            "both fields hold the same ids; TorchSpec --vllm writes capture-before ids in both, "
                            "SpecForge reads the nested field as output-of")
        raise ConflictingLayerIds(top_ids, nested_ids)
    if nested is not None:
        if nested_means is None:
            raise ambiguous(NESTED_IDS, nested, nested_why)
        return ids_from_declared(nested, nested_means, NESTED_IDS, nested_why)
    return LayerIds.undeclared("not declared: the engines' default (2, n//2, n-3) capture-before applies")


def recorded_layer_ids(config: dict) -> LayerIds | None:
    """The layers a compat record says the drafter was trained on (the ids compat itself wrote)."""
    rec = compat_record(config) or {}
    ids = (rec.get("layer_ids") or {}).get("capture_before") if isinstance(rec.get("layer_ids"), dict) else None
    if not (isinstance(ids, list) and ids and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)):
        return None
    return LayerIds(list(ids), f"capture-before {ids}, as compat's record of the conversion that wrote it says",
                    basis=BASIS_LAYOUT)
