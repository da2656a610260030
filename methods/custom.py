"""Methods a plugin adds: vLLM's `custom_class` method (0.22.0-0.33.0, a proposer class named in the config), then
`register_speculative_method(name, config_cls)` from a vLLM general plugin (0.34.0); SGLang's
`SpeculativeAlgorithm.register` (0.5.12 on; `register_speculative_algorithm` in 0.5.4.post2-0.5.7). compat cannot
know what a plugin's method needs: doctor says the name is not built in and where plugins register."""

from __future__ import annotations

from typing import Any, Mapping

from compat.methods import Recognition

FAMILY = "custom"
TITLE = "plugin method"
DESCRIPTION = "a method a plugin registers"
ORDER = 99
TAKES_DRAFTER = True


def recognise(config: Mapping[str, Any], tensors: Mapping[str, Any]) -> Recognition | None:
    return None
