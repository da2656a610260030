"""Raise sites, asserts and logger calls of an engine's files, each message turned into a pattern.

Shared by `probes/vllm/error_sites.py` and `probes/sglang/error_sites.py`, which choose the files (the code
paths that serve speculative decoding); `compat explain` matches a user's text against the patterns.

A message is read as a template: literal text and holes. An f-string's `{expr}`, a `%s`/`%d`/`%.2f` of a
logger call or of `"..." % args`, a `"...".format(...)` field, and anything that is not a string literal
(a `str(x)` concatenated in) are holes; a message held in a local variable is followed to the variable's
last assignment before the raise. A hole becomes a non-greedy `.*?` (a number for `%d` / `%f`), the
literal text is escaped, so the pattern matches the rendered message whatever the values were.

A site:
    {"kind": "raise" | "assert" | "log", "exception": "ValueError" | None, "level": "warning" | None,
     "template": "Eagle3 is only supported for {} models. Got {}", "pattern": "regex" | None,
     "words": ["supported", ...], "function": "SpeculativeConfig._verify_args", "location": "file:line",
     "end_line": N}
A raise, an assert or a logger call under an `if` also has "guard" (what it checks, probes/_guards.py: the condition, when it raises, the literal
values of the names compared) when one is read, and "holes" (each hole's expression, for an f-string message).
`pattern` is the template's first line that has a word of at least MIN_WORD letters (None when none
has: such a message says too little to be recognised by its text, though a traceback frame still finds
it by file and line); `words` are its words, which `compat explain` indexes lines by.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from compat.core.output import plural
from compat.core.tree import EngineTree, UnparseableFile
from compat.probes._guards import guard_fact, hole_exprs

HOLE = None  # a part of a template that is not literal text
NUMBER = "number"  # a hole that holds a number (%d, %.2f, {x:.3f})
LOG_LEVELS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal",
              "info_once", "warning_once", "debug_once", "error_once"}
LOGGER_NAMES = ("logger", "log", "_logger", "LOGGER", "LOG", "_LOGGER")
# Functions handed a logger's method (vLLM's stat loggers call `log_fn(...)`, logger.info or .debug).
LOG_FUNCTIONS = ("log_fn",)
MIN_WORD = 4
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{%d,}" % (MIN_WORD - 1))
_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_FORMAT_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_NUMBER_RX = r"-?(?:\d[\d,]*(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"



def sites_fact(tree: EngineTree, files: list[str]) -> dict:
    """The error_sites fact of either engine, over the files its probe picked on the spec-decoding paths."""
    if not files:
        return {"present": False, "reason": "none of the speculative-decoding files are in this tree"}
    sites, unparsed = sites_of(tree, files)
    return {"present": True, "summary": f"{plural(len(sites), 'site')} in {plural(len(files), 'file')} (the patterns are in --json)",
            "files": files, "unparsed": unparsed, "sites": sites}


def sites_of(tree: EngineTree, relpaths: list[str]) -> tuple[list[dict], list[str]]:
    """The sites of `relpaths` (in file and line order), and the files this Python could not parse."""
    sites: list[dict] = []
    unparsed: list[str] = []
    for relpath in relpaths:
        try:
            module = tree.parse(relpath)
        except UnparseableFile:
            unparsed.append(relpath)
            continue
        _Walker(tree, relpath, sites).visit(module)
    return sites, unparsed


class _Walker(ast.NodeVisitor):
    def __init__(self, tree: EngineTree, relpath: str, out: list[dict]) -> None:
        self.tree, self.relpath, self.out = tree, relpath, out
        self.scope: list[str] = []
        self.functions: list[ast.AST] = []
        self.ifs: list[tuple[ast.If, bool]] = []  # the `if`s around the node visited, and whether in their body
        self.handlers: list[ast.ExceptHandler] = []  # the `except` clauses around it
        self.module: ast.Module | None = None

    def visit_Module(self, node: ast.Module) -> None:
        self.module = node
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self.handlers.append(node)
        self.generic_visit(node)
        self.handlers.pop()

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        for branch, statements in ((True, node.body), (False, node.orelse)):
            self.ifs.append((node, branch))
            for statement in statements:
                self.visit(statement)
            self.ifs.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node) -> None:
        self.scope.append(node.name)
        self.functions.append(node)
        outer, self.ifs = self.ifs, []
        handlers, self.handlers = self.handlers, []
        self.generic_visit(node)
        self.ifs, self.handlers = outer, handlers
        self.functions.pop()
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is not None:
            name, message = _exception(exc)
            if name is not None:
                guard = self._guard(None, True) if self.ifs or self.handlers else None
                self._add(node, "raise", name, None, self._template(message, node) if message is not None else [],
                          guard, hole_exprs(message))
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._add(node, "assert", "AssertionError", None, self._template(node.msg, node) if node.msg is not None else [],
                  self._guard(node.test, False), hole_exprs(node.msg))
        self.generic_visit(node)

    def _guard(self, test: ast.expr | None, raises_when: bool) -> dict:
        """The conditions under which the statement runs and raises: every `if` around it in its function (its
        `else:` branch negated), and an assert's own test; one `if` alone, or an assert alone, as written."""
        parts: list[ast.expr] = [node.test if branch else ast.UnaryOp(ast.Not(), node.test) for node, branch in self.ifs]
        if test is not None and parts:
            parts.append(ast.UnaryOp(ast.Not(), test))
            test, raises_when = None, True
        handler = self.handlers[-1] if self.handlers else None
        caught = f"except {ast.unparse(handler.type)}" if handler is not None and handler.type is not None else \
            "except" if handler is not None else None
        if test is None and not parts:  # only in an `except` clause: raised when the `try` failed
            test = ast.Constant(True)
            ast.copy_location(test, handler or self.ifs[-1][0])
        elif test is None:
            if len(parts) == 1 and self.ifs[-1][1]:
                test = parts[0]
            elif len(parts) == 1:
                test, raises_when = self.ifs[-1][0].test, False
            else:
                test = ast.BoolOp(ast.And(), parts)
            ast.copy_location(test, self.ifs[-1][0].test)
        fact = guard_fact(self.tree, self.relpath, test, raises_when, self.functions[-1] if self.functions else None,
                          self.module)
        if caught is not None and handler is not None:
            fact["caught"] = {"clause": caught, "line": handler.lineno}  # the raise handles a failure of its `try`
        return fact

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        """`msg += f"accept len: {x:.2f}, "` where `msg` is logged later (SGLang builds its decode log line so):
        the piece is a site of its own, its level the logger call's."""
        if isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name) and self.functions:
            level = _logged_level(self.functions[-1], node.target.id)
            if level is not None:
                parts = self._template(node.value, node)
                if any(isinstance(p, str) for p in parts):
                    self._add(node, "log", None, level, parts)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in LOG_LEVELS and node.args
                and _logger_name(func.value) is not None):
            parts = self._template(node.args[0], node)
            if len(node.args) > 1:  # logging applies %-formatting only when given arguments
                parts = _percent(parts)
            level = func.attr.replace("_once", "").replace("warn", "warning").replace("warninging", "warning")
            # what the engine checked before logging it (a warning's `if`), read as a raise's guard
            self._add(node, "log", None, level, parts, self._guard(None, True) if self.ifs else None,
                      hole_exprs(node.args[0]) if len(node.args) == 1 else None)
        elif isinstance(func, ast.Name) and func.id in LOG_FUNCTIONS and node.args:
            parts = self._template(node.args[0], node)
            self._add(node, "log", None, "info", _percent(parts) if len(node.args) > 1 else parts)
        self.generic_visit(node)

    # -- templates ----------------------------------------------------------------------------------
    def _template(self, node: ast.AST, site: ast.AST, depth: int = 0) -> list:
        if isinstance(node, ast.Constant):
            return [node.value] if isinstance(node.value, str) else [HOLE]
        if isinstance(node, ast.JoinedStr):
            parts: list = []
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    parts.append(value.value)
                else:
                    spec = value.format_spec if isinstance(value, ast.FormattedValue) else None
                    numeric = spec is not None and ast.unparse(spec).rstrip("'\"").endswith(("f", "d", "e", "%"))
                    parts.append((NUMBER,) if numeric else HOLE)
            return parts
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._template(node.left, site, depth) + self._template(node.right, site, depth)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return _percent(self._template(node.left, site, depth))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                and isinstance(node.func.value, (ast.Constant, ast.JoinedStr, ast.BinOp))):
            return _format_fields(self._template(node.func.value, site, depth))
        if isinstance(node, ast.Name) and depth < 3 and self.functions:
            assigned = _last_assignment(self.functions[-1], node.id, getattr(site, "lineno", 0))
            if assigned is not None:
                return self._template(assigned, site, depth + 1)
        return [HOLE]

    def _add(self, node: ast.AST, kind: str, exception: str | None, level: str | None, parts: list,
             guard: dict | None = None, holes: list[str] | None = None) -> None:
        parts = _merged(parts)
        template = "".join(p if isinstance(p, str) else "{}" for p in parts)
        pattern, words = _pattern(parts)
        site = {"kind": kind, "exception": exception, "level": level, "template": template,
                "pattern": pattern, "words": words, "function": ".".join(self.scope) or None,
                "location": self.tree.loc(self.relpath, node), "end_line": getattr(node, "end_lineno", None)}
        if guard is not None:
            site["guard"] = guard
        if holes is not None and len(holes) == template.count("{}"):  # each hole's expression, when they line up
            site["holes"] = holes
        self.out.append(site)


def _exception(exc: ast.AST) -> tuple[str | None, ast.AST | None]:
    """(exception class name, message node) of `raise X(msg, ...)` / `raise X`; (None, None) for a re-raise
    of a caught exception (`raise err`) or anything whose class cannot be read."""
    if isinstance(exc, ast.Call):
        func = exc.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name is None or not name[:1].isupper():
            return None, None
        return name, exc.args[0] if exc.args else None
    if isinstance(exc, ast.Name) and exc.id[:1].isupper():
        return exc.id, None
    return None, None


def _logger_name(node: ast.AST) -> str | None:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name if name is not None and (name in LOGGER_NAMES or name.lower().endswith("logger")) else None


def _logged_level(func: ast.AST, name: str) -> str | None:
    """The level of a logger call in `func` whose message is the variable `name`."""
    for node in ast.walk(func):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOG_LEVELS
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == name
                and _logger_name(node.func.value) is not None):
            return node.func.attr.replace("_once", "")
    return None


def _last_assignment(func: ast.AST, name: str, before: int) -> ast.AST | None:
    best = None
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and node.lineno < before and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if best is None or node.lineno > best.lineno:
                best = node
    return best.value if best is not None else None


def _percent(parts: list) -> list:
    """%-specs in the literal parts become holes (`%%` a literal `%`)."""
    def hole(match: re.Match) -> object:
        conv = match.group(1)
        return "%" if conv == "%" else (NUMBER,) if conv in "diouxXeEfFgG" else HOLE
    return _holes(parts, _PERCENT, hole)


def _format_fields(parts: list) -> list:
    """str.format fields in the literal parts become holes (`{{`/`}}` a literal brace)."""
    def hole(match: re.Match) -> object:
        text = match.group(0)
        return text[0] if text in ("{{", "}}") else (NUMBER,) if text.rstrip("}").endswith(("f", "d")) else HOLE
    return _holes(parts, _FORMAT_FIELD, hole)


def _holes(parts: list, pattern: re.Pattern, hole: Callable[[re.Match], object]) -> list:
    """Each match of `pattern` in the literal (str) parts replaced by `hole(match)`; other parts kept."""
    out: list = []
    for part in parts:
        if not isinstance(part, str):
            out.append(part)
            continue
        pos = 0
        for match in pattern.finditer(part):
            out.append(part[pos:match.start()])
            out.append(hole(match))
            pos = match.end()
        out.append(part[pos:])
    return out


def _merged(parts: list) -> list:
    """Adjacent literals joined, adjacent holes collapsed to one, empty literals dropped."""
    out: list = []
    for part in parts:
        if isinstance(part, str):
            if not part:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += part
                continue
        elif out and not isinstance(out[-1], str):
            if out[-1] != part:
                out[-1] = HOLE
            continue
        out.append(part)
    return out


def _lines(parts: list) -> list[list]:
    """The template split at newlines in its literal text."""
    lines: list[list] = [[]]
    for part in parts:
        if isinstance(part, str) and "\n" in part:
            first, *rest = part.split("\n")
            lines[-1].append(first)
            for piece in rest:
                lines.append([piece])
        else:
            lines[-1].append(part)
    return [_merged(line) for line in lines]


def _whole_words(parts: list) -> list[str]:
    """Words of the literal text that a hole does not touch (`{name}Config` renders as one word)."""
    words: list[str] = []
    for i, part in enumerate(parts):
        if not isinstance(part, str):
            continue
        for match in _WORD.finditer(part):
            glued_left = match.start() == 0 and i > 0
            glued_right = match.end() == len(part) and i < len(parts) - 1
            if not glued_left and not glued_right:
                words.append(match.group(0))
    return list(dict.fromkeys(words))


def _pattern(parts: list) -> tuple[str | None, list[str]]:
    for line in _lines(parts):
        words = _whole_words(line)
        if not words:
            continue
        rx = []
        for i, part in enumerate(line):
            if isinstance(part, str):
                # whitespace at a literal's edge is left to a `.*?` hole beside it, or dropped at the pattern's
                # ends (`\s*.*?\s*` would backtrack polynomially on a long line that fails to match); before or
                # after a number it is kept as written
                before = line[i - 1] if i > 0 else HOLE
                after = line[i + 1] if i + 1 < len(line) else HOLE
                text = part.lstrip() if before is HOLE else part
                text = text.rstrip() if after is HOLE else text
                rx.append(re.escape(text))
            else:
                rx.append(_NUMBER_RX if part == (NUMBER,) else r".*?")
        return "".join(rx), words
    return None, []
