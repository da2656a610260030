"""MTP heads: the multi-token-prediction layers a target ships in its own checkpoint (DeepSeek-V3's NextN, GLM-4.5,
Qwen3-Next/3.5, MiMo, ...), run as the drafter.

vLLM names a model type per family (`deepseek_mtp`, `qwen3_5_mtp`, ...; 0.34.0 has 29), each rewritten to "mtp"
before it runs (speculative.py: `if self.method in get_args(MTPModelTypes) and self.method != "mtp"`). SGLang runs
them as NEXTN, an alias of EAGLE in every release (a ServerArgs rewrite, a registered alias in 0.5.4.post2-0.5.7, a
reserved alias from 0.5.13), and promotes EAGLE/NEXTN to FROZEN_KV_MTP for a Gemma4 assistant draft (0.5.12 on).
LMDeploy registers a proposer per family (deepseek_mtp from 0.11.0, qwen3_5_mtp 0.12.3, hy3_mtp 0.16.0). Those names
and their gates are the engines' (METHOD_NAMES in compat/engines/<name>.py); this file knows the heads. Where the heads sit in the target checkpoint is what `heads()` says.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from compat.core.output import plural
from compat.methods import Recognition, architectures

FAMILY = "mtp"
TITLE = "MTP heads"
DESCRIPTION = "the target's own multi-token-prediction layers as the drafter"
ORDER = 40
ARCHITECTURES = r"MTP|NextN|Gemma4(Unified)?Assistant"  # the registered drafter classes of the family
TAKES_DRAFTER = False  # the heads ship in the target (a separate NextN export can be given)
TARGET_NEEDS = "MTP layers in the target checkpoint (num_nextn_predict_layers / mtp_num_hidden_layers > 0, their tensors present)"
KEYS_READ = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "architectures (MTP, NextN, Gemma4Assistant)",
             "model_type (*_mtp)")
_COUNT_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    archs = [a for a in architectures(config) if re.search(r"MTP|NextN|Gemma4(Unified)?Assistant", a)]
    if archs:
        return Recognition(FAMILY, "target-checkpoint", f"architectures {archs}")
    model_type = config.get("model_type")
    if isinstance(model_type, str) and model_type.endswith("_mtp"):
        return Recognition(FAMILY, "target-checkpoint", f"model_type {model_type!r}")
    for key in _COUNT_KEYS:
        count = _int(config, key)
        if count:
            return Recognition(FAMILY, "target-checkpoint", f"{key} = {count} ({heads(config, tensors)})")
    return None


def _int(config: Mapping[str, Any], key: str) -> int:
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else {}
    for holder in (config, text):
        value = holder.get(key) if isinstance(holder, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def heads(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> str:
    """Which layer or module of the target checkpoint holds the MTP heads, in words (and whether they are there)."""
    layers = _int(config, "num_hidden_layers")
    count = _int(config, "num_nextn_predict_layers") or _int(config, "mtp_num_hidden_layers")
    names = list(tensors)
    for prefix, words in ((r"(model\.)?mtp_layers\.", "model.mtp_layers.* (MiMo)"), (r"(model\.)?mtp\.", "mtp.* (Qwen3-Next / Qwen3.5)")):
        found = [n for n in names if re.match(prefix, n)]
        if found:
            return f"{words}: {plural(len(found), 'tensor')}"
    if layers and count:
        first = layers
        spans = [f"model.layers.{i}" for i in range(first, first + count)]
        present = [s for s in spans if any(n.startswith(s + ".") for n in names)]
        where = ", ".join(spans)
        if not names:
            return f"{where} (DeepSeek-style: enorm, hnorm, eh_proj, shared_head; the tensors were not read)"
        return f"{where} (DeepSeek-style: enorm, hnorm, eh_proj, shared_head): " + (
            "present" if len(present) == len(spans) else f"missing {sorted(set(spans) - set(present))}")
    return "no MTP layer declared"
