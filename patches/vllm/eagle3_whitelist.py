"""vLLM: add target model types to the EAGLE-3 target whitelist in `SpeculativeConfig._verify_args`.

Before 0.18.0 a Kimi-K2 / K2.5 / DeepSeek-V3 target with an EAGLE-3 drafter is refused at
config time: "Eagle3 is only supported for ['llama', 'qwen', ...] models. Got
...model_type='kimi_k2'". The list is `eagle3_target_supported` (0.10.1-0.16.0) or
`aux_hidden_states_supported` (0.17.0-0.21.0), in `vllm/config/__init__.py` (0.10.1-0.10.2)
or `vllm/config/speculative.py` (0.11.0+); it is gone from 0.22.0. The check is a substring
test (`entry in model_type`), so `kimi_k2` also admits `kimi_k25` and `deepseek_v3` admits
`deepseek_v32`: a requested type is added only when no entry already matches it.

Whitelisting alone is not enough before 0.18.0: the target class must also implement the
EAGLE-3 interface (patch vllm-deepseek-eagle3-aux).
"""

from __future__ import annotations

import re
from typing import Sequence

import libcst as cst
from packaging.specifiers import SpecifierSet

from compat.core.errors import UsageError

from .. import FileNotAsExpected
from .._cst import parse

ID = "vllm-eagle3-whitelist"
DESCRIPTION = "add kimi_k2, kimi_k25, deepseek_v3, deepseek_v2 (and --model-type TYPE) to the EAGLE-3 target whitelist"
WHY = (
    "https://github.com/vllm-project/vllm/issues/31254 (Add kimi_k2 supported eagle3: the whitelist refuses Kimi-K2)",
    "https://github.com/vllm-project/vllm/pull/32079 (EAGLE-3 for DeepSeek V3/V3.2; closed, landed differently in 0.18.0)",
    "https://github.com/vllm-project/vllm/pull/36361 (Kimi-K2.5 MLA EAGLE-3; in 0.18.0, which added the four types)",
    "research: shared/research/vllm-eagle3.md sections 2.1-2.2 and 7.3",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.10.1,<=0.21.0")
FIXES_ERRORS = ("Eagle3 is only supported for", "eagle3 is only supported for")  # SpeculativeConfig (0.17: f"{method} ...")
OPTIONS = {"model_types": ("kimi_k2", "kimi_k25", "deepseek_v3", "deepseek_v2")}
ORDER = 10

_MESSAGE = b"only supported for"
_MODEL_TYPE = b"hf_text_config.model_type"
MODEL_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


# -- options -------------------------------------------------------------------------------------
def add_args(group) -> None:
    group.add_argument(
        "--model-type", metavar="TYPE", action="append", default=[], dest="model_types",
        help=f"also whitelist this target model_type (repeatable; default {', '.join(OPTIONS['model_types'])})",
    )


def options_for_target(model_type: str | None, architecture: str | None) -> dict:
    """A target whose (text config's) model_type no default entry matches needs it added."""
    if not model_type or not MODEL_TYPE_RE.match(model_type) or not missing(OPTIONS["model_types"], [model_type]):
        return {}
    return {"model_types": (model_type,)}


def _checked(options) -> tuple[str, ...]:
    """The types to whitelist; each becomes a string literal in vLLM's source, so only model_type spellings."""
    types = tuple(options["model_types"])
    bad = [t for t in types if not isinstance(t, str) or not MODEL_TYPE_RE.match(t)]
    if bad:
        raise UsageError(f"--model-type {bad[0]!r}: not a model_type",
                         hint="a config.json model_type such as kimi_k2 or glm4_moe (lower case, digits, _ . -)")
    return types


def find_files(tree) -> dict[str, str]:
    """The module with `SpeculativeConfig._verify_args`: the one that words the refusal."""
    for under in ("vllm/config", "vllm"):
        hits = [f for f in tree.grep(_MESSAGE, under=under) if _MODEL_TYPE in tree.read_bytes(f)]
        if hits:
            return {"config": hits[0]}
    raise FileNotFoundError("no vllm/config module words the EAGLE-3 refusal ('only supported for ... model_type')")


class _FindWhitelist(cst.CSTVisitor):
    """`NAME = ["llama", ...]` where NAME is later iterated in a comprehension (`for m in NAME`)."""

    def __init__(self):
        self.lists: dict[str, cst.List] = {}
        self.iterated: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name) and isinstance(node.value, cst.List):
            values = _strings(node.value)
            if values is not None and "llama" in values:
                self.lists[node.targets[0].target.value] = node.value

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if isinstance(node.iter, cst.Name):
            self.iterated.add(node.iter.value)


def _strings(node: cst.List) -> list[str] | None:
    out: list[str] = []
    for element in node.elements:
        if not isinstance(element.value, cst.SimpleString):
            return None
        value = element.value.evaluated_value
        if not isinstance(value, str):  # a bytes literal: not a list of model types
            return None
        out.append(value)
    return out


def _whitelist(relpath: str, module: cst.Module) -> tuple[str, cst.List]:
    finder = _FindWhitelist()
    module.visit(finder)
    names = [name for name in finder.lists if name in finder.iterated]
    if len(names) != 1:
        raise FileNotAsExpected(
            relpath, "no single EAGLE-3 whitelist (a list of model-type strings with 'llama' tested by substring) found"
            if not names else f"several candidate whitelists: {', '.join(names)}",
        )
    return names[0], finder.lists[names[0]]


def missing(entries: Sequence[str], wanted) -> list[str]:
    """The requested types no entry matches (vLLM's test: `entry in model_type`), in order."""
    out: list[str] = []
    for model_type in wanted:
        if not any(entry in model_type for entry in [*entries, *out]):
            out.append(model_type)
    return out


def entries(relpath: str, source: str) -> tuple[str, list[str]]:
    """(variable name, list entries) of the whitelist in `source`."""
    name, node = _whitelist(relpath, parse(relpath, source))
    return name, _strings(node) or []


def has_fix(role: str, source: str, options) -> bool:
    wanted = _checked(options)
    _, listed = entries(role, source)
    return not missing(listed, wanted)


class _AddTypes(cst.CSTTransformer):
    def __init__(self, target: cst.List, values: list[str]):
        self.target = target
        self.values = values

    def leave_List(self, original: cst.List, updated: cst.List) -> cst.List:
        if original is not self.target:
            return updated
        from .._cst import append_list_strings

        return append_list_strings(updated, self.values)


def transform(role: str, source: str, options) -> str:
    wanted = _checked(options)
    module = parse(role, source)
    _, node = _whitelist(role, module)
    to_add = missing(_strings(node) or [], wanted)
    if not to_add:
        return source
    return module.visit(_AddTypes(node, to_add)).code
