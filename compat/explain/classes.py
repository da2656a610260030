"""The classes of a release, read when a message names one: where it is defined, its bases in the release, what it
defines (methods, class attributes, the attributes its methods set and under which `if`), which classes of the
release define a name it lacks, and what a method takes. Read from the source on demand (a grep for the definition,
then the file's syntax tree), each answer with its file and line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from compat.core.tree import EngineTree, UnparseableFile

MAX_DEPTH = 5  # bases followed
MAX_HAVING = 8  # classes listed that define a name
MAX_FILES = 24  # files holding `class NAME` read at most
INIT_METHODS = ("__init__", "__post_init__")


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str  # "method" | "class attribute" | "set"
    file: str
    line: int
    owner: str  # the class that defines it
    guards: tuple[tuple[str, bool], ...] = ()  # the `if` tests around a `self.x = ...`, and the branch (True: body)
    method: str | None = None  # the method whose `self.x = ...` sets it

    @property
    def always(self) -> bool:
        """Every instance has it: a method, a class attribute, or set in `__init__` under no `if`."""
        return self.kind != "set" or (self.method in INIT_METHODS and not self.guards)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    def condition(self) -> str:
        """The condition it is set under, as code (`not self.uses_mrope`), or ""."""
        return " and ".join(test if branch else f"not ({test})" if " " in test else f"not {test}"
                            for test, branch in self.guards)


@dataclass
class ClassInfo:
    name: str
    file: str
    line: int
    node: ast.ClassDef = field(repr=False)
    bases: list[str] = field(default_factory=list)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


def find_class(tree: EngineTree, name: str, near: str | None = None) -> ClassInfo | None:
    """Where the release defines class `name` (the file `near` first: a base is most often beside its subclass)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    needle = re.compile(rb"^\s*class\s+" + name.encode() + rb"\b", re.M)
    files = [near] if near and tree.exists(near) and needle.search(tree.read_bytes(near)) else []
    if not files:
        files = [f for f in tree.files(tree.engine) if f.endswith(".py") and needle.search(tree.read_bytes(f))]
    for relpath in files[:MAX_FILES]:
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef) and node.name == name:
                return ClassInfo(name, relpath, node.lineno, node, _bases(node))
    return None


def hierarchy(tree: EngineTree, info: ClassInfo) -> tuple[list[ClassInfo], list[str]]:
    """The class and its bases the release defines (nearest first), and the bases it does not (`nn.Module`)."""
    found, outside, queue, seen = [info], [], list(info.bases), {info.name}
    while queue and len(found) < MAX_DEPTH + 1:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        base = find_class(tree, name, near=info.file)
        if base is None:
            outside.append(name)
            continue
        found.append(base)
        queue.extend(base.bases)
    return found, outside


def definitions(info: ClassInfo, name: str) -> list[Definition]:
    """What the class defines as `name`: a method, a class attribute, or `self.name = ...` in one of its methods
    (with the `if`s around it in that method)."""
    out = []
    for item in info.node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if item.name == name:
                out.append(Definition(name, "method", info.file, item.lineno, info.name))
            out.extend(Definition(name, "set", info.file, line, info.name, guards, item.name)
                       for line, guards in _sets(item, name))
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                out.append(Definition(name, "class attribute", info.file, item.lineno, info.name))
    return out


def members(info: ClassInfo) -> list[str]:
    """The names of the methods the class defines (to say which one the message may have meant)."""
    return [item.name for item in info.node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]


def having(tree: EngineTree, name: str, under: str) -> list[Definition]:
    """Classes below `under` that define `name`: as a method, else by setting `self.name` in `__init__` (at most
    MAX_HAVING), in file order."""
    word = re.escape(name.encode())
    needle = re.compile(rb"^\s*(?:async\s+)?def\s+" + word + rb"\s*\(|self\." + word + rb"\s*(?::[^=\n]*)?=[^=]", re.M)
    out: list[Definition] = []
    for relpath in tree.files(under):
        if not relpath.endswith(".py") or not needle.search(tree.read_bytes(relpath)):
            continue
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.ClassDef):
                info = ClassInfo(node.name, relpath, node.lineno, node)
                found = [d for d in definitions(info, name) if d.always]
                out.extend(found[:1])
        if len(out) >= MAX_HAVING:
            break
    return out[:MAX_HAVING]


def parameters(info: ClassInfo, method: str) -> tuple[list[str], int] | None:
    """The names a method of the class takes (self left out), and its line; None when it does not define it."""
    for item in info.node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method:
            args = item.args
            names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            if args.vararg:
                names.append("*" + args.vararg.arg)
            if args.kwarg:
                names.append("**" + args.kwarg.arg)
            return [n for n in names if n not in ("self", "cls")], item.lineno
    return None


def fields(info: ClassInfo) -> tuple[list[str], int] | None:
    """A dataclass's fields (what its generated `__init__` takes), and the class's line; None when it is none."""
    decorated = any(name in ("dataclass", "config", "pydantic_dataclass") for name in _decorators(info.node))
    if not decorated:
        return None
    names = [item.target.id for item in info.node.body if isinstance(item, ast.AnnAssign)
             and isinstance(item.target, ast.Name) and "ClassVar" not in ast.unparse(item.annotation)]
    return names, info.line


def _decorators(node: ast.ClassDef) -> list[str]:
    out = []
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        out.append(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
    return out


def guards_at(tree: EngineTree, relpath: str, line: int) -> tuple[tuple[str, bool], ...]:
    """The `if` tests around `line` inside its function (outermost first), each with the branch the line is in."""
    try:
        module = tree.parse(relpath)
    except (UnparseableFile, OSError):  # a file of another release (a traceback's), or none this Python parses
        return ()
    function = None
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or 0):
            if function is None or node.lineno > function.lineno:
                function = node
    if function is None:
        return ()
    found: list[tuple[str, bool]] = []
    _walk_ifs(function.body, line, [], found)
    return tuple(found)


def _walk_ifs(body: list, line: int, stack: list[tuple[str, bool]], out: list) -> bool:
    """Down the statements that hold `line`, the `if` tests passed on the way (into `out`); False: not in `body`."""
    for statement in body:
        if not statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            continue
        if isinstance(statement, ast.If):
            test = ast.unparse(statement.test)
            for branch, statements in ((True, statement.body), (False, statement.orelse)):
                if _walk_ifs(statements, line, stack + [(test, branch)], out):
                    return True
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(statement, name, None)
                if isinstance(inner, list) and _walk_ifs(inner, line, stack, out):
                    return True
        out.extend(stack)
        return True
    return False


def _sets(function: ast.AST, name: str) -> list[tuple[int, tuple[tuple[str, bool], ...]]]:
    """Lines of `self.name = ...` in a method, each with the `if` tests around it."""
    out: list[tuple[int, tuple[tuple[str, bool], ...]]] = []

    def visit(body: list[ast.stmt], stack: tuple[tuple[str, bool], ...]) -> None:
        for statement in body:
            if isinstance(statement, ast.If):
                test = ast.unparse(statement.test)
                visit(statement.body, stack + ((test, True),))
                visit(statement.orelse, stack + ((test, False),))
                continue
            if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                for node in _assigned(targets):  # `self.x = ...`, not `self.x[i] = ...` (that reads it)
                    if (isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name)
                            and node.value.id == "self"):
                        out.append((statement.lineno, stack))
            for field_name in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(statement, field_name, None)
                if isinstance(inner, list) and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                          ast.ClassDef)):
                    visit(inner, stack)

    visit(getattr(function, "body", []), ())
    return out


def _assigned(targets: list) -> list[ast.AST]:
    out: list[ast.AST] = []
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            out.extend(_assigned(list(target.elts)))
        elif isinstance(target, ast.Starred):
            out.extend(_assigned([target.value]))
        else:
            out.append(target)
    return out


def _bases(node: ast.ClassDef) -> list[str]:
    out = []
    for base in node.bases:
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Name):
            out.append(base.id)
        elif isinstance(base, ast.Attribute):
            out.append(base.attr)
    return out
