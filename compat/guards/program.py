"""A spec_validation probe fact read back: the functions (their statements, or what they assign when too long to read),
the classes whose construction the walk runs (fields, defaults, bounds), and the module constants they read.

    program = Program.of(fact)      # decoded once per fact
    program.functions["SpeculativeConfig.__post_init__"].body

`render` writes a raise's message as the release would, holes filled where the values are known (`{expr}` where not).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compat.core.identity_memo import IdentityMemo
from compat.guards.values import Obj, Unknown


@dataclass(frozen=True)
class Function:
    key: str
    file: str
    line: int
    params: tuple[str, ...]
    defaults: dict[str, str]
    kwarg: str | None
    method: bool
    is_property: bool
    body: list | None  # None: too long to read (effects only)
    effects: tuple[str, ...] = ()
    receiver: str | None = None  # a module function handed an instance of this class first (handle_x(server_args))
    quiet: bool = False  # a handler of other settings: a raise in it counts only where the values reach it for sure
    classmethod: bool = False  # its first parameter is the class

    @property
    def owned(self) -> bool:
        """Its first parameter is the object validated (a method's self, or a receiver's)."""
        return self.method or self.receiver is not None

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ClassSpec:
    """A class whose construction the walk runs: its fields and the functions its construction calls, in order."""

    name: str
    file: str
    line: int
    fields: dict[str, dict[str, Any]]
    construction: tuple[str, ...]
    bases: tuple[str, ...] = ()
    model_type: str | None = None  # a transformers config class's `model_type` (what isinstance of a config answers to)
    init: str | None = None  # the key of its __init__ when read (a class built like a function)
    closed: bool = False  # every field it has is listed (hasattr of another name is False)


@dataclass
class Program:
    functions: dict[str, Function] = field(default_factory=dict)
    classes: dict[str, ClassSpec] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)
    constant_at: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, fact: dict[str, Any]) -> Program:
        """The program of a spec_validation fact, decoded once per fact object."""
        return _DECODED.get(fact, cls._decode)

    @classmethod
    def _decode(cls, fact: dict[str, Any]) -> Program:
        program = cls(constants=dict(fact.get("constants") or {}), constant_at=dict(fact.get("constant_at") or {}))
        for key, entry in (fact.get("functions") or {}).items():
            program.functions[key] = Function(
                key, entry["file"], entry["line"], tuple(entry.get("params") or ()), dict(entry.get("defaults") or {}),
                entry.get("kwarg"), bool(entry.get("method")), bool(entry.get("property")), entry.get("body"),
                tuple(entry.get("effects") or ()), entry.get("receiver"), bool(entry.get("quiet")),
                bool(entry.get("classmethod")))
        for spec in fact.get("classes") or []:
            program.classes[spec["name"]] = ClassSpec(spec["name"], spec["file"], spec["line"], dict(spec["fields"]),
                                                      tuple(spec["construction"]), tuple(spec.get("bases") or ()),
                                                      spec.get("model_type"), spec.get("init"), bool(spec.get("closed")))
        return program


_DECODED: IdentityMemo[dict, Program] = IdentityMemo(keep=64)  # a fact's program, while it is held


def render(node: ast.expr, value: Callable[[ast.expr], Any]) -> str:
    """A message expression as the release would print it: literal text, and each hole's value where known."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                inner = part.value
                shown = value(inner)
                text = ast.unparse(inner)
                self_doc = False
                if isinstance(shown, (Unknown, Obj)):
                    parts.append("{" + text + "}")
                    continue
                spec = ast.unparse(part.format_spec)[2:-1] if part.format_spec is not None else ""
                try:
                    rendered = format(repr(shown) if part.conversion == ord("r") or self_doc else shown, spec)
                except (ValueError, TypeError):
                    rendered = str(shown)
                parts.append(rendered)
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return render(node.left, value) + render(node.right, value)
    shown = value(node)
    return shown if isinstance(shown, str) else ast.unparse(node)
