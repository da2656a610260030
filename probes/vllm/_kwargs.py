"""What vLLM's `get_kwargs` (vllm/engine/arg_utils.py) makes of a config field's annotation: the argparse type,
choices and nargs a generated option gets (a reader, not a probe).

get_kwargs looks at the annotation's top-level members (`A | B | None`), in this order: a dataclass (a JSON value),
`bool | str | None` (an optional-valued flag, from 0.3x), bool (BooleanOptionalAction: `--no-x` too), Literal
(choices, sorted by literal_to_kwargs; a Literal joined with str gets a metavar instead, where the release says
so), tuple/list/set (nargs "+", typed items), int, float, dict with str or a class (any text), dict (JSON), str or
a class (text). An Optional field's choices also take "None". The release's own wording of these rules is read
from its source (`Traits`), so a rule that changed between releases is followed per release.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from compat.probes.vllm._common import arg_utils_file, resolve_name
from compat.core.tree import EngineTree

SCALARS = ("int", "float", "str")
COLLECTIONS = {"list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple", "set": "set", "Set": "set",
               "Sequence": "list"}


@dataclass(frozen=True)
class Traits:
    """How this release's get_kwargs words its rules (read from arg_utils.py's text)."""

    sorted_choices: bool = True  # literal_to_kwargs returns sorted(choices)
    metavar_with_str: bool = False  # Literal | str: metavar, not choices (any text is taken)
    optional_flag: bool = False  # bool | str | None: nargs="?", const=True
    none_choice: bool = True  # an Optional field's choices take "None"
    none_as_text: bool = True  # ... appended as the text "None" (older) or as None (argparse lists it unquoted)


def traits(tree: EngineTree) -> Traits:
    relpath = arg_utils_file(tree)
    text = tree.read_bytes(relpath).decode("utf-8", "replace") if relpath else ""
    start = text.find("def literal_to_kwargs")
    body = text[start:text.find("\ndef ", start + 1)] if start >= 0 else ""
    return Traits(sorted_choices="sorted(" in body or start < 0, metavar_with_str='"metavar"' in body,
                  optional_flag="{bool, str, type(None)}" in text, none_choice='["choices"].append(' in text,
                  none_as_text='["choices"].append("None")' in text)


def members(annotation: ast.AST) -> list[ast.AST]:
    """The top-level members of `A | B`, `Optional[A]`, `Union[A, B]`, `Annotated[A, ...]`."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return members(annotation.left) + members(annotation.right)
    if isinstance(annotation, ast.Subscript):
        head = _head(annotation)
        inner = annotation.slice
        if head in ("Optional", "Union"):
            return [m for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner]) for m in members(e)]
        if head in ("Annotated", "SkipValidation"):  # pydantic's wrappers: get_kwargs sees the type inside
            return members(inner.elts[0] if isinstance(inner, ast.Tuple) else inner)
    return [annotation]


def _head(node: ast.AST) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


ClassFinder = Callable[[str], str]  # a class name -> "dataclass" | "dict" | "class" (cached by the caller)


CLASS_HEADER = re.compile(rb"^class (\w+)\b(\([^)]*\))?", re.M)
DECORATOR = re.compile(rb"^[ \t]*@(\w+\.)?(dataclass|config)\b")


def class_shapes(tree: EngineTree) -> dict[str, str]:
    """Every top-level class of the tree -> what get_kwargs makes of it in an annotation, read from the headers'
    bytes in one pass (no parse: the homes of these classes are large): a @dataclass / @config class parses JSON,
    a dict subclass is a dict (contains_type is issubclass), anything else is a class."""
    out: dict[str, str] = {}
    for relpath in tree.files("vllm"):
        data = tree.read_bytes(relpath)
        for found in CLASS_HEADER.finditer(data):
            bases = found.group(2) or b""
            shape = ("dataclass" if _decorated(data, found.start()) else
                     "dict" if re.match(rb"\(\s*(dict|Dict)\b", bases) else "class")
            out.setdefault(found.group(1).decode(), shape)
    return out


def _decorated(data: bytes, start: int) -> bool:
    """A @dataclass / @config line among the decorator lines right above the class header at start."""
    end = start - 1
    while end > 0:
        begin = data.rfind(b"\n", 0, end) + 1
        line = data[begin:end]
        if not line.lstrip().startswith(b"@"):
            return False
        if DECORATOR.match(line):
            return True
        end = begin - 1
    return False


def kind_of(tree: EngineTree, relpath: str, member: ast.AST, find: ClassFinder) -> str:
    """none | bool | literal | list/tuple/set | int | float | str | dict | dataclass | class."""
    if isinstance(member, ast.Constant):
        return "none" if member.value is None else "class"  # a quoted forward reference: a class
    head = _head(member)
    if head == "None":
        return "none"
    if head == "Literal":
        return "literal"
    if head in COLLECTIONS:
        return COLLECTIONS[head]
    if head in ("dict", "Dict", "Mapping"):
        return "dict"
    if head in ("bool", "int", "float", "str"):
        return head
    if isinstance(member, ast.Name):
        if literal_values(tree, relpath, member):
            return "literal"
        alias = resolve_name(tree, relpath, member.id)
        if alias is not None and alias[1].value is not None and not isinstance(alias[1].value, ast.Call):
            return "alias"
        return find(member.id)  # a dict subclass is a dict: contains_type is issubclass
    return "class"


def derive(tree: EngineTree, relpath: str, annotation: ast.AST, arg, rules: Traits, find: ClassFinder,
           _depth: int = 0) -> None:
    """Set arg.value / choices / negatable / nargs / item as get_kwargs would (arg: probes.vllm._arguments.Argument;
    find: the class definition of a name, cached by the caller)."""
    parts = members(annotation)
    kinds = [kind_of(tree, relpath, m, find) for m in parts]
    if "alias" in kinds and _depth < 3:  # `X = int | list[int]` used as `x: X`: its members
        i = kinds.index("alias")
        assign = resolve_name(tree, relpath, getattr(parts[i], "id", ""))
        if assign is not None and assign[1].value is not None:
            value = assign[1].value
            derive(tree, assign[0], ast.BinOp(value, ast.BitOr(), ast.Constant(None)) if "none" in kinds else value,
                   arg, rules, find, _depth + 1)
            return
    has = set(kinds)
    optional = "none" in has
    if "dataclass" in has:
        arg.value = "json"
    elif rules.optional_flag and has - {"none"} == {"bool", "str"}:
        arg.value, arg.nargs = "str", "?"
    elif "bool" in has:
        arg.value, arg.negatable = "bool", True
    elif "literal" in has:
        choices = literal_values(tree, relpath, annotation)
        arg.value = "int" if choices and all(type(c) is int for c in choices) else "str"  # type(options[0])
        if not (rules.metavar_with_str and "str" in has):
            arg.choices = _choices(choices, optional, rules)
    elif has & {"list", "tuple", "set"}:
        arg.value, arg.nargs = "list", "+"
        collection = parts[next(i for i, k in enumerate(kinds) if k in ("list", "tuple", "set"))]
        item = collection.slice.elts[0] if isinstance(collection, ast.Subscript) and isinstance(collection.slice, ast.Tuple) \
            else getattr(collection, "slice", None)
        item_kind = kind_of(tree, relpath, item, find) if item is not None else "class"
        arg.item = item_kind if item_kind in ("int", "float", "str") else None
    elif "int" in has or "float" in has:
        arg.value = "int" if "int" in has else "float"
    elif "dict" in has:
        arg.value = "str" if has & {"str", "class", "dataclass"} else "json"
    else:
        arg.value = "str" if has & {"str", "class"} else "unknown"


def literal_values(tree: EngineTree, relpath: str, node: ast.AST | None, _seen: frozenset = frozenset()) -> list:
    """The values of a `Literal[...]` (strings and numbers), through `X | None`, Optional, Union, Annotated,
    SkipValidation and aliases, in this module or imported ones."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool) else []
    if isinstance(node, ast.Tuple):
        return [v for elt in node.elts for v in literal_values(tree, relpath, elt, _seen)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return literal_values(tree, relpath, node.left, _seen) + literal_values(tree, relpath, node.right, _seen)
    if isinstance(node, ast.Subscript):
        head = _head(node)
        if head in ("Literal", "Optional", "Union", "Annotated", "SkipValidation"):
            inner = node.slice
            if head in ("Annotated", "SkipValidation") and isinstance(inner, ast.Tuple):
                inner = inner.elts[0]
            return literal_values(tree, relpath, inner, _seen)
        return []
    if isinstance(node, ast.Name) and node.id not in _seen:
        found = resolve_name(tree, relpath, node.id)
        if found and found[1].value is not None:
            return literal_values(tree, found[0], found[1].value, _seen | {node.id})
    return []


def _choices(choices: list, optional: bool, rules: Traits) -> list:
    out: list = sorted(choices) if rules.sorted_choices else list(choices)
    return [*out, "None" if rules.none_as_text else None] if optional and rules.none_choice else out
