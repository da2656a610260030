"""vLLM CPU: an MLA target (DeepSeek-V3, Kimi-K2) with an EAGLE-3 drafter on the CPU backend.

The target's MLA layers use CPU_MLA, which supports kernel block size 16 only; the drafter's
ordinary attention layers use CPU_ATTN. From 0.29.0 `CPUAttentionBackend` declares
`[MultipleOf(32)]` (0.28.0, where CPU_MLA appeared, still said `MultipleOf(16)`), so KV-cache
set-up finds no size both accept: "No common block size for 16 (CPU_MLA: [16]; CPU_ATTN:
[MultipleOf(32)])". The CPU attention kernel still has a block-16 path: `_get_attn_isa` picks
"vec16" when the block size is not a multiple of 32. Declaring 16 as well lets
`select_common_block_size` settle on 16 for the pair; every other configuration keeps
choosing as before (a multiple of 32 is still accepted and preferred when it is the manager's size).

Range: 0.29.0 (first release with `MultipleOf(32)` next to CPU_MLA's `[16]`) to 0.33.0 (the
newest release read); a newer release is not offered until it has been checked.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._cst import Statement, block_statements, find_class, find_method, parse, statements

ID = "vllm-cpu-attn-block16"
DESCRIPTION = "CPU_ATTN also accepts block size 16, so an MLA target (CPU_MLA: [16]) and an EAGLE-3 drafter share the KV cache"
WHY = (
    "error on vLLM CPU 0.29+: No common block size for 16 (CPU_MLA: [16]; CPU_ATTN: [MultipleOf(32)])",
    "code: vllm/v1/attention/backends/cpu_attn.py get_supported_kernel_block_sizes and _get_attn_isa ('vec16' path); "
    "vllm/v1/attention/backends/mla/cpu_mla.py (CPU_MLA: [16], from 0.28.0); vllm/v1/worker/utils.py select_common_block_size",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.29.0,<=0.33.0")
FIXES_ERRORS = ("No common block size for 16",)  # vllm/v1/worker/utils.py select_common_block_size
OPTIONS: dict = {}
ORDER = 40

BACKEND = "CPUAttentionBackend"
METHOD = "get_supported_kernel_block_sizes"
BLOCK = 16
MARK = f"# compat patch {ID}"


def find_files(tree) -> dict[str, str]:
    for relpath in tree.grep_re(rf"(?m)^class {BACKEND}\b", under="vllm/v1/attention"):
        return {"backend": relpath}
    raise FileNotFoundError(f"no module defines {BACKEND} under vllm/v1/attention")


def _returned_list(role: str, source: str) -> tuple[cst.Module, cst.List]:
    module = parse(role, source)
    cls = find_class(module, BACKEND)
    method = find_method(cls, METHOD) if cls is not None else None
    if method is None:
        raise FileNotAsExpected(role, f"no {BACKEND}.{METHOD}")
    if '"vec16"' not in source:
        raise FileNotAsExpected(role, "the CPU attention kernel selection has no 'vec16' (block size 16) path")
    returns = [cst.ensure_type(s.body[0], cst.Return) for s in block_statements(method)
               if isinstance(s, cst.SimpleStatementLine) and m.matches(s, m.SimpleStatementLine(body=[m.Return(m.List())]))]
    if len(returns) != 1:
        raise FileNotAsExpected(role, f"{BACKEND}.{METHOD} does not end in one `return [...]`")
    return module, cst.ensure_type(returns[0].value, cst.List)  # matched `return [...]`


def _accepts(node: cst.List, size: int) -> bool:
    for element in node.elements:
        value = element.value
        if isinstance(value, cst.Integer) and int(value.value) == size:
            return True
        if m.matches(value, m.Call(func=m.Name("MultipleOf"), args=[m.Arg(m.Integer())])):
            base = int(cst.ensure_type(cst.ensure_type(value, cst.Call).args[0].value, cst.Integer).value)  # as matched
            if base and size % base == 0:
                return True
    return False


def has_fix(role: str, source: str, options) -> bool:
    _, node = _returned_list(role, source)
    return _accepts(node, BLOCK)


class _Declare16(cst.CSTTransformer):
    def __init__(self, target: cst.List):
        self.target = target

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if original.name.value != METHOD:
            return updated
        body: list[Statement] = []
        for stmt in block_statements(updated):
            if m.matches(stmt, m.SimpleStatementLine(body=[m.Return(m.List())])):
                comment = statements(f"{MARK}: the kernel's vec16 path serves CPU_MLA's block size\npass")[0].leading_lines
                stmt = stmt.with_changes(leading_lines=[*stmt.leading_lines, *comment])
            body.append(stmt)
        return updated.with_changes(body=updated.body.with_changes(body=body))

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.List:
        if original is not self.target:
            return updated
        first = cst.Element(cst.Integer(str(BLOCK)), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated.with_changes(elements=[first, *updated.elements])


def transform(role: str, source: str, options) -> str:
    module, node = _returned_list(role, source)
    if _accepts(node, BLOCK):
        return source
    return module.visit(_Declare16(node)).code
