"""vLLM: a DeepSeek-V2/V3 (Kimi-K2, GLM-MoE-DSA, ...) target can feed the final layer's output, id n.

vLLM's ids are capture-before: id k is the residual stream entering layer k. 0.18.0 gave
`DeepseekV2Model.forward` that capture inside the decoder loop only, so id n (= num_hidden_layers,
61 on Kimi-K2: the last layer's output, which trainers that write output-of ids ask for as n - 1 + 1)
matches no iteration: the target returns one aux state fewer than the drafter's `fc` expects and
the run fails downstream, or silently drafts from fewer states (vllm#46788). 0.25.0 added a capture
after the loop (vllm#46973); this patch adds the same two lines, after the last pipeline rank's
early return and before the final norm, as 0.25.0 has them.

Range: 0.18.0 (the first release capturing in deepseek_v2.py) to 0.24.0 (the last without the
post-loop capture); every release in it has the same tail of `forward`.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._cst import block_statements, find_class, find_method, parse, replace_class, replace_method, statements

ID = "vllm-deepseek-eagle3-final-layer"
DESCRIPTION = "DeepseekV2Model also captures the final layer's output (aux id = num_hidden_layers), as vLLM 0.25.0 does"
WHY = (
    "https://github.com/vllm-project/vllm/pull/46788 (DeepSeek: EAGLE3 capture cannot reach the final layer; closed)",
    "https://github.com/vllm-project/vllm/pull/46973 (Capture final-layer aux hidden state in deepseek_v2 backbone; merged, in 0.25.0)",
    "research: shared/research/vllm-eagle3.md section 3.2; anchors-and-pains.md table 0.4",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.18.0,<=0.24.0")
TARGET_CLASSES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
OPTIONS: dict = {}
ORDER = 25

MODEL_CLASS = "DeepseekV2Model"
MARK = f"# compat patch {ID}"
FINAL_CAPTURE = "self.end_layer in self.aux_hidden_state_layers"

_CAPTURE = f"""
{MARK}: id n is the last layer's output (vllm#46973)
if {FINAL_CAPTURE}:
    aux_hidden_states.append(hidden_states + residual)
"""

_FINAL_NORM = m.SimpleStatementLine(body=[m.Assign(
    targets=[m.AssignTarget(m.Tuple(elements=[m.Element(m.Name("hidden_states")), m.Element(m.Name("_"))]))],
    value=m.Call(func=m.Attribute(m.Name("self"), m.Name("norm")), args=[m.Arg(m.Name("hidden_states")), m.Arg(m.Name("residual"))]),
)])


def find_files(tree) -> dict[str, str]:
    for under in ("vllm/model_executor/models", "vllm"):
        for relpath in tree.grep_re(rf"(?m)^class {MODEL_CLASS}\b", under=under):
            if b"aux_hidden_state_layers" in tree.read_bytes(relpath) and b"class DeepseekV2ForCausalLM" in tree.read_bytes(relpath):
                return {"model": relpath}
    raise FileNotFoundError(f"no module defines {MODEL_CLASS} with EAGLE-3 capture (aux_hidden_state_layers)")


def _forward(role: str, module: cst.Module) -> tuple[cst.ClassDef, cst.FunctionDef]:
    cls = find_class(module, MODEL_CLASS)
    forward = find_method(cls, "forward") if cls is not None else None
    if forward is None or cls is None:
        raise FileNotAsExpected(role, f"no {MODEL_CLASS}.forward")
    if "self.aux_hidden_state_layers" not in module.code_for_node(forward):
        raise FileNotAsExpected(role, f"{MODEL_CLASS}.forward captures no aux hidden states (no self.aux_hidden_state_layers)")
    return cls, forward


def has_fix(role: str, source: str, options) -> bool:
    module = parse(role, source)
    _, forward = _forward(role, module)
    return FINAL_CAPTURE in module.code_for_node(forward)


def transform(role: str, source: str, options) -> str:
    if has_fix(role, source, options):
        return source
    module = parse(role, source)
    cls, forward = _forward(role, module)
    body = block_statements(forward)
    norms = [i for i, s in enumerate(body) if m.matches(s, _FINAL_NORM)]
    if len(norms) != 1:
        raise FileNotAsExpected(role, f"{MODEL_CLASS}.forward has {len(norms)} `hidden_states, _ = self.norm(hidden_states, residual)` (expected 1)")
    at = norms[0]
    capture = statements(_CAPTURE)
    capture[0] = capture[0].with_changes(leading_lines=[*body[at].leading_lines, *capture[0].leading_lines])
    body = body[:at] + capture + [body[at].with_changes(leading_lines=[cst.EmptyLine(indent=False)])] + body[at + 1:]
    new = forward.with_changes(body=forward.body.with_changes(body=body))
    return replace_class(module, cls, replace_method(cls, forward, new)).code
