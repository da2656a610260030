"""What the EAGLE-3 target patches share: when a fix counts as there, the protocol check, the loop rewrite.

A target patch teaches a model to hand the drafter the hidden states entering some decoder
layers (vLLM's `SupportsEagle3`, SGLang's `set_eagle3_layers_to_capture`). Engines and models
differ in names and shapes, which each patch keeps in plain sight; these rules do not, and
live here so that every patch applies them the same way.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from . import FileNotAsExpected

VLLM_MODELS_DIR = "vllm/model_executor/models"


def fix_present(role: str, facts: dict[str, bool], what: str) -> bool:
    """True when the file has every part of the fix, False when it has none; refused when it has some.

    A file with some parts was edited by hand or half patched: adding the rest could write a
    part twice, so the patch refuses and says which parts (`facts`' keys) it has and lacks.
    """
    if all(facts.values()):
        return True
    if any(facts.values()):
        have = ", ".join(k for k, v in facts.items() if v)
        lack = ", ".join(k for k, v in facts.items() if not v)
        raise FileNotAsExpected(role, f"has part of the {what} ({have}) but not the rest ({lack})")
    return False


def require_vllm_protocol(tree, interface: str) -> None:
    """FileNotFoundError unless the release defines `interface`: before 0.10.1 there is nothing to implement."""
    if not tree.grep_re(rf"class {interface}\b", under=VLLM_MODELS_DIR):
        raise FileNotFoundError(f"this release has no {interface} protocol in {VLLM_MODELS_DIR}/interfaces.py")


def enumerate_from_start_layer(loop: cst.For, capture: Sequence[cst.BaseStatement]) -> cst.For:
    """`for layer in <layers>:` -> `for idx, layer in enumerate(<layers>, start=self.start_layer):`, `capture` first.

    The loop runs over this pipeline stage's slice of `self.layers`, while the drafter asks for
    layers by their id in the whole model: `start=self.start_layer` makes `idx` that id.
    """
    iterable = cst.Call(
        func=cst.Name("enumerate"),
        args=[
            cst.Arg(loop.iter, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(cst.parse_expression("self.start_layer"), keyword=cst.Name("start"),
                    equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))),
        ],
    )
    target = cst.Tuple([cst.Element(cst.Name("idx")), cst.Element(cst.Name("layer"))], lpar=[], rpar=[])
    body = loop.body.with_changes(body=[*capture, *loop.body.body])
    return loop.with_changes(target=target, iter=iterable, body=body)
