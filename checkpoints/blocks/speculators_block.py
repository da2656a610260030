"""vllm-project/speculators' block drafters: speculators_model_type dflash, dflash2, dspark (and peagle).

config.json (src/speculators/models/{dflash,dspark,peagle}/config.py): speculators_model_type, architectures
["DFlashSpeculator" | "DSparkSpeculator" | "PEagleSpeculator"], transformer_layer_config, block_size,
aux_hidden_state_layer_ids (capture-before), mask_token_id, sample_from_anchor (DFlash default false, DSpark true;
absent before speculators#760), draft_vocab_size. vLLM translates it (algos.py update_dflash / update_dspark:
target ids i - 1, vllm#40727).
"""

from __future__ import annotations

from compat.methods import speculators_type

NAME = "speculators-block"
DESCRIPTION = "speculators dflash / dflash2 / dspark / peagle: aux_hidden_state_layer_ids capture-before"
FAMILY = "dflash"  # dspark and peagle too: the family is the speculators_model_type's
TRAINER = "speculators"
SOURCE = "vllm-project/speculators src/speculators/models/dflash/config.py, dspark/config.py, peagle/config.py"
PRIORITY = 50


def detect(config: dict, tensor_names: set[str]) -> bool:
    return speculators_type(config) in ("dflash", "dflash2", "dspark", "peagle")
