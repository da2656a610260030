"""Small libcst helpers the patches share: find a class, add a base, an import, methods, replace a method;
refuse the file (FileNotAsExpected) when the class or the import to extend is not there.

Each helper keeps the file's own formatting (libcst round-trips every byte it does not
touch) and copies the separator style of its neighbours, so a one-line base list stays
one line and a one-per-line list gets one more line.
"""

from __future__ import annotations

import functools
import textwrap
from typing import Any, Iterable, Sequence

import libcst as cst
import libcst.helpers
import libcst.matchers as m

from . import FileNotAsExpected

# What a module or an indented block holds (libcst types their bodies as BaseStatement, whose only
# kinds are these two; both carry leading_lines).
Statement = cst.SimpleStatementLine | cst.BaseCompoundStatement


def parse(relpath: str, source: str) -> cst.Module:
    try:
        return _parse(source)
    except cst.ParserSyntaxError as err:
        raise FileNotAsExpected(relpath, f"libcst cannot parse it ({err.message} at line {err.raw_line})") from None


@functools.lru_cache(maxsize=16)
def _parse(source: str) -> cst.Module:
    """Parsing a big engine module takes ~0.3 s and a check and its transform parse the same
    text; libcst trees are immutable, so one parse can serve both."""
    return cst.parse_module(source)


def find_class(module: cst.Module, name: str) -> cst.ClassDef | None:
    """The top-level class `name` (patches only ever edit top-level classes)."""
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == name:
            return stmt
    return None


def require_class(role: str, module: cst.Module, name: str) -> cst.ClassDef:
    """The top-level class `name`, else FileNotAsExpected: a patch that edits a class refuses a file without it."""
    cls = find_class(module, name)
    if cls is None:
        raise FileNotAsExpected(role, f"no top-level class {name}")
    return cls


def find_method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            return stmt
    return None


def base_names(cls: cst.ClassDef) -> list[str]:
    names = []
    for arg in cls.bases:
        value = arg.value
        if isinstance(value, cst.Name):
            names.append(value.value)
        elif isinstance(value, cst.Attribute):
            names.append(value.attr.value)
    return names


def imported_names(module: cst.Module) -> set[str]:
    """Names bound by top-level `from X import a, b as c` statements."""
    names: set[str] = set()
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    bound = alias.asname.name if alias.asname else alias.name
                    if isinstance(bound, cst.Name):
                        names.add(bound.value)
    return names


def _append_separated(items: Sequence, new_items: Iterable, comma_attr: str = "comma"):
    """`items` + `new_items`, each new item separated the way the existing items are.

    A list written one item per line (with a trailing comma) gets one more line per item,
    reusing the separator between its last two items; any other list gets `, item` on the
    line of its last item. The last item's trailing comma (or its absence) moves to the new last.
    """
    items = list(items)
    new_items = list(new_items)
    if not new_items:
        return items
    last = items[-1]
    trailing = getattr(last, comma_attr)
    if len(items) >= 2 and isinstance(trailing, cst.Comma) and isinstance(getattr(items[-2], comma_attr), cst.Comma):
        separator = getattr(items[-2], comma_attr)  # one item per line (magic trailing comma): one more line
    else:
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    out = items[:-1] + [last.with_changes(**{comma_attr: separator})]
    for item in new_items[:-1]:
        out.append(item.with_changes(**{comma_attr: separator}))
    out.append(new_items[-1].with_changes(**{comma_attr: trailing}))
    return out


def append_list_strings(node: cst.List, values: Sequence[str]) -> cst.List:
    """`["a", "b"]` -> `["a", "b", "c"]`, in the quote style of the existing strings."""
    quote = '"'
    for element in node.elements:
        if isinstance(element.value, cst.SimpleString) and element.value.quote in ('"', "'"):
            quote = element.value.quote
            break
    new = [cst.Element(cst.SimpleString(f"{quote}{v}{quote}")) for v in values]
    return node.with_changes(elements=_append_separated(node.elements, new))


def add_base(cls: cst.ClassDef, name: str) -> cst.ClassDef:
    if name in base_names(cls):
        return cls
    return cls.with_changes(bases=_append_separated(cls.bases, [cst.Arg(cst.Name(name))]))


class _AddImportedName(cst.CSTTransformer):
    def __init__(self, module_suffixes: tuple[str, ...], name: str):
        self.module_suffixes = module_suffixes
        self.name = name
        self.done = False

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        if self.done or original.module is None or isinstance(updated.names, cst.ImportStar):
            return updated
        dotted = libcst.helpers.get_full_name_for_node(original.module) or ""
        dotted = "." * len(original.relative) + dotted
        if not dotted.endswith(self.module_suffixes):
            return updated
        self.done = True
        return updated.with_changes(names=_append_separated(updated.names, [cst.ImportAlias(cst.Name(self.name))]))


def add_import_name(module: cst.Module, from_modules: tuple[str, ...], name: str) -> cst.Module:
    """Add `name` to the first `from <one of from_modules> import ...` (e.g. `.interfaces`)."""
    if name in imported_names(module):
        return module
    adder = _AddImportedName(from_modules, name)
    body = list(module.body)
    for i, stmt in enumerate(body):  # imports are top-level: no need to walk the whole module
        if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, cst.ImportFrom) for s in stmt.body):
            body[i] = cst.ensure_type(stmt.visit(adder), cst.SimpleStatementLine)
            if adder.done:
                break
    module = module.with_changes(body=body)
    if not adder.done:
        raise LookupError(f"no `from {' / '.join(from_modules)} import ...` statement")
    return module


def add_import_or_refuse(role: str, module: cst.Module, from_modules: tuple[str, ...], name: str) -> cst.Module:
    """`add_import_name`, refusing the file when it has no such import to extend.

    A patch that adds a base class must import it too, or the engine fails at import time;
    a file without the engine's usual import is not the release's own.
    """
    try:
        return add_import_name(module, from_modules, name)
    except LookupError as err:
        raise FileNotAsExpected(role, f"cannot import {name}: {err}") from None


def parse_methods(code: str) -> list[cst.FunctionDef]:
    """Methods written as a dedented snippet, each preceded by one blank line in the class."""
    parsed = cst.parse_module(textwrap.dedent(code).strip() + "\n")
    methods = [stmt for stmt in parsed.body if isinstance(stmt, cst.FunctionDef)]
    blank = cst.EmptyLine(indent=False)
    return [meth.with_changes(leading_lines=[blank, *(line for line in meth.leading_lines if line.comment)]) for meth in methods]


def insert_before_method(cls: cst.ClassDef, anchor: str, new: Sequence[cst.BaseStatement]) -> cst.ClassDef:
    """Insert `new` statements into the class body right before method `anchor` (else at the end)."""
    body = list(cls.body.body)
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == anchor:
            return cls.with_changes(body=cls.body.with_changes(body=body[:i] + list(new) + body[i:]))
    return cls.with_changes(body=cls.body.with_changes(body=body + list(new)))


def replace_class(module: cst.Module, old: cst.ClassDef, new: cst.ClassDef) -> cst.Module:
    return module.with_changes(body=[new if stmt is old else stmt for stmt in module.body])


def replace_method(cls: cst.ClassDef, old: cst.FunctionDef, new: cst.FunctionDef) -> cst.ClassDef:
    """`cls` with method `old` (the node `find_method` returned) replaced by `new`, its other statements untouched."""
    return cls.with_changes(body=cls.body.with_changes(body=[new if stmt is old else stmt for stmt in cls.body.body]))


def block_statements(node: cst.BaseCompoundStatement | cst.ClassDef | cst.FunctionDef) -> list[Statement]:
    """The statements of `node`'s indented block."""
    return suite_statements(node.body)


def suite_statements(suite: cst.BaseSuite) -> list[Statement]:
    """The statements of an indented block (a one-line suite holds none)."""
    return [s for s in suite.body if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))]


def statements(code: str) -> list[Statement]:
    """Statements from a snippet; a leading comment stays with the first statement.

    (Parsed inside an `if` so that comment is not taken as the module's header.)
    """
    wrapped = "if True:\n" + textwrap.indent(textwrap.dedent(code).strip() + "\n", "    ")
    return block_statements(cst.ensure_type(cst.parse_module(wrapped).body[0], cst.If))


def find_all(tree: cst.CSTNode, matcher: Any) -> list[Any]:
    """`m.findall`: every node has the matcher's shape, which libcst checks at run time and mypy cannot
    follow, so the nodes are typed Any here rather than CSTNode."""
    return list(m.findall(tree, matcher))


def is_self_attr(node: cst.BaseExpression, attr: str) -> bool:
    return m.matches(node, m.Attribute(value=m.Name("self"), attr=m.Name(attr)))
