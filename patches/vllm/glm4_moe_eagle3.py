"""vLLM: GLM-4.5 / 4.6 MoE (`Glm4MoeForCausalLM`) as an EAGLE-3 target.

`glm4_moe.py` has no `SupportsEagle3` and no aux-state capture in any release from 0.10.0 to
0.33.0 (every release read), while SGLang has had it since 0.5.5; a GLM-4 MoE target with an
EAGLE-3 drafter stops with "Model does not support EAGLE3 interface but aux_hidden_state_outputs
was requested". This patch gives it what DeepSeek got in 0.18.0 and 0.25.0, in one shape for
every release:

- `Glm4MoeForCausalLM`: `SupportsEagle3` in its bases (the protocol's data members come with it),
  `set_aux_hidden_state_layers` (which also overrides the 0.18.0+ protocol default that asserts an
  `EagleModelMixin` decoder), and the default ids `(2, n // 2, n - 3)` under both names the runners
  call: `get_eagle3_aux_hidden_state_layers` (up to 0.17.1) and
  `get_eagle3_default_aux_hidden_state_layers` (0.18.0+);
- `Glm4MoeModel`: `aux_hidden_state_layers = ()`; `forward` records the residual stream entering
  each configured layer (absolute ids; `hidden_states` alone at layer 0, where there is no residual
  yet, as EagleModelMixin does) and, after the last layer, id n (the last layer's output, as
  DeepSeek from 0.25.0); it returns `(hidden_states, aux_hidden_states)` when any were recorded.

Before 0.22.0 the config-time whitelist refuses `glm4_moe` too: apply vllm-eagle3-whitelist with
`--model-type glm4_moe` as well (0.10.1-0.21.0). Range: 0.10.1 (the first release with the
`SupportsEagle3` protocol) to 0.33.0 (the newest read).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._capture import enumerate_from_start_layer, fix_present, require_vllm_protocol
from .._cst import (
    add_base, add_import_or_refuse, base_names, find_method, insert_before_method, parse, parse_methods, replace_class,
    Statement, block_statements, replace_method, require_class, statements,
)

ID = "vllm-glm4-moe-eagle3"
DESCRIPTION = "Glm4MoeForCausalLM (GLM-4.5/4.6 MoE) implements the EAGLE-3 aux-hidden-state interface"
WHY = (
    "vllm glm4_moe.py: no SupportsEagle3 and no aux capture in 0.10.0-0.33.0 (SGLang: glm4_moe.py has "
    "set_eagle3_layers_to_capture from 0.5.5)",
    "research: shared/research/anchors-and-pains.md table 0.1 (glm4_moe has no SupportsEagle3 in any probed vLLM release)",
    "https://github.com/vllm-project/vllm/pull/46973 (final-layer capture in the deepseek_v2 backbone, which GLM-MoE-DSA uses)",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.10.1,<=0.33.0")
FIXES_ERRORS = ("Model does not support EAGLE3 interface",)  # the V1 runner, at model load
TARGET_CLASSES = ("Glm4MoeForCausalLM",)
OPTIONS: dict = {}
ORDER = 22

MODEL_CLASS = "Glm4MoeModel"
CAUSAL_LM_CLASS = "Glm4MoeForCausalLM"
INTERFACE = "SupportsEagle3"
SETTER = "set_aux_hidden_state_layers"
AUX_ATTR = "aux_hidden_state_layers"
MARK = f"# compat patch {ID}"

_METHODS = f"""
def {SETTER}(self, layers: tuple[int, ...]) -> None:
    {MARK}: EAGLE-3 reads the residual stream entering these layers (n: the last layer's output).
    self.model.{AUX_ATTR} = layers

def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
    {MARK}: the default ids every EAGLE-3 target uses (the runners' name up to 0.17.1).
    num_layers = len(self.model.layers)
    return (2, num_layers // 2, num_layers - 3)

def get_eagle3_default_aux_hidden_state_layers(self) -> tuple[int, ...]:
    {MARK}: the same, under the name the runners call from 0.18.0.
    return self.get_eagle3_aux_hidden_state_layers()
"""

_CAPTURE = f"""
{MARK}: the residual stream entering layer {{idx}} (at layer 0 there is no residual yet)
if {{idx}} in self.{AUX_ATTR}:
    aux_hidden_states.append(hidden_states if residual is None else hidden_states + residual)
"""

_FINAL = f"""
{MARK}: id n is the last layer's output
if self.end_layer in self.{AUX_ATTR}:
    aux_hidden_states.append(hidden_states + residual)
"""

_RETURN = f"""
if len(aux_hidden_states) > 0:  {MARK}
    return hidden_states, aux_hidden_states
"""


def find_files(tree) -> dict[str, str]:
    require_vllm_protocol(tree, INTERFACE)
    for relpath in tree.grep_re(rf"(?m)^class {CAUSAL_LM_CLASS}\b", under="vllm/model_executor/models"):
        if f"class {MODEL_CLASS}(".encode() in tree.read_bytes(relpath):
            return {"model": relpath}
    raise FileNotFoundError(f"no module defines both {MODEL_CLASS} and {CAUSAL_LM_CLASS}")


def _classes(role: str, module: cst.Module) -> tuple[cst.ClassDef, cst.ClassDef]:
    return require_class(role, module, MODEL_CLASS), require_class(role, module, CAUSAL_LM_CLASS)


def has_fix(role: str, source: str, options) -> bool:
    module = parse(role, source)
    model, causal = _classes(role, module)
    forward = find_method(model, "forward")
    facts = {
        "interface": INTERFACE in base_names(causal),
        "setter": find_method(causal, SETTER) is not None,
        "capture": forward is not None and f"self.{AUX_ATTR}" in module.code_for_node(forward),
    }
    return fix_present(role, facts, "EAGLE-3 support")


# -- Glm4MoeModel.forward ------------------------------------------------------------------------
_SELF_LAYERS = m.Attribute(m.Name("self"), m.Name("layers"))
_ISLICE_LOOP = m.For(target=m.Name("layer"), iter=m.Call(func=m.Name("islice"), args=[m.Arg(_SELF_LAYERS), m.Arg(), m.Arg()]))
_RANGE_LOOP = m.For(target=m.Name("i"), iter=m.Call(func=m.Name("range"), args=[m.Arg(m.Attribute(m.Name("self"), m.Name("start_layer"))), m.Arg()]))
_FINAL_NORM = m.SimpleStatementLine(body=[m.Assign(
    targets=[m.AssignTarget(m.Tuple(elements=[m.Element(m.Name("hidden_states")), m.Element(m.Name("_"))]))],
    value=m.Call(func=m.Attribute(m.Name("self"), m.Name("norm"))),
)])
_RETURN_HIDDEN = m.SimpleStatementLine(body=[m.Return(m.Name("hidden_states"))])


def _capturing_loop(loop: cst.For) -> cst.For:
    if m.matches(loop, _RANGE_LOOP):  # 0.10.0-0.10.1.1: `for i in range(self.start_layer, self.end_layer)`: absolute already
        return loop.with_changes(body=loop.body.with_changes(body=[*statements(_CAPTURE.format(idx="i")), *loop.body.body]))
    return enumerate_from_start_layer(loop, statements(_CAPTURE.format(idx="idx")))


def _patch_forward(role: str, forward: cst.FunctionDef) -> cst.FunctionDef:
    body = block_statements(forward)
    loops = [i for i, s in enumerate(body) if m.matches(s, _ISLICE_LOOP) or m.matches(s, _RANGE_LOOP)]
    norms = [i for i, s in enumerate(body) if m.matches(s, _FINAL_NORM)]
    if len(loops) != 1 or len(norms) != 1 or not m.matches(body[-1], _RETURN_HIDDEN) or not loops[0] < norms[0]:
        raise FileNotAsExpected(
            role, f"{MODEL_CLASS}.forward is not as expected: {len(loops)} decoder-layer loop(s) over self.layers, "
            f"{len(norms)} final `hidden_states, _ = self.norm(...)` and a final `return hidden_states` (expected 1, 1, yes)",
        )
    new: list[Statement] = []
    for i, stmt in enumerate(body):
        if i == loops[0]:
            new.append(statements(f"aux_hidden_states = []  {MARK}")[0].with_changes(leading_lines=stmt.leading_lines))
            stmt = _capturing_loop(cst.ensure_type(stmt, cst.For)).with_changes(leading_lines=())  # matched a loop
        elif i == norms[0]:
            final = statements(_FINAL)
            new.extend([final[0].with_changes(leading_lines=[*stmt.leading_lines, *final[0].leading_lines]), *final[1:]])
            stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        elif i == len(body) - 1:
            new.extend(statements(_RETURN))
        new.append(stmt)
    return forward.with_changes(body=forward.body.with_changes(body=new))


def _patch_model(role: str, model: cst.ClassDef) -> cst.ClassDef:
    init, forward = find_method(model, "__init__"), find_method(model, "forward")
    if init is None or forward is None:
        raise FileNotAsExpected(role, f"{MODEL_CLASS} has no __init__ or forward")
    new_init = init.with_changes(body=init.body.with_changes(body=[*init.body.body, *statements(f"self.{AUX_ATTR} = ()  {MARK}")]))
    new_forward = _patch_forward(role, forward)
    return replace_method(replace_method(model, init, new_init), forward, new_forward)


def transform(role: str, source: str, options) -> str:
    if has_fix(role, source, options):
        return source
    module = parse(role, source)
    model, causal = _classes(role, module)
    module = replace_class(module, model, _patch_model(role, model))
    anchor = "compute_logits" if find_method(causal, "compute_logits") is not None else ""
    module = replace_class(module, causal, insert_before_method(add_base(causal, INTERFACE), anchor, parse_methods(_METHODS)))
    return add_import_or_refuse(role, module, (".interfaces", "models.interfaces"), INTERFACE).code
