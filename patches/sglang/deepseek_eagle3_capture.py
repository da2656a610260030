"""SGLang: DeepSeek-V2/V3 (and Kimi-K2, whose architecture is DeepseekV3ForCausalLM) as EAGLE-3 targets.

SGLang feeds an EAGLE-3 drafter from `set_eagle3_layers_to_capture` on the target class.
Llama has it from 0.4.4.post2; `DeepseekV2ForCausalLM` only from 0.5.4.post2 (sglang#12319),
so before that an EAGLE3 run on a DeepSeek or Kimi-K2 target dies with AttributeError in
`ModelRunner.initialize` / `CudaGraphRunner.__init__`. This patch backports 0.5.4.post2's
capture, in the shape each release's runner calls (read from that release's Llama hook):

- `DeepseekV2ForCausalLM.set_eagle3_layers_to_capture`: up to 0.4.8.post1 the runner passes no
  ids and Llama's method takes none (the defaults `[2, N // 2, N - 3]`); from 0.4.9 it passes
  the drafter's `eagle_config.eagle_aux_hidden_state_layer_ids` and Llama adds +1 to each
  ("for the ith layer, it takes the output of the (i-1)th layer"). The last-rank guard is
  written where the class has a pipeline group (0.5.1+), as Llama's is.
- `DeepseekV2Model`: `layers_to_capture = []`; `forward` appends `hidden_states + residual`
  before each captured layer runs and returns `(hidden_states, aux_hidden_states)` when any
  were captured.
- Two-batch overlap (0.4.7+): when a batch can run TBO, the layers after the dense prefix run
  in `model_forward_maybe_tbo`, which captures nothing (0.5.4.post2 and later still lose those
  states, sglang-eagle3.md 2.4). Here the layers up to the last captured one run in the plain
  loop instead (the same computation; TboAttnBackend serves the whole batch through its primary
  backend, as it does for the dense prefix), and the overlap resumes after them.
- `DeepseekV2ForCausalLM.forward` unpacks the pair and hands the states to the logits processor.

Not covered, as upstream until 0.5.10 (sglang#14280): with an all-to-all MoE backend (DeepEP), a
MoE layer's input can be scattered across the attention-TP ranks, and its captured state is then
the rank's part only.

Range: 0.4.4.post2 (first release with EAGLE3 and Llama's hook) to 0.5.4.post1 (the last
without DeepSeek's); every release in it was read.
"""

from __future__ import annotations

import ast

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._capture import fix_present
from .._cst import (
    Statement, block_statements, find_method, insert_before_method, parse, parse_methods, replace_class, replace_method, require_class,
    statements,
)

ID = "sglang-deepseek-eagle3-capture"
DESCRIPTION = "DeepseekV2ForCausalLM (DeepSeek-V2/V3, Kimi-K2) captures EAGLE-3 aux hidden states, as LlamaForCausalLM does"
WHY = (
    "https://github.com/sgl-project/sglang/pull/12319 (Initial eagle3 support for Deepseek-like models; in 0.5.4.post2)",
    "https://github.com/sgl-project/sglang/pull/9698 (EAGLE-3 for DeepSeek-V2/V3 with the TBO path; closed unmerged)",
    "https://github.com/sgl-project/sglang/pull/14280 (captured states all-gathered under an all-to-all MoE; not backported here)",
    "research: shared/research/sglang-eagle3.md sections 2.1-2.4 and 7.1",
)
ENGINE = "sglang"
VERSIONS = SpecifierSet(">=0.4.4.post2,<=0.5.4.post1")
FIXES_ERRORS = ("set_eagle3_layers_to_capture",)  # AttributeError: 'X' object has no attribute ...
TARGET_CLASSES = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")  # V3 (Kimi-K2) is a V2 subclass
OPTIONS: dict = {}
ORDER = 20

MODEL_CLASS = "DeepseekV2Model"
CAUSAL_LM_CLASS = "DeepseekV2ForCausalLM"
REFERENCE_CLASS = "LlamaForCausalLM"
HOOK = "set_eagle3_layers_to_capture"
MODELS_DIR = "sglang/srt/models"
MARK = f"# compat patch {ID}"

# Roles: the one file, in the shape the release's runner calls the hook.
WITH_IDS = "model"  # 0.4.9+: hook(layer_ids=None), ids + 1
DEFAULTS_ONLY = "model-defaults-only"  # up to 0.4.8.post1: hook(), the defaults

_HOOK_WITH_IDS = f"""
def {HOOK}(self, layer_ids=None):
    {MARK}: as {REFERENCE_CLASS} does in this release
{{guard}}    if layer_ids is None:
        self.capture_aux_hidden_states = True
        num_layers = self.config.num_hidden_layers
        self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
    else:
        self.capture_aux_hidden_states = True
        # we plus 1 here because in sglang, for the ith layer, it takes the output
        # of the (i-1)th layer as aux hidden state
        self.model.layers_to_capture = [val + 1 for val in layer_ids]
"""

_HOOK_DEFAULTS = f"""
def {HOOK}(self):
    {MARK}: as {REFERENCE_CLASS} does in this release (the runner passes no ids)
{{guard}}    self.capture_aux_hidden_states = True
    num_layers = self.config.num_hidden_layers
    self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
"""

_LAST_RANK_GUARD = """    if not self.pp_group.is_last_rank:
        return

"""

_CAPTURE = """
if i in self.layers_to_capture:
    aux_hidden_states.append(hidden_states + residual)
"""

_RETURN = f"""
if len(aux_hidden_states) == 0:  {MARK}
    return hidden_states
return hidden_states, aux_hidden_states
"""

_UNPACK = f"""
aux_hidden_states = None  {MARK}
if self.capture_aux_hidden_states:
    hidden_states, aux_hidden_states = hidden_states
"""

# Under two-batch overlap the loop stops at the dense prefix; extend it to the last captured layer.
_TBO_ONE_BOUND = f"""
{MARK}: the two-batch-overlap path captures nothing, so the layers up to the last captured one run here
if forward_batch.can_run_tbo and self.layers_to_capture:
    captured_in_overlap = [i for i in self.layers_to_capture if {{end}} <= i < len(self.layers)]
    if captured_in_overlap:
        {{end}} = max(captured_in_overlap) + 1
"""

_TBO_TWO_BOUNDS = f"""
{MARK}: the two-batch-overlap path captures nothing, so the layers up to the last captured one run here
if forward_batch.can_run_tbo and self.layers_to_capture:
    captured_in_overlap = [
        i for i in self.layers_to_capture if max({{end}}, self.start_layer) <= i < self.end_layer
    ]
    if captured_in_overlap:
        if {{start}} == {{end}}:  # no dense layer runs before the overlap on this stage
            {{start}} = self.start_layer
        {{end}} = max(captured_in_overlap) + 1
"""


# -- locating the file, and the shape its runner expects ------------------------------------------
def find_files(tree) -> dict[str, str]:
    model = None
    for relpath in tree.grep_re(rf"(?m)^class {CAUSAL_LM_CLASS}\b", under=MODELS_DIR):
        if f"class {MODEL_CLASS}".encode() in tree.read_bytes(relpath):
            model = relpath
            break
    if model is None:
        raise FileNotFoundError(f"no module under {MODELS_DIR} defines both {MODEL_CLASS} and {CAUSAL_LM_CLASS}")
    takes_ids = reference_takes_ids(tree)
    if takes_ids is None:
        raise FileNotFoundError(f"no {REFERENCE_CLASS}.{HOOK} under {MODELS_DIR}: this release has no EAGLE-3 capture to follow")
    return {WITH_IDS if takes_ids else DEFAULTS_ONLY: model}


def reference_takes_ids(tree) -> bool | None:
    """Does this release's LlamaForCausalLM hook take the drafter's ids? None: there is no such hook."""
    for relpath in tree.grep_re(rf"(?m)^class {REFERENCE_CLASS}\b", under=MODELS_DIR):
        if f"def {HOOK}".encode() not in tree.read_bytes(relpath):
            continue
        module = tree.parse(relpath)
        for node in module.body:
            if isinstance(node, ast.ClassDef) and node.name == REFERENCE_CLASS:
                for fn in node.body:
                    if isinstance(fn, ast.FunctionDef) and fn.name == HOOK:
                        return len(fn.args.args) > 1
    return None


# -- what the file has -------------------------------------------------------------------------
def _classes(role: str, module: cst.Module) -> tuple[cst.ClassDef, cst.ClassDef]:
    return require_class(role, module, MODEL_CLASS), require_class(role, module, CAUSAL_LM_CLASS)


def _code(module: cst.Module, node) -> str:
    return module.code_for_node(node) if node is not None else ""


def _facts(role: str, module: cst.Module) -> dict[str, bool]:
    model, causal = _classes(role, module)
    return {
        "hook": find_method(causal, HOOK) is not None,
        "capture": "self.layers_to_capture" in _code(module, find_method(model, "forward")),
        "logits": "aux_hidden_states" in _code(module, find_method(causal, "forward")),
    }


def has_fix(role: str, source: str, options) -> bool:
    return fix_present(role, _facts(role, parse(role, source)), "EAGLE-3 capture")


# -- DeepseekV2Model.forward ---------------------------------------------------------------------
_LAYER_LOOP = m.For(target=m.Name("i"), iter=m.Call(func=m.Name("range")))
_TAKE_LAYER = m.SimpleStatementLine(body=[m.Assign(
    targets=[m.AssignTarget(m.Name("layer"))],
    value=m.Subscript(value=m.Attribute(m.Name("self"), m.Name("layers"))),
)])
_RETURN_HIDDEN = m.SimpleStatementLine(body=[m.Return(m.Name("hidden_states"))])


def _capture_before_layer(body: list[Statement]) -> tuple[list[Statement], bool]:
    """`body` with the capture before `layer = self.layers[i]`, looking one `with` deep."""
    out: list[Statement] = []
    done = False
    for stmt in body:
        if not done and m.matches(stmt, _TAKE_LAYER):
            capture = statements(_CAPTURE)
            out.extend([capture[0].with_changes(leading_lines=stmt.leading_lines), *capture[1:]])
            stmt = stmt.with_changes(leading_lines=())
            done = True
        elif not done and isinstance(stmt, cst.With):
            inner, done = _capture_before_layer(block_statements(stmt))
            stmt = stmt.with_changes(body=stmt.body.with_changes(body=inner))
        out.append(stmt)
    return out, done


def _overlap_block(loop: cst.For) -> list[Statement]:
    """The TBO extension for this loop's bounds: `range(end)` or `range(start, end)` with names."""
    args = [a.value for a in cst.ensure_type(loop.iter, cst.Call).args]  # _LAYER_LOOP: `for i in range(...)`
    names = [a.value for a in args if isinstance(a, cst.Name)]
    if len(names) == len(args):
        if len(names) == 1:
            return statements(_TBO_ONE_BOUND.format(end=names[0]))
        if len(names) == 2:
            return statements(_TBO_TWO_BOUNDS.format(start=names[0], end=names[1]))
    return []  # range(len(self.layers)): no two-batch overlap in this release


def _patch_forward(role: str, forward: cst.FunctionDef) -> cst.FunctionDef:
    body = block_statements(forward)
    loops = [i for i, s in enumerate(body) if m.matches(s, _LAYER_LOOP)]
    if len(loops) != 1 or not body or not m.matches(body[-1], _RETURN_HIDDEN):
        raise FileNotAsExpected(
            role, f"{MODEL_CLASS}.forward is not as expected: found {len(loops)} decoder-layer loop(s) "
            "`for i in range(...)` (expected 1) and it must end in `return hidden_states`",
        )
    index = loops[0]
    loop = cst.ensure_type(body[index], cst.For)  # matched _LAYER_LOOP
    inner, found = _capture_before_layer(block_statements(loop))
    if not found:
        raise FileNotAsExpected(role, f"{MODEL_CLASS}.forward: the decoder-layer loop has no `layer = self.layers[i]`")
    start = [*_overlap_block(loop), *statements(f"aux_hidden_states = []  {MARK}")]
    start[0] = start[0].with_changes(leading_lines=[*loop.leading_lines, *start[0].leading_lines])
    loop = loop.with_changes(body=loop.body.with_changes(body=inner), leading_lines=())
    ret = statements(_RETURN)
    ret[0] = ret[0].with_changes(leading_lines=body[-1].leading_lines)
    new_body = body[:index] + start + [loop] + body[index + 1:-1] + ret
    return forward.with_changes(body=forward.body.with_changes(body=new_body))


def _append_to_init(role: str, cls: cst.ClassDef, line: str) -> cst.ClassDef:
    init = find_method(cls, "__init__")
    if init is None:
        raise FileNotAsExpected(role, f"{cls.name.value} has no __init__")
    new = init.with_changes(body=init.body.with_changes(body=[*init.body.body, *statements(line)]))
    return replace_method(cls, init, new)


def _patch_model(role: str, model: cst.ClassDef) -> cst.ClassDef:
    forward = find_method(model, "forward")
    if forward is None:
        raise FileNotAsExpected(role, f"{MODEL_CLASS} has no forward")
    new_forward = _patch_forward(role, forward)
    model = replace_method(model, forward, new_forward)
    return _append_to_init(role, model, f"self.layers_to_capture = []  {MARK}")


# -- DeepseekV2ForCausalLM ---------------------------------------------------------------------
_CALLS_MODEL = m.SimpleStatementLine(body=[m.Assign(
    targets=[m.AssignTarget(m.Name("hidden_states"))],
    value=m.Call(func=m.Attribute(m.Name("self"), m.Name("model"))),
)])
_LOGITS_CALL = m.Call(func=m.Attribute(m.Name("self"), m.Name("logits_processor")))


class _PassAuxToLogits(cst.CSTTransformer):
    """`self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch)` + `aux_hidden_states`."""

    def __init__(self):
        self.calls = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        if not m.matches(original, _LOGITS_CALL) or len(original.args) != 4:
            return updated
        self.calls += 1
        args = list(updated.args)
        last = args[-1]  # keeps its comma style and the line break before `)` for the new last argument
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(cst.Arg(cst.Name("aux_hidden_states"), comma=last.comma, whitespace_after_arg=last.whitespace_after_arg))
        return updated.with_changes(args=args)


def _patch_causal_forward(role: str, forward: cst.FunctionDef) -> cst.FunctionDef:
    body = block_statements(forward)
    calls = [i for i, s in enumerate(body) if m.matches(s, _CALLS_MODEL)]
    if len(calls) != 1:
        raise FileNotAsExpected(role, f"{CAUSAL_LM_CLASS}.forward has {len(calls)} `hidden_states = self.model(...)` (expected 1)")
    body = body[:calls[0] + 1] + statements(_UNPACK) + body[calls[0] + 1:]
    passer = _PassAuxToLogits()
    forward = cst.ensure_type(forward.with_changes(body=forward.body.with_changes(body=body)).visit(passer), cst.FunctionDef)
    if not passer.calls:
        raise FileNotAsExpected(role, f"{CAUSAL_LM_CLASS}.forward has no `self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch)`")
    return forward


def _hook(role: str, module: cst.Module, causal: cst.ClassDef) -> list[cst.FunctionDef]:
    init = _code(module, find_method(causal, "__init__"))
    if "self.config" not in init:
        raise FileNotAsExpected(role, f"{CAUSAL_LM_CLASS}.__init__ keeps no self.config (the hook reads num_hidden_layers from it)")
    guard = _LAST_RANK_GUARD if "self.pp_group" in init else ""
    template = _HOOK_WITH_IDS if role == WITH_IDS else _HOOK_DEFAULTS
    return parse_methods(template.format(guard=guard))


def _patch_causal_lm(role: str, module: cst.Module, causal: cst.ClassDef) -> cst.ClassDef:
    forward = find_method(causal, "forward")
    if forward is None:
        raise FileNotAsExpected(role, f"{CAUSAL_LM_CLASS} has no forward")
    hook = _hook(role, module, causal)
    new_forward = _patch_causal_forward(role, forward)
    causal = replace_method(causal, forward, new_forward)
    causal = _append_to_init(role, causal, f"self.capture_aux_hidden_states = False  {MARK}")
    return insert_before_method(causal, "", hook)  # at the end of the class, where 0.5.4.post2 has it


def transform(role: str, source: str, options) -> str:
    if role not in (WITH_IDS, DEFAULTS_ONLY):
        raise FileNotAsExpected(role, f"unknown role {role!r} for patch {ID}")
    if has_fix(role, source, options):
        return source
    module = parse(role, source)
    model, causal = _classes(role, module)
    module = replace_class(module, model, _patch_model(role, model))
    module = replace_class(module, causal, _patch_causal_lm(role, module, causal))
    return module.code
