"""vLLM: DeepSeek-V2/V3 (and Kimi-K2, whose architecture is DeepseekV3ForCausalLM) as EAGLE-3 targets.

Before 0.18.0 `DeepseekV2ForCausalLM` does not implement `SupportsEagle3`, so once the
whitelist admits the target the runner stops with "Model does not support EAGLE3 interface
but aux_hidden_state_outputs was requested". This patch backports what 0.18.0 does, in the
shape each release's runner expects (as that release's `llama.py` does it):

- `from .interfaces import ..., SupportsEagle3` and `SupportsEagle3` in the bases of
  `DeepseekV2ForCausalLM` (V3, V3.2 and Kimi-K2 inherit it). The protocol gives the data
  members `isinstance` checks: `supports_eagle3` (0.10.1+), `has_own_lm_head` and
  `has_own_embed_tokens` (0.11.1+).
- `set_aux_hidden_state_layers(layers)` and `get_eagle3_aux_hidden_state_layers()` (the name the
  runners call up to 0.17.1; default ids (2, n // 2, n - 3)).
- `DeepseekV2Model`: `aux_hidden_state_layers = ()` in `__init__`; `forward` records the residual
  stream entering each configured layer (`hidden_states + residual`, or `hidden_states` at
  layer 0 where `residual` is None, as 0.18.0's EagleModelMixin does), with absolute layer ids
  (`enumerate(..., start=self.start_layer)`), and returns `(hidden_states, aux_hidden_states)`
  when any were recorded, else `hidden_states` as before.
"""

from __future__ import annotations

import re

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._capture import enumerate_from_start_layer, fix_present, require_vllm_protocol
from .._cst import (
    add_base, add_import_or_refuse, base_names, find_method, insert_before_method, parse, parse_methods, replace_class,
    replace_method, require_class, statements,
)

ID = "vllm-deepseek-eagle3-aux"
DESCRIPTION = "DeepseekV2ForCausalLM (DeepSeek-V2/V3, Kimi-K2) implements the EAGLE-3 aux-hidden-state interface"
WHY = (
    "https://github.com/vllm-project/vllm/pull/32079 (EAGLE-3 for DeepSeek V3/V3.2; closed unmerged)",
    "https://github.com/vllm-project/vllm/pull/31257 (Fix Kimi K2 Eagle3 support; closed unmerged)",
    "https://github.com/vllm-project/vllm/pull/36361 (Kimi-K2.5 MLA EAGLE-3, merged; 0.18.0 ships SupportsEagle3 on DeepseekV2ForCausalLM)",
    "research: shared/research/vllm-eagle3.md sections 3.1, 3.2, 3.4 and 7.3",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.10.1,<=0.17.1")
FIXES_ERRORS = ("Model does not support EAGLE3 interface",)  # the V1 runner, at model load
TARGET_CLASSES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")  # V3 (Kimi-K2) is a V2 subclass
OPTIONS: dict = {}
ORDER = 20

MODEL_CLASS = "DeepseekV2Model"
CAUSAL_LM_CLASS = "DeepseekV2ForCausalLM"
INTERFACE = "SupportsEagle3"
SETTER = "set_aux_hidden_state_layers"
GETTER = "get_eagle3_aux_hidden_state_layers"
AUX_ATTR = "aux_hidden_state_layers"
MARK = f"# compat patch {ID}"

_METHODS = f"""
def {SETTER}(self, layers: tuple[int, ...]) -> None:
    {MARK}: EAGLE-3 reads the residual stream entering these layers.
    self.model.{AUX_ATTR} = layers

def {GETTER}(self) -> tuple[int, ...]:
    {MARK}: the default ids every EAGLE-3 target uses.
    num_layers = len(self.model.layers)
    return (2, num_layers // 2, num_layers - 3)
"""

_INIT_ATTR = f"""
self.{AUX_ATTR}: tuple[int, ...] = ()  {MARK}
"""

_CAPTURE = f"""
{MARK}: the residual stream entering layer idx (at layer 0 there is no residual yet)
if idx in self.{AUX_ATTR}:
    aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
"""

_RETURN = f"""
if len(aux_hidden_states) > 0:  {MARK}
    return hidden_states, aux_hidden_states
"""


def find_files(tree) -> dict[str, str]:
    require_vllm_protocol(tree, INTERFACE)
    for under in ("vllm/model_executor/models", "vllm"):
        for relpath in tree.grep_re(rf"(?m)^class {CAUSAL_LM_CLASS}\b", under=under):
            if re.search(rf"(?m)^class {MODEL_CLASS}\b".encode(), tree.read_bytes(relpath)):
                return {"model": relpath}
    raise FileNotFoundError(f"no module defines both {MODEL_CLASS} and {CAUSAL_LM_CLASS}")


def _classes(role: str, module: cst.Module) -> tuple[cst.ClassDef, cst.ClassDef]:
    return require_class(role, module, MODEL_CLASS), require_class(role, module, CAUSAL_LM_CLASS)


def _facts(role: str, module: cst.Module) -> dict[str, bool]:
    """Which parts of the fix the file has."""
    model, causal = _classes(role, module)
    forward = find_method(model, "forward")
    forward_code = module.code_for_node(forward) if forward is not None else ""
    return {
        "interface": INTERFACE in base_names(causal),
        "setter": find_method(causal, SETTER) is not None,
        "capture": f"self.{AUX_ATTR}" in forward_code,
    }


def has_fix(role: str, source: str, options) -> bool:
    return fix_present(role, _facts(role, parse(role, source)), "EAGLE-3 support")


# -- DeepseekV2Model ----------------------------------------------------------------------------
_LAYERS_ITER = m.OneOf(
    # islice(self.layers, self.start_layer, self.end_layer)                          (0.10.2+)
    m.Call(func=m.Name("islice"), args=[m.Arg(m.Attribute(m.Name("self"), m.Name("layers"))), m.Arg(), m.Arg()]),
    # self.layers[self.start_layer:self.end_layer]                                   (0.10.1)
    m.Subscript(value=m.Attribute(m.Name("self"), m.Name("layers"))),
)


class _CaptureInForward(cst.CSTTransformer):
    """In `forward`: `aux_hidden_states = []`, capture before each layer, return the pair."""

    def __init__(self):
        self.loops = 0
        self.returns = 0
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1  # never descend into nested functions

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        if self.depth:
            return updated
        body = list(updated.body.body)
        new_body: list[cst.BaseStatement] = []
        for stmt in body:
            if isinstance(stmt, cst.For) and m.matches(stmt, m.For(target=m.Name("layer"), iter=_LAYERS_ITER)):
                self.loops += 1
                start = statements("aux_hidden_states = []  " + MARK)[0].with_changes(leading_lines=stmt.leading_lines)
                new_body.append(start)
                new_body.append(enumerate_from_start_layer(stmt, statements(_CAPTURE)).with_changes(leading_lines=()))
            elif m.matches(stmt, m.SimpleStatementLine(body=[m.Return(m.Name("hidden_states"))])) and stmt is body[-1]:
                self.returns += 1
                new_body.extend(statements(_RETURN))
                new_body.append(stmt)
            else:
                new_body.append(stmt)
        return updated.with_changes(body=updated.body.with_changes(body=new_body))


def _patch_model(role: str, module: cst.Module, model: cst.ClassDef) -> cst.ClassDef:
    init, forward = find_method(model, "__init__"), find_method(model, "forward")
    if init is None or forward is None:
        raise FileNotAsExpected(role, f"{MODEL_CLASS} has no __init__ or forward")
    new_init = init.with_changes(body=init.body.with_changes(body=list(init.body.body) + statements(_INIT_ATTR)))
    capture = _CaptureInForward()
    new_forward = cst.ensure_type(forward.visit(capture), cst.FunctionDef)
    if capture.loops != 1 or capture.returns != 1:
        raise FileNotAsExpected(
            role, f"{MODEL_CLASS}.forward is not as expected: found {capture.loops} decoder-layer loop(s) "
            f"`for layer in islice(self.layers, ...)` and {capture.returns} final `return hidden_states` (expected 1 and 1)",
        )
    return replace_method(replace_method(model, init, new_init), forward, new_forward)


# -- DeepseekV2ForCausalLM -----------------------------------------------------------------------
def _patch_causal_lm(role: str, causal: cst.ClassDef) -> cst.ClassDef:
    causal = add_base(causal, INTERFACE)
    anchor = "forward" if find_method(causal, "forward") is not None else ""
    return insert_before_method(causal, anchor, parse_methods(_METHODS))


def transform(role: str, source: str, options) -> str:
    module = parse(role, source)
    if has_fix(role, source, options):
        return source
    model, causal = _classes(role, module)
    module = replace_class(module, model, _patch_model(role, module, model))
    module = replace_class(module, causal, _patch_causal_lm(role, causal))
    return add_import_or_refuse(role, module, (".interfaces", "models.interfaces"), INTERFACE).code
