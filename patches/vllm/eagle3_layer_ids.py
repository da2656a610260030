"""vLLM: read the drafter's EAGLE-3 aux layer ids, also where SpecForge-style drafters put them.

What the model runners read from the drafter's config.json (vllm-eagle3.md 3.3), before 0.22.0:

- up to 0.11.0 nothing at all: `GPUModelRunner.load_model` always feeds the target's default
  `(2, n // 2, n - 3)`, whatever the drafter declares;
- 0.11.1-0.21.0 only the top-level `eagle_aux_hidden_state_layer_ids` (v1
  `GPUModelRunner._get_eagle3_aux_layers_from_config`, and from 0.17.0 the v2 runner's
  `get_eagle3_aux_layers_from_config`); ids nested in `eagle_config` (the layout SGLang reads,
  and the one SpecForge writes) are silently replaced by the default.

This patch makes both runners read the top-level key, then `eagle_config.eagle_aux_hidden_state_layer_ids`,
the way 0.22.0's v1 runner does, so such a drafter needs a patch instead of a conversion. What the
nested ids mean is the drafter's convention, not the engine's: vLLM stores the residual stream
*entering* layer k (capture-before), while the eagle/SpecForge layout writes *output-of* ids (it
trains on `hidden_states[id + 1]` and relies on SGLang's +1). Option `nested_ids_convention`:
`output-of` (default) adds 1 to each nested id, `capture-before` uses them as written. Top-level ids
are vLLM's own key and stay capture-before. Where both are set the top-level key wins, as upstream.

Range: 0.10.0 (the first release with EAGLE-3) to 0.21.0; 0.22.0 reads the nested key itself.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._cst import (
    Statement, block_statements, find_all, find_method, insert_before_method, parse, parse_methods, replace_class, replace_method,
    require_class, statements,
)

ID = "vllm-eagle3-layer-ids"
DESCRIPTION = "the model runners read the drafter's aux layer ids: top-level, then nested in eagle_config (convention: --nested-ids-convention)"
WHY = (
    "vLLM 0.22.0 gpu_model_runner.py _get_eagle3_aux_layers_from_config reads eagle_config['eagle_aux_hidden_state_layer_ids'] "
    "(0.11.1-0.21.0: top-level only; up to 0.11.0: not at all)",
    "https://github.com/vllm-project/vllm/issues/43671 (a drafter trained on the other id convention: ~10% position-0 acceptance)",
    "research: shared/research/vllm-eagle3.md sections 3.3 and 7.3; checkpoint-formats.md (SpecForge writes output-of ids)",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.10.0,<=0.21.0")
CONVENTIONS = {"output-of": 1, "capture-before": 0}  # what is added to a nested id to get the layer vLLM captures before
OPTIONS = {"nested_ids_convention": "output-of"}
ORDER = 15

KEY = "eagle_aux_hidden_state_layer_ids"
NESTED = "eagle_config"
V1_READER = "_get_eagle3_aux_layers_from_config"
V2_READER = "get_eagle3_aux_layers_from_config"
RUNNER = "GPUModelRunner"
OLD_GETTER = "get_eagle3_aux_hidden_state_layers"
MARK = f"# compat patch {ID}"


def add_args(group) -> None:
    """This patch's own option on `compat patch` (picked up by the command when it supports patch options)."""
    group.add_argument(
        "--nested-ids-convention", choices=sorted(CONVENTIONS), default=None, dest="nested_ids_convention",
        help=f"{ID}: what ids nested in the drafter's eagle_config mean: output-of (SpecForge, the eagle layout; "
        "default: +1 to each) or capture-before (used as written)",
    )


def find_files(tree) -> dict[str, str]:
    found = {}
    # the v1 runner: the GPUModelRunner that sets the aux layers (0.17.0+ has a v2 GPUModelRunner too, which does not)
    for relpath in tree.grep_re(rf"(?m)^class {RUNNER}\b", under="vllm/v1/worker"):
        data = tree.read_bytes(relpath)
        if f"def {V1_READER}(".encode() in data or f".{OLD_GETTER}()".encode() in data:
            found["v1"] = relpath
            break
    else:
        raise FileNotFoundError(f"no {RUNNER} under vllm/v1/worker that sets the EAGLE-3 aux layers")
    for relpath in tree.grep(f"def {V2_READER}(".encode(), under="vllm/v1"):
        found["v2"] = relpath  # the v2 runner, 0.17.0+
        break
    return found


def _offset(options) -> int:
    convention = (options or {}).get("nested_ids_convention", OPTIONS["nested_ids_convention"])
    if convention not in CONVENTIONS:
        raise FileNotAsExpected("options", f"nested_ids_convention {convention!r}: expected one of {', '.join(sorted(CONVENTIONS))}")
    return CONVENTIONS[convention]


# -- the reader functions ------------------------------------------------------------------------
def _reader(role: str, module: cst.Module) -> tuple[cst.ClassDef | None, cst.FunctionDef | None]:
    """(the class holding it, the function) for the role's reader; None when v1 has none (<= 0.11.0)."""
    if role == "v1":
        cls = require_class(role, module, RUNNER)
        return cls, find_method(cls, V1_READER)
    if role == "v2":
        fn = next((s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == V2_READER), None)
        if fn is None:
            raise FileNotAsExpected(role, f"no top-level function {V2_READER}")
        return None, fn
    raise FileNotAsExpected(role, f"unknown role {role!r} for patch {ID}")


def _nested_read(fn: cst.FunctionDef) -> cst.Call | None:
    """`<x>.get("eagle_aux_hidden_state_layer_ids")` where x came from `getattr(hf_config, "eagle_config", ...)`."""
    holders = {
        t.target.value for a in find_all(fn, m.Assign(value=m.Call(func=m.Name("getattr"), args=[m.Arg(), m.Arg(m.SimpleString()), m.ZeroOrMore()])))
        for t in a.targets if isinstance(t.target, cst.Name) and a.value.args[1].value.evaluated_value == NESTED
    }
    for call in find_all(fn, m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("get")), args=[m.Arg(m.SimpleString()), m.ZeroOrMore()])):
        if call.func.value.value in holders and call.args[0].value.evaluated_value == KEY:
            return call
    return None


def nested_offset(fn: cst.FunctionDef) -> int | None:
    """The offset the reader adds to nested ids: +c for `[i + c for i in (<read> or [])]`, 0 used as is, None if not read."""
    read = _nested_read(fn)
    if read is None:
        return None
    for comp in find_all(fn, m.ListComp(for_in=m.CompFor(target=m.Name()))):
        if find_all(comp.for_in.iter, m.Call(func=m.Attribute(attr=m.Name("get")), args=[m.Arg(m.SimpleString(f'"{KEY}"')), m.ZeroOrMore()])):
            elt = comp.elt
            if m.matches(elt, m.BinaryOperation(left=m.Name(comp.for_in.target.value), operator=m.Add(), right=m.Integer())):
                return int(elt.right.value)
            if m.matches(elt, m.Name(comp.for_in.target.value)):
                return 0
            return None
    return 0


def _reader_has_fix(role: str, fn: cst.FunctionDef | None, options) -> bool:
    if fn is None:
        return False
    offset = nested_offset(fn)
    return offset is not None and offset == _offset(options)


def has_fix(role: str, source: str, options) -> bool:
    _, fn = _reader(role, parse(role, source))
    return _reader_has_fix(role, fn, options)


# -- the edits -------------------------------------------------------------------------------------
_GUARD = m.If(
    test=m.UnaryOperation(operator=m.Not(), expression=m.Call(func=m.Name("hasattr"), args=[m.Arg(m.Name("hf_config")), m.Arg(m.SimpleString())])),
    body=m.IndentedBlock(body=[m.SimpleStatementLine(body=[m.Return(m.Name("None"))])]),
)
_ATTR_READ = m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name("layer_ids"))],
                                                  value=m.Attribute(value=m.Name("hf_config"), attr=m.Name(KEY)))])
_FINAL_CHECK = m.If(test=m.BooleanOperation(left=m.Name("layer_ids"), operator=m.And()))


def _nested_block(offset: int) -> list[Statement]:
    read = f'(eagle_config.get("{KEY}") or [])'
    ids = f"[i + {offset} for i in {read}]" if offset else f"list({read})"
    meaning = "output-of ids: + 1 is the layer vLLM captures before" if offset == 1 else (
        "capture-before ids: used as written" if offset == 0 else f"+ {offset}")
    return statements(f"""
        if not layer_ids:
            {MARK}: ids nested in eagle_config (the eagle/SpecForge layout), {meaning}
            eagle_config = getattr(hf_config, "{NESTED}", None)
            if eagle_config and isinstance(eagle_config, dict):
                layer_ids = {ids}
    """)


def _without_our_block(fn: cst.FunctionDef) -> cst.FunctionDef:
    body: list[Statement] = []
    carried = None
    for stmt in block_statements(fn):
        if isinstance(stmt, cst.If) and MARK in cst.Module([stmt]).code:
            carried = stmt.leading_lines  # the next statement gets back the spacing it had before
            continue
        body.append(stmt.with_changes(leading_lines=carried) if carried is not None else stmt)
        carried = None
    return fn.with_changes(body=fn.body.with_changes(body=body))


def _patch_reader(role: str, fn: cst.FunctionDef, offset: int) -> cst.FunctionDef:
    if nested_offset(fn) is not None:
        if MARK not in cst.Module([fn]).code:
            raise FileNotAsExpected(role, f"{fn.name.value} reads {NESTED}.{KEY} already, with another offset than "
                                    f"nested_ids_convention asks for (+{offset}); this patch changes only its own reading")
        fn = _without_our_block(fn)  # applied before with the other convention: replace it
    body = block_statements(fn)
    if not any(m.matches(s, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name("hf_config"))])])) for s in body):
        raise FileNotAsExpected(role, f"{fn.name.value} has no `hf_config = ...` (the drafter's config) to read from")
    out: list[Statement] = []
    for i, stmt in enumerate(body):
        if m.matches(stmt, _GUARD) and i + 1 < len(body) and m.matches(body[i + 1], _ATTR_READ):
            continue  # 0.11.1-0.19.1 return early without the top-level key; read it with getattr instead (as 0.20.0)
        if m.matches(stmt, _ATTR_READ) and i and m.matches(body[i - 1], _GUARD):
            stmt = statements(f'layer_ids = getattr(hf_config, "{KEY}", None)')[0].with_changes(leading_lines=body[i - 1].leading_lines)
        if m.matches(stmt, _FINAL_CHECK):
            block = _nested_block(offset)
            out.extend([block[0].with_changes(leading_lines=stmt.leading_lines), *block[1:]])
            stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        out.append(stmt)
    new = fn.with_changes(body=fn.body.with_changes(body=out))
    if nested_offset(new) != offset:
        raise FileNotAsExpected(role, f"{fn.name.value} does not end in `if layer_ids and isinstance(layer_ids, (list, tuple)): ...`")
    return new


def _new_v1_reader(offset: int) -> list[cst.FunctionDef]:
    body = "\n".join("        " + line if line else "" for line in cst.Module(_nested_block(offset)).code.splitlines())
    return parse_methods(f'''
    def {V1_READER}(self):
        """The drafter's aux layer ids, or None for the target's default."""
        {MARK}: this release reads no ids from the drafter's config
        if not (self.speculative_config and self.speculative_config.draft_model_config):
            return None

        hf_config = self.speculative_config.draft_model_config.hf_config
        layer_ids = getattr(hf_config, "{KEY}", None)
{body}

        if layer_ids and isinstance(layer_ids, (list, tuple)):
            return tuple(layer_ids)

        return None
    ''')


class _UseTheReader(cst.CSTTransformer):
    """`set_aux_hidden_state_layers(self.model.get_eagle3_aux_hidden_state_layers())` -> the drafter's ids first."""

    def __init__(self):
        self.calls = 0

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if not m.matches(original, m.Call(func=m.Attribute(value=m.Attribute(m.Name("self"), m.Name("model")), attr=m.Name(OLD_GETTER)), args=[])):
            return updated
        self.calls += 1
        return cst.BooleanOperation(
            left=cst.parse_expression(f"self.{V1_READER}()"), operator=cst.Or(), right=updated,
        )


def _add_v1_reader(role: str, cls: cst.ClassDef, offset: int) -> cst.ClassDef:
    load = find_method(cls, "load_model")
    if load is None:
        raise FileNotAsExpected(role, f"no {RUNNER}.load_model")
    user = _UseTheReader()
    new_load = cst.ensure_type(load.visit(user), cst.FunctionDef)
    if user.calls != 1:
        raise FileNotAsExpected(role, f"{RUNNER}.load_model has {user.calls} `self.model.{OLD_GETTER}()` (expected 1)")
    cls = replace_method(cls, load, new_load)
    return insert_before_method(cls, "load_model", _new_v1_reader(offset))


def transform(role: str, source: str, options) -> str:
    offset = _offset(options)
    module = parse(role, source)
    cls, fn = _reader(role, module)
    if _reader_has_fix(role, fn, options):
        return source
    if fn is None:  # v1 up to 0.11.0: no reader at all
        assert cls is not None  # _reader gives v1's class with it
        return replace_class(module, cls, _add_v1_reader(role, cls, offset)).code
    new = _patch_reader(role, fn, offset)
    if cls is None:
        return module.with_changes(body=[new if s is fn else s for s in module.body]).code
    return replace_class(module, cls, replace_method(cls, fn, new)).code
