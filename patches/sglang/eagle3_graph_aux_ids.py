"""SGLang: CUDA graphs capture the drafter's aux layer ids, not the defaults (0.4.9 - 0.5.10.post1).

From 0.4.9 `ModelRunner.initialize` reads the drafter's `eagle_config.eagle_aux_hidden_state_layer_ids`
and calls `set_eagle3_layers_to_capture(ids)`, but only after `init_cuda_graphs()` /
`init_device_graphs()`; and `CudaGraphRunner.__init__` (and, 0.5.6+, `ModelRunner._dummy_run`,
which the kernel warm-up runs) call `set_eagle3_layers_to_capture()` with no ids, the defaults
`[2, N // 2, N - 3]`. The layer list is Python control flow, so the captured decode and
target-verify graphs replay the defaults while eager passes use the drafter's ids: a drafter
trained on other layers gets wrong inputs on every graph replay, silently.

0.5.11 fixed it this way, and so does this patch:

- `ModelRunner.initialize`: the statement that applies the drafter's ids moves to just before the
  statement that builds the graphs (0.5.11: `init_aux_hidden_state_capture()` "must be called
  BEFORE init_device_graphs()");
- `CudaGraphRunner.__init__` and `ModelRunner._dummy_run`: their no-argument calls go (0.5.11 has
  neither); the ids the model runner set are the ones captured.

Range: 0.4.9 (first release reading the drafter's ids) to 0.5.10.post1 (the last before the fix);
every release in it was read: the same two statements in `initialize`, the same call in the graph runner.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._cst import (
    Statement, block_statements, find_all, find_class, find_method, parse, replace_class, replace_method, require_class, statements,
    suite_statements,
)

ID = "sglang-eagle3-graph-aux-ids"
DESCRIPTION = "the drafter's aux layer ids are set before CUDA-graph capture, so graph replays feed the same layers as eager passes"
WHY = (
    "sglang 0.5.11 model_runner.py ModelRunner.init_aux_hidden_state_capture, called before init_device_graphs(); "
    "CudaGraphRunner no longer calls set_eagle3_layers_to_capture()",
    "research: shared/research/sglang-eagle3.md key finding 7 and section 2.1 (0.4.9-0.5.10: graphs use the defaults)",
)
ENGINE = "sglang"
VERSIONS = SpecifierSet(">=0.4.9,<=0.5.10.post1")
OPTIONS: dict = {}
ORDER = 40

HOOK = "set_eagle3_layers_to_capture"
RUNNER = "ModelRunner"
GRAPH_RUNNER = "CudaGraphRunner"
GRAPH_BUILDERS = ("init_cuda_graphs", "init_device_graphs")
EXECUTOR_DIR = "sglang/srt/model_executor"
MARK = f"# compat patch {ID}"


def find_files(tree) -> dict[str, str]:
    found = {}
    for role, cls in (("runner", RUNNER), ("graph_runner", GRAPH_RUNNER)):
        for relpath in tree.grep_re(rf"(?m)^class {cls}\b", under=EXECUTOR_DIR):
            found[role] = relpath
            break
        else:
            raise FileNotFoundError(f"no module under {EXECUTOR_DIR} defines {cls}")
    return found


# -- recognising the statements ----------------------------------------------------------------
def _hook_calls(node: cst.CSTNode) -> list[cst.Call]:
    return find_all(node, m.Call(func=m.Attribute(attr=m.Name(HOOK))))


def _is_reset(stmt: cst.BaseStatement) -> bool:
    """`if <eagle3>: <x>.set_eagle3_layers_to_capture()`: an `if` whose one statement sets the defaults."""
    if not isinstance(stmt, cst.If) or stmt.orelse is not None or len(stmt.body.body) != 1:
        return False
    calls = _hook_calls(stmt.body)
    return len(calls) == 1 and not calls[0].args and m.matches(
        stmt.body.body[0], m.SimpleStatementLine(body=[m.Expr(m.Call(func=m.Attribute(attr=m.Name(HOOK)), args=[]))])
    )


def _builds_graphs(stmt: cst.BaseStatement) -> bool:
    return bool(m.findall(stmt, m.Call(func=m.Attribute(value=m.Name("self"), attr=m.OneOf(*(m.Name(n) for n in GRAPH_BUILDERS))))))


def _applies_ids(stmt: cst.BaseStatement) -> bool:
    return any(c.args for c in _hook_calls(stmt))


def _resets_in(node: cst.CSTNode) -> int:
    return len(m.findall(node, m.If(body=m.IndentedBlock(body=[m.SimpleStatementLine(
        body=[m.Expr(m.Call(func=m.Attribute(attr=m.Name(HOOK)), args=[]))])]))))


# -- what the files have -------------------------------------------------------------------------
def _runner_parts(role: str, module: cst.Module) -> tuple[cst.ClassDef, cst.FunctionDef, int, int]:
    cls = find_class(module, RUNNER)
    init = find_method(cls, "initialize") if cls is not None else None
    if init is None or cls is None:
        raise FileNotAsExpected(role, f"no {RUNNER}.initialize")
    body = block_statements(init)
    graphs = [i for i, s in enumerate(body) if _builds_graphs(s)]
    applies = [i for i, s in enumerate(body) if _applies_ids(s)]
    if len(graphs) != 1 or len(applies) != 1:
        raise FileNotAsExpected(
            role, f"{RUNNER}.initialize is not as expected: {len(graphs)} statement(s) building the graphs "
            f"({' / '.join(GRAPH_BUILDERS)}) and {len(applies)} applying the drafter's ids ({HOOK}(ids)); expected 1 and 1",
        )
    return cls, init, graphs[0], applies[0]


def _runner_has_fix(role: str, source: str) -> bool:
    module = parse(role, source)
    cls = find_class(module, RUNNER)
    init = find_method(cls, "initialize") if cls is not None else None
    if init is not None and any("init_aux_hidden_state_capture" in module.code_for_node(s) for s in init.body.body):
        return True  # 0.5.11+: its own method, called before the graphs
    cls, init, graphs, applies = _runner_parts(role, module)
    dummy = find_method(cls, "_dummy_run")
    resets = _resets_in(dummy) if dummy is not None else 0
    if applies > graphs:
        return False
    if resets:
        raise FileNotAsExpected(role, f"{RUNNER}: the drafter's ids are applied before the graphs, but _dummy_run still resets them to the defaults")
    return True


def _graph_runner_has_fix(role: str, source: str) -> bool:
    cls = require_class(role, parse(role, source), GRAPH_RUNNER)
    init = find_method(cls, "__init__")
    return init is None or not _resets_in(init)


def has_fix(role: str, source: str, options) -> bool:
    if role == "runner":
        return _runner_has_fix(role, source)
    if role == "graph_runner":
        return _graph_runner_has_fix(role, source)
    raise FileNotAsExpected(role, f"unknown role {role!r} for patch {ID}")


# -- the edits -----------------------------------------------------------------------------------
class _DropResets(cst.CSTTransformer):
    """Remove each `if ...: x.set_eagle3_layers_to_capture()`; its comment lines say why it went."""

    def __init__(self, why: str):
        self.why = why
        self.dropped = 0

    def _drop(self, block: cst.IndentedBlock) -> cst.IndentedBlock:
        out: list[Statement] = []
        carried: list[cst.EmptyLine] = []
        for stmt in suite_statements(block):
            if _is_reset(stmt):
                self.dropped += 1
                note = statements(f"{MARK}: {self.why}\npass")[0].leading_lines
                carried = [*stmt.leading_lines, *note]
                continue
            if carried:
                stmt = stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines])
                carried = []
            out.append(stmt)
        if carried:  # the reset was the block's last statement: keep the note on a `pass`
            out.append(statements("pass")[0].with_changes(leading_lines=carried))
        return block.with_changes(body=out)

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        return self._drop(updated) if any(_is_reset(s) for s in updated.body) else updated


def _drop_resets(role: str, cls: cst.ClassDef, method: str, why: str, required: bool) -> cst.ClassDef:
    fn = find_method(cls, method)
    if fn is None:
        if required:
            raise FileNotAsExpected(role, f"no {cls.name.value}.{method}")
        return cls
    dropper = _DropResets(why)
    new = cst.ensure_type(fn.visit(dropper), cst.FunctionDef)
    if required and not dropper.dropped:
        raise FileNotAsExpected(role, f"{cls.name.value}.{method} has no `if ...: ...{HOOK}()` to remove")
    return replace_method(cls, fn, new)


def _patch_runner(role: str, source: str) -> str:
    module = parse(role, source)
    cls, init, graphs, applies = _runner_parts(role, module)
    body = block_statements(init)
    note = statements(f"{MARK}: applied before the graphs are built, so they capture the drafter's ids (as 0.5.11)\npass")[0].leading_lines
    moved = body[applies].with_changes(leading_lines=[*body[applies].leading_lines, *note])
    builder = body[graphs]
    if not (builder.leading_lines and builder.leading_lines[0].comment is None):
        builder = builder.with_changes(leading_lines=[cst.EmptyLine(indent=False), *builder.leading_lines])
    rest = body[:graphs] + [moved, builder] + body[graphs + 1:applies] + body[applies + 1:]
    new_init = init.with_changes(body=init.body.with_changes(body=rest))
    cls = replace_method(cls, init, new_init)
    cls = _drop_resets(role, cls, "_dummy_run", "initialize() applied the drafter's ids already", required=False)
    return replace_class(module, require_class(role, module, RUNNER), cls).code  # (_runner_parts found it)


def _patch_graph_runner(role: str, source: str) -> str:
    module = parse(role, source)
    cls = require_class(role, module, GRAPH_RUNNER)
    new = _drop_resets(role, cls, "__init__", "ModelRunner.initialize applied the drafter's ids before the graphs", required=True)
    return replace_class(module, cls, new).code


def transform(role: str, source: str, options) -> str:
    if has_fix(role, source, options):
        return source
    return _patch_runner(role, source) if role == "runner" else _patch_graph_runner(role, source)
