"""Where a release's code makes the accesses Python itself raises at: an attribute read (`AttributeError: 'X' object
has no attribute 'y'`), a call by name or with a keyword (`TypeError: f() got an unexpected keyword argument 'k'`), a
subscript with a literal key (`KeyError: 'embed_tokens.weight'`). Read from the same files as the error_sites probe
(the speculative-decoding paths); what `compat explain` looks a message's names up in, when no `raise` of the engine
wrote the message.

    call_sites(tree, relpaths) -> {"files": [relpath, ...],
                                   "functions": [[file, first line, last line, "Class.method"], ...],
                                   "names": {"positions": [[file, line, line, ...], ...], "eagle=": ..., "['k']": ...,
                                             "Foo(": ...}}

`file` is an index into `files`; a name's lines are the lines of its accesses in that file (each once, ascending).
The keys: an attribute read by its name, a keyword argument as `name=`, a literal subscript as `['key']`, a call of a
plain name as `name(`, a dict literal's key as `{'name'}` (arguments gathered to be splatted into a call). Kept compact (numbers, no repeated paths): explain loads it only when a message needs it, and
nothing else reads it.
"""

from __future__ import annotations

import ast

from compat.core.tree import EngineTree, UnparseableFile

MAX_KEY = 80  # characters of a literal key kept (a longer one is data, not a name)


def call_sites(tree: EngineTree, relpaths: list[str]) -> dict:
    files: list[str] = []
    functions: list[list] = []
    names: dict[str, dict[int, list[int]]] = {}
    for relpath in relpaths:
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            continue
        index = len(files)
        files.append(relpath)
        _functions(module, index, (), functions)
        for node in ast.walk(module):
            key = _key(node)
            for name in ([key] if key is not None else []) + _dict_keys(node):
                lines = names.setdefault(name, {}).setdefault(index, [])
                line = getattr(node, "lineno", 0) if name == key else _key_line(node, name)
                if not lines or lines[-1] != line:
                    lines.append(line)
    return {"files": files, "functions": functions,
            "names": {key: [[index, *sorted(set(lines))] for index, lines in by_file.items()]
                      for key, by_file in names.items()}}


def _key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr if isinstance(node.ctx, ast.Load) else None
    if isinstance(node, ast.keyword):
        return f"{node.arg}=" if node.arg else None
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and len(key.value) <= MAX_KEY:
            return f"[{key.value!r}]"
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"{node.func.id}("
    return None


def _dict_keys(node: ast.AST) -> list[str]:
    """A dict literal's string keys, as `{'k'}`: a dict of arguments splatted into a call (`self.model(**kwargs)`)."""
    if not isinstance(node, ast.Dict):
        return []
    return [f"{{{key.value!r}}}" for key in node.keys
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and len(key.value) <= MAX_KEY]


def _functions(node: ast.AST, index: int, scope: tuple[str, ...], out: list[list]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = (*scope, child.name)
            out.append([index, child.lineno, child.end_lineno or child.lineno, ".".join(name)])
            _functions(child, index, name, out)
        elif isinstance(child, ast.ClassDef):
            _functions(child, index, (*scope, child.name), out)
        else:
            _functions(child, index, scope, out)


def _key_line(node: ast.AST, name: str) -> int:
    for key in getattr(node, "keys", ()):
        if isinstance(key, ast.Constant) and f"{{{key.value!r}}}" == name:
            return key.lineno
    return getattr(node, "lineno", 0)
