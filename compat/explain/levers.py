"""What the user can change to keep the engine off the path that raised: read from the condition the release checked
there (the site's guard, or the `if`s around an access) and from its neighbours, the lines of the function (or of the
class's `__init__`) that give the names in it their values.

    levers(release, site, tests) -> [Lever]

A lever is something the code reads that the user sets: an environment variable (`envs.SGLANG_ENABLE_SPEC_V2`,
`os.environ.get("X")`), a launch option (a server argument of the release's parser, `server_args.x`, `get_spec().x`),
a key of the speculative config (`speculative_config.method`; `self.x` in the config's own class), the dtype the code
compares (`dtype == torch.bfloat16`), the platform (`current_platform.is_rocm()`), or the draft model itself (the
object the line reads is `...draft...model`). Each says when the engine takes the failing path in its terms (`raises
when ... is true`), with the file and line it is read at. Nothing is evaluated: the words are the code's.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from compat.core.tree import EngineTree

_ENV_CALL = re.compile(r"^(?:os\.getenv|os\.environ\.get|get_\w*env\w*|envs\.get_\w+|\w*env_var\w*)$")
_DTYPES = ("bfloat16", "float16", "half", "float32", "float", "float64", "int8", "uint8", "float8_e4m3fn",
           "float8_e5m2", "float8_e4m3fnuz")
_PLATFORM = re.compile(r"^(?:current_platform|platform)\.(is_\w+|device_type|get_device_capability)")
MAX_LEVERS = 5
MAX_DEPTH = 2  # assignments followed back from a name in the condition


@dataclass(frozen=True)
class Lever:
    kind: str  # "environment variable" | "option" | "speculative config key" | "dtype" | "platform" | "draft model"
    name: str  # SGLANG_ENABLE_SPEC_V2, --speculative-draft-model-path, "method", bfloat16, is_rocm
    code: str  # the code that reads it
    at: str  # file:line
    when: str  # when the engine takes the path that raised, in the code's terms

    def describe(self) -> str:
        what = {"environment variable": f"the environment variable {self.name}",
                "option": f"the option {self.name}", "speculative config key": f"the speculative config's {self.name!r}",
                "dtype": f"the dtype ({self.name})", "platform": f"the platform ({self.name})",
                "draft model": f"the draft model ({self.name})",
                "set from": f"`{self.name}`, set from `{self.code}`"}.get(self.kind, self.name)
        if self.kind == "set from":
            return f"{what} ({self.at}): {self.when.partition('; ')[2]}"
        return f"{what}: {self.when} (`{self.code}`, {self.at})"

    def to_json(self) -> dict:
        return {"kind": self.kind, "name": self.name, "code": self.code, "at": self.at, "when": self.when,
                "says": self.describe()}


@dataclass(frozen=True)
class Vocabulary:
    """The release's own names for what users set: its launch options and its speculative config's keys."""

    options: frozenset[str]  # "--speculative-draft-model-path", ...
    config_keys: frozenset[str]  # fields of the speculative config
    config_home: str | None  # the file that defines the speculative config class
    draft_option: str | None  # how a launch names the draft model

    @classmethod
    def of(cls, report: dict) -> Vocabulary:
        arguments = (report.get("cli_arguments") or {}).get("arguments") or []
        flags = [*(report.get("cli_flags") or []), *arguments]  # the speculative flags, and every argument of the parser
        options = frozenset(name for f in flags if isinstance(f, dict)
                            for name in (f.get("name"), *(f.get("aliases") or ())) if isinstance(name, str))
        spec = report.get("speculative_config") or {}
        # the keys a user writes: a field typed as another config (`target_model_config: ModelConfig`) the engine sets
        keys = frozenset(f["name"] for f in spec.get("fields") or () if isinstance(f, dict) and f.get("name")
                         and not re.search(r"\w*Config\b", str(f.get("type") or "")))
        home = (spec.get("location") or "").rpartition(":")[0] or None
        draft = next((o for o in sorted(options) if "draft-model" in o and "path" in o), None) or \
            next((o for o in sorted(options) if "draft-model" in o), None)
        if draft is None and "model" in keys:
            draft = "\"model\" of --speculative-config"
        return cls(options, keys, home, draft)


def levers(tree: EngineTree, vocabulary: Vocabulary, file: str, line: int,
           tests: list[tuple[str, bool]], receiver: str | None = None) -> list[Lever]:
    """The levers of the conditions `tests` (each: the code, and whether the engine raises when it is true) checked at
    `file:line`, and of the object an access reads (`receiver`)."""
    function = _function_at(tree, file, line)
    found: list[Lever] = []
    seen: set[tuple[str, str]] = set()
    for test, raises_when in tests:
        try:
            node = ast.parse(test, mode="eval").body
        except SyntaxError:
            continue
        for lever in _read(node, raises_when, tree, vocabulary, file, line, function, 0):
            if (lever.kind, lever.name) not in seen:
                seen.add((lever.kind, lever.name))
                found.append(lever)
    if receiver and "draft" in receiver.lower() and vocabulary.draft_option:
        found.append(Lever("draft model", vocabulary.draft_option, receiver, f"{file}:{line}",
                           f"the line runs on the model the draft runner loaded, which {vocabulary.draft_option} names"))
    return found[:MAX_LEVERS]


def _read(node: ast.expr, raises_when: bool, tree: EngineTree, vocabulary: Vocabulary, file: str, line: int,
          function: ast.AST | None, depth: int) -> list[Lever]:
    """Levers in a condition, each with when the engine raises; names given values above are followed."""
    out: list[Lever] = []
    for part, polarity in _conjuncts(node, raises_when):
        atom, when = _atom(part, polarity)
        for side in _operands(part, atom):  # what is compared, what with (another setting, perhaps), what it is made of
            lever = _lever(side, when, vocabulary, file, line)
            if lever is not None:
                out.append(lever)
                continue
            if depth >= MAX_DEPTH or not isinstance(side, (ast.Name, ast.Attribute)):
                continue
            sources = _assigned(tree, file, function, side, line)
            name = ast.unparse(side)
            further: list[Lever] = []
            for value, at in sources:  # what the value is made of (an option, a variable); else a condition of its own
                further += _scan(value, f"`{name}` takes its value from it; {when}", vocabulary, file, at) or \
                    (_read(value, polarity, tree, vocabulary, file, at, function, depth + 1)
                     if isinstance(value, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Name, ast.Attribute)) else [])
            made = [(value, at) for value, at in sources if not _literal(value)]
            if not further and made:
                value, at = made[0]
                further = [Lever("set from", name, ast.unparse(value), f"{file}:{at}",
                                 f"`{name}` is given its value there; " + when)]
            out.extend(further)
    return out


def _operands(part: ast.expr, atom: ast.expr) -> list[ast.expr]:
    """The settings a part of a condition reads: the thing compared first, then every name or attribute chain in it
    (`m.num_reqs * (self.num_spec + 1) <= ...` reads `m.num_reqs`, `self.num_spec`)."""
    out: list[ast.expr] = [atom]
    inner: set[int] = set()
    for node in ast.walk(part):
        if isinstance(node, ast.Attribute):
            inner.update(id(child) for child in ast.walk(node.value))
        elif isinstance(node, ast.Call):
            inner.update(id(child) for child in ast.walk(node.func))
    for node in ast.walk(part):
        if node is atom or id(node) in inner or not isinstance(node, (ast.Name, ast.Attribute)):
            continue
        if isinstance(node, ast.Name) and node.id in ("self", "None", "True", "False", "torch"):
            continue
        if all(ast.unparse(node) != ast.unparse(other) for other in out):
            out.append(node)
    return out


def _scan(value: ast.expr, when: str, vocabulary: Vocabulary, file: str, line: int) -> list[Lever]:
    """The levers an assigned value is made of (`args.decode_backend if args.decode_backend else args.backend`)."""
    out: list[Lever] = []
    for node in ast.walk(value):
        if isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
            lever = _lever(node, when, vocabulary, file, line)
            if lever is not None and all(lever.name != other.name for other in out):
                out.append(lever)
    return out


def _conjuncts(node: ast.expr, raises_when: bool) -> list[tuple[ast.expr, bool]]:
    """The parts of a condition that each must hold for it to be `raises_when`, with the value each must have."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _conjuncts(node.operand, not raises_when)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) == raises_when:
        return [c for value in node.values for c in _conjuncts(value, raises_when)]
    return [(node, raises_when)]


def _atom(node: ast.expr, polarity: bool) -> tuple[ast.expr, str]:
    """The thing a part reads, and when the engine raises in its terms."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        op, right = node.ops[0], ast.unparse(node.comparators[0])
        words = {ast.Eq: ("is", "is not"), ast.NotEq: ("is not", "is"), ast.In: ("is in", "is not in"),
                 ast.NotIn: ("is not in", "is in"), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is")}
        pair = words.get(type(op))
        if pair is not None:
            left, other = node.left, node.comparators[0]
            if _dtype_of(other) is None and _dtype_of(left) is not None:
                left, other = other, left
            if _literal(other) or _dtype_of(other) is not None:
                return left, f"the engine takes this path when it {pair[0] if polarity else pair[1]} {ast.unparse(other)}"
            return left, f"the engine takes this path when `{ast.unparse(node)}`" + ("" if polarity else " is false")
        return node, f"the engine takes this path when `{ast.unparse(node)}` is {polarity}"
    if not isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return node, f"the engine takes this path when `{ast.unparse(node)}` is {'true' if polarity else 'false'}"
    return node, f"the engine takes this path when it is {'set (true)' if polarity else 'unset (false)'}"


def _lever(atom: ast.expr, when: str, vocabulary: Vocabulary, file: str, line: int) -> Lever | None:
    code, at = ast.unparse(atom), f"{file}:{line}"
    env = _env(atom)
    if env is not None:
        return Lever("environment variable", env, code, at, when)
    platform = _PLATFORM.match(code)
    if platform is not None:
        return Lever("platform", platform.group(1), code, at, when)
    dtype = _dtype_in(when)
    if dtype is not None or code.endswith(".dtype") or code == "dtype":
        return Lever("dtype", dtype or code, code, at, when)
    if isinstance(atom, ast.Call):
        atom = atom.func
    if isinstance(atom, ast.Attribute):
        name, base = atom.attr, ast.unparse(atom.value)
        option = "--" + name.replace("_", "-")
        if option in vocabulary.options and ("args" in base or "spec" in base or "config" in base):
            return Lever("option", option, code, at, when)
        if name in vocabulary.config_keys and ("speculative_config" in base or (base == "self" and file == vocabulary.config_home)):
            return Lever("speculative config key", name, code, at, when)
    return None


def _env(node: ast.expr) -> str | None:
    """The environment variable a piece of code reads: `envs.X`, `envs.X.get()`, `os.environ.get("X")`, ..."""
    if isinstance(node, ast.Call):
        func = ast.unparse(node.func)
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and _ENV_CALL.match(func):
            return node.args[0].value
        if func.endswith((".get", ".is_set", ".value")) and isinstance(node.func, ast.Attribute):
            return _env(node.func.value)
        return None
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "os.environ" and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "envs" and node.attr.isupper():
        return node.attr
    return None


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _dtype_of(node: ast.expr) -> str | None:
    text = ast.unparse(node)
    found = re.fullmatch(r"torch\.(\w+)", text)
    return found.group(1) if found and found.group(1) in _DTYPES else None


def _dtype_in(when: str) -> str | None:
    found = re.search(r"torch\.(\w+)", when)
    return found.group(1) if found and found.group(1) in _DTYPES else None


def _function_at(tree: EngineTree, file: str, line: int) -> ast.AST | None:
    """The function holding `line`, parsed alone from its lines (a runner's file is 6,000 lines: parsing it whole for
    one guard would cost more than reading a whole log)."""
    lines = _lines(tree, file)
    if not 0 < line <= len(lines):
        return None
    indent = _indent(lines[line - 1]) if lines[line - 1].strip() else 1 << 30
    for number in range(line, 0, -1):
        text = lines[number - 1]
        if _DEF.match(text) and _indent(text) < indent:
            return _parsed(lines, number)
        if text.strip() and not text.lstrip().startswith(("#", "@", ")")) and _indent(text) < indent:
            indent = _indent(text)  # an enclosing block: the def must be further out
    return None


def _init_of(tree: EngineTree, file: str, line: int) -> ast.AST | None:
    """The `__init__` of the class whose method holds `line`, parsed alone."""
    lines = _lines(tree, file)
    if not 0 < line <= len(lines):
        return None
    for number in range(line, 0, -1):
        found = _CLASS.match(lines[number - 1])
        if found is None:
            continue
        depth = len(found.group(1))
        for inner in range(number + 1, len(lines) + 1):
            text = lines[inner - 1]
            if text.strip() and _indent(text) <= depth and not text.lstrip().startswith(("#", ")")):
                return None  # the class ended without one
            if re.match(r"\s+(?:async\s+)?def\s+__init__\s*\(", text):
                return _parsed(lines, inner)
        return None
    return None


_DEF = re.compile(r"^\s*(?:async\s+)?def\s")
_CLASS = re.compile(r"^(\s*)class\s")
_LINES: dict[tuple[str, str], list[str]] = {}


def _lines(tree: EngineTree, file: str) -> list[str]:
    key = (str(tree.root), file)
    found = _LINES.get(key)
    if found is None:
        try:
            found = tree.text(file).split("\n")
        except OSError:
            found = []
        if len(_LINES) > 64:
            _LINES.clear()
        _LINES[key] = found
    return found


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _parsed(lines: list[str], first: int) -> ast.AST | None:
    """The def at line `first` (decorators above it left out) to its end, parsed with its own line numbers."""
    depth = _indent(lines[first - 1])
    last = first
    for number in range(first + 1, len(lines) + 1):
        text = lines[number - 1]
        if text.strip() and _indent(text) <= depth and not text.lstrip().startswith(("#", ")", "]", "}")):
            break
        last = number
    source = textwrap.dedent("\n".join(lines[first - 1:last]))
    try:
        node = ast.parse(source).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    ast.increment_lineno(node, first - 1)
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _assigned(tree: EngineTree, file: str, function: ast.AST | None, target: ast.expr, before: int
              ) -> list[tuple[ast.expr, int]]:
    """The values given to a name above `before` in its function (the last), or to `self.x` there or in the class's
    `__init__` (each: `if ...: self.x = a else: self.x = 0`)."""
    wanted = ast.unparse(target)
    if isinstance(target, ast.Name):
        scopes: list[ast.AST] = [function] if function is not None else []
    elif isinstance(target, ast.Attribute) and ast.unparse(target.value) == "self":
        scopes = [f for f in (function, _init_of(tree, file, before)) if f is not None]
    else:
        scopes = []
    for scope in scopes:
        found = []
        for node in ast.walk(scope):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and (
                    scope is not function or node.lineno < before):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(ast.unparse(t) == wanted for t in targets):
                    found.append((node.value, node.lineno))
        if found:
            found.sort(key=lambda pair: pair[1])
            return found[-1:] if scope is function and isinstance(target, ast.Name) else found
    return []
