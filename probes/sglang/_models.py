"""What SGLang's model folder says about EAGLE-3, shared by the target, drafter and aux-layer probes.

SGLang has no capability interface: a target can feed an EAGLE-3 drafter when its class
has `set_eagle3_layers_to_capture` (defined or inherited), and an architecture is
registered by listing its class in `EntryClass = ...` at the bottom of a file in
`sglang/srt/models/`. Both are found by what they are, not by file name:

- a byte scan of the model files indexes top-level class headers (name, bases) and
  `EntryClass` lists without parsing anything (hundreds of files, ~8 MB in 0.5.23);
- a byte grep finds the files defining the method, and only each method's block (cut out
  by indentation, see _source.py) is parsed, never a whole 3000-line model file;
- subclasses are found from the index, iterating until no new class inherits the method,
  and each registered class is resolved base by base (first base first, like the MRO).

The offset a class applies to the drafter's layer ids is read from the method body:
a `[val + 1 for val in layer_ids]` comprehension, the `if` around it, a pass-through
to `self.<attr>.set_eagle3_layers_to_capture(layer_ids)`, or the ids used unchanged.
"""

from __future__ import annotations

import ast
import copy
import re
import weakref
from dataclasses import dataclass, field

from compat.probes.sglang._source import block_end, enclosing_class, line_of, parse_block
from compat.core.tree import EngineTree

MODELS_DIR = "sglang/srt/models"
CAPTURE_METHOD = "set_eagle3_layers_to_capture"

_CLASS_HEADER = re.compile(rb"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
_ENTRY_CLASS = re.compile(rb"EntryClass\s*=\s*(\[[^\]]*\]|\([^)]*\)|[\w.]+)")
_WORD = re.compile(rb"[A-Za-z_]\w*")


@dataclass
class ClassHeader:
    name: str
    relpath: str
    start: int  # byte offset of the `class` line
    line: int
    bases: list[str]


@dataclass
class ModelsIndex:
    """Top-level classes and registered architectures of `sglang/srt/models/`, from a byte scan."""

    classes: dict[str, list[ClassHeader]] = field(default_factory=dict)
    registered: dict[str, tuple[str, int]] = field(default_factory=dict)  # architecture -> (relpath, line of EntryClass)

    def find(self, name: str, from_file: str | None = None, tree: EngineTree | None = None) -> ClassHeader | None:
        """Class `name`, preferring the one in `from_file`, then the one whose module `from_file` imports."""
        candidates = self.classes.get(name, [])
        if not candidates:
            return None
        for cand in candidates:
            if cand.relpath == from_file:
                return cand
        if len(candidates) > 1 and tree is not None and from_file is not None:
            data = tree.read_bytes(from_file)
            for cand in candidates:
                if module_name(cand.relpath).encode() in data:
                    return cand
        return candidates[0]


_CACHE: "weakref.WeakKeyDictionary[EngineTree, dict]" = weakref.WeakKeyDictionary()


def memo_on_tree(tree: EngineTree, key: str, build):
    slot = _CACHE.setdefault(tree, {})
    if key not in slot:
        slot[key] = build(tree)
    return slot[key]


def module_name(relpath: str) -> str:
    mod = relpath[:-3] if relpath.endswith(".py") else relpath
    mod = mod[: -len("/__init__")] if mod.endswith("/__init__") else mod
    return mod.replace("/", ".")


def models_index(tree: EngineTree) -> ModelsIndex:
    return memo_on_tree(tree, "models_index", _build_index)


def _line_starts(data: bytes, needle: bytes):
    """Offsets of lines that begin with `needle` (bytes.find is far faster than a ^-anchored regex)."""
    if data.startswith(needle):
        yield 0
    pos = data.find(b"\n" + needle)
    while pos >= 0:
        yield pos + 1
        pos = data.find(b"\n" + needle, pos + 1)


def _build_index(tree: EngineTree) -> ModelsIndex:
    index = ModelsIndex()
    for relpath in tree.files(MODELS_DIR):
        data = tree.read_bytes(relpath)
        line, counted = 1, 0  # line numbers counted incrementally: files hold dozens of classes
        for start in _line_starts(data, b"class "):
            m = _CLASS_HEADER.match(data, start)
            if not m:
                continue
            line, counted = line + data.count(b"\n", counted, start), start
            bases = []
            for part in (m.group(2) or b"").split(b","):
                part = part.split(b"[", 1)[0]
                if b"=" in part:  # metaclass=...
                    continue
                words = _WORD.findall(part)
                if words:
                    bases.append(words[-1].decode())
            name = m.group(1).decode()
            index.classes.setdefault(name, []).append(ClassHeader(name, relpath, start, line, bases))
        for start in _line_starts(data, b"EntryClass"):
            m = _ENTRY_CLASS.match(data, start)
            if m:
                entry_line = line_of(data, start)
                for word in _WORD.findall(m.group(1)):
                    name = word.decode()
                    if name[0].isupper():
                        index.registered.setdefault(name, (relpath, entry_line))
    return index


# -- the capture method ----------------------------------------------------------------------
@dataclass
class CaptureMethod:
    """How one class's `set_eagle3_layers_to_capture` treats the ids it is given."""

    cls: str
    relpath: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    accepts_layer_ids: bool
    offset: object  # 1 | 0 | {"offset", "when", ...} | "delegates" | None (ids not accepted or not understood)
    delegates_to: str | None = None  # attribute name: "language_model", "model"
    default: str | None = None  # "[2, N // 2, N - 3]"
    default_node: ast.AST | None = None
    default_shifted: bool = False  # the default ids also go through the offset


def analyze_capture_method(cls_name: str, relpath: str, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> CaptureMethod:
    params = [a.arg for a in fn.args.posonlyargs + fn.args.args][1:]
    default, default_node = _default_ids(fn)
    if not params:
        return CaptureMethod(cls_name, relpath, fn, False, None, default=default, default_node=default_node)
    ids = params[0]
    parents = {child: parent for parent in ast.walk(fn) for child in ast.iter_child_nodes(parent)}
    shifted = [(comp, delta) for comp, delta in _shifting_comprehensions(fn, ids)]
    default_shifted = any(
        isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == ids for t in n.targets)
        for n in ast.walk(fn)
    )
    method = CaptureMethod(cls_name, relpath, fn, True, None, default=default, default_node=default_node,
                           default_shifted=default_shifted and bool(shifted))
    if shifted:
        comp, delta = shifted[0]
        conditions = _conditions(comp, parents, fn, ids)
        if not conditions:
            method.offset = delta
        else:
            rule = {"offset": delta, "when": " and ".join(conditions)}
            if _uses_ids_unchanged(fn, ids):
                rule["otherwise"] = 0
            method.offset = rule
        return method
    target = _pass_through(fn, ids)
    if target is not None:
        method.offset, method.delegates_to = "delegates", target
        return method
    if _uses_ids_unchanged(fn, ids):
        method.offset = 0
    return method


def _shifting_comprehensions(fn: ast.FunctionDef | ast.AsyncFunctionDef, ids: str):
    """`[val + 1 for val in layer_ids]` (any constant, either order): yields (node, +/-constant)."""
    for node in ast.walk(fn):
        if not isinstance(node, (ast.ListComp, ast.GeneratorExp)) or len(node.generators) != 1:
            continue
        gen = node.generators[0]
        if not (isinstance(gen.iter, ast.Name) and gen.iter.id == ids and isinstance(gen.target, ast.Name)):
            continue
        elt, var = node.elt, gen.target.id
        if isinstance(elt, ast.BinOp) and isinstance(elt.op, (ast.Add, ast.Sub)):
            pairs = [(elt.left, elt.right)] + ([(elt.right, elt.left)] if isinstance(elt.op, ast.Add) else [])
            for a, b in pairs:
                if isinstance(a, ast.Name) and a.id == var and isinstance(b, ast.Constant) and isinstance(b.value, int):
                    yield node, b.value if isinstance(elt.op, ast.Add) else -b.value
                    break


def _is_presence_check(test: ast.AST, ids: str) -> bool:
    """`layer_ids is None`, `layer_ids is not None`, `layer_ids`, `not layer_ids`: ids given or not."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    if isinstance(test, ast.Name):
        return test.id == ids
    return (
        isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == ids
        and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    )


_NEGATED = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE,
            ast.LtE: ast.Gt, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _negate(test: ast.AST) -> str:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED:
        return ast.unparse(ast.Compare(test.left, [_NEGATED[type(test.ops[0])]()], test.comparators))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    return f"not ({ast.unparse(test)})"


def _conditions(node: ast.AST, parents: dict, fn: ast.FunctionDef | ast.AsyncFunctionDef, ids: str) -> list[str]:
    """The `if` tests (as source) that must hold for `node` to run, minus 'ids were given' checks."""
    out: list[str] = []
    child = node
    while child is not fn and child in parents:
        parent = parents[child]
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            in_body = child in parent.body if isinstance(parent, ast.If) else child is parent.body
            test: ast.expr | None = parent.test
            if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
                # `layer_ids and layer_ids[0] == 1`: the truthiness guard is not the rule
                kept = [v for v in test.values if not _is_presence_check(v, ids)]
                test = kept[0] if len(kept) == 1 else ast.BoolOp(ast.And(), kept) if kept else None
            if test is not None and not _is_presence_check(test, ids):
                out.append(ast.unparse(test) if in_body else _negate(test))
        child = parent
    return list(reversed(out))


def _uses_ids_unchanged(fn: ast.FunctionDef | ast.AsyncFunctionDef, ids: str) -> bool:
    """An assignment of `layer_ids` or `list(layer_ids)` to an attribute (`self.model.layers_to_capture`)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) for t in node.targets):
            value = node.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "tuple") and value.args:
                value = value.args[0]
            if isinstance(value, ast.Name) and value.id == ids:
                return True
    return False


def _pass_through(fn: ast.FunctionDef | ast.AsyncFunctionDef, ids: str) -> str | None:
    """`self.<attr>.set_eagle3_layers_to_capture(layer_ids)`: the attribute the ids are handed to."""
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == fn.name
            and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == ids
            and isinstance(node.func.value, ast.Attribute) and isinstance(node.func.value.value, ast.Name)
            and node.func.value.value.id == "self"
        ):
            return node.func.value.attr
    return None


class _ToN(ast.NodeTransformer):
    def visit_Name(self, node):
        return ast.copy_location(ast.Name("N", ast.Load()), node)


def _default_ids(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str | None, ast.AST | None]:
    """The default id list (`[2, num_layers // 2, num_layers - 3]`), with the layer count written N."""
    for node in ast.walk(fn):
        if isinstance(node, ast.List) and node.elts and any(isinstance(e, ast.BinOp) for e in node.elts):
            return ast.unparse(_ToN().visit(copy.deepcopy(node))), node
    return None, None


# -- targets -----------------------------------------------------------------------------
@dataclass
class Target:
    cls: str
    relpath: str
    line: int
    registered: bool
    method: CaptureMethod  # the method this class runs: its own or a base's
    delegate: "Target | None" = None  # the class of self.<attr> when the method passes ids through
    delegate_cls: str | None = None


def eagle3_targets(tree: EngineTree) -> list[Target]:
    return memo_on_tree(tree, "eagle3_targets", _build_targets)


def capture_methods(tree: EngineTree) -> dict[tuple[str, str], CaptureMethod]:
    """(relpath, class) -> the class's own `set_eagle3_layers_to_capture`, for every model file defining one."""
    return memo_on_tree(tree, "capture_methods", _build_capture_methods)


def _build_capture_methods(tree: EngineTree) -> dict[tuple[str, str], CaptureMethod]:
    own: dict[tuple[str, str], CaptureMethod] = {}
    needle = f"def {CAPTURE_METHOD}".encode()
    for relpath in tree.grep(needle, MODELS_DIR):
        data = tree.read_bytes(relpath)
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            after = data[pos + len(needle):pos + len(needle) + 1]
            owner = enclosing_class(data, start) if after in (b"(", b"[", b" ") else None
            # a method of a top-level class (indented once); nested helpers are not the hook
            if owner is not None and data[start:pos].strip(b" \t") == b"" and data[start:pos] != b"":
                fn = parse_block(tree, relpath, start)
                if isinstance(fn, ast.FunctionDef) and fn.name == CAPTURE_METHOD:
                    own[(relpath, owner[0])] = analyze_capture_method(owner[0], relpath, fn)
            pos = data.find(needle, pos + 1)
    return own


def _build_targets(tree: EngineTree) -> list[Target]:
    index = models_index(tree)
    own = capture_methods(tree)

    # Names that may inherit the method, by the header index; each is resolved base by base below.
    has_hook = {name for _, name in own}
    changed = True
    while changed:
        changed = False
        for name, headers in index.classes.items():
            if name not in has_hook and any(b in has_hook for h in headers for b in h.bases):
                has_hook.add(name)
                changed = True

    def resolve(header: ClassHeader, seen: frozenset = frozenset()) -> CaptureMethod | None:
        """The method `header`'s class runs: its own, else the first base's that has one (MRO order)."""
        key = (header.relpath, header.name)
        if key in own:
            return own[key]
        if key in seen:
            return None
        for base in header.bases:
            if base not in has_hook:
                continue
            base_header = index.find(base, header.relpath, tree)
            found = base_header and resolve(base_header, seen | {key})
            if found:
                return found
        return None

    targets: list[Target] = []
    by_name: dict[str, Target] = {}
    for name in sorted(has_hook):
        registered_in = index.registered.get(name)
        header = index.find(name, registered_in[0] if registered_in else None, tree)
        if header is None:
            continue
        method = resolve(header)
        if not method:
            continue
        target = Target(name, header.relpath, header.line, registered_in is not None, method)
        targets.append(target)
        by_name.setdefault(name, target)
    for target in targets:
        if target.method.delegates_to:
            target.delegate_cls = _assigned_class(tree, index, target.method)
            target.delegate = by_name.get(target.delegate_cls) if target.delegate_cls else None
    targets.sort(key=lambda t: (t.relpath, t.line))
    return targets


def _assigned_class(tree: EngineTree, index: ModelsIndex, method: CaptureMethod) -> str | None:
    """`self.<attr> = SomeClass(...)` in the class that delegates: SomeClass."""
    header = index.find(method.cls, method.relpath, tree)
    if header is None:
        return None
    assert method.delegates_to is not None  # asked only of a class that delegates
    data = tree.read_bytes(header.relpath)
    body = data[header.start:block_end(data, header.start)]
    m = re.search(rb"self\.%s\s*(?::[^=\n]*)?=\s*([A-Z]\w*)\s*\(" % re.escape(method.delegates_to.encode()), body)
    return m.group(1).decode() if m else None


def is_eagle3_drafter_name(name: str, relpath: str) -> bool:
    return "eagle3" in name.lower() or "eagle3" in relpath.rsplit("/", 1)[-1].lower()
