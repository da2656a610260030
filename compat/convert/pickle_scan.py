"""Read what a torch pickle would build, without building it: the globals it calls and its tensors.

`pickletools.genops` decodes the opcodes; a small stack machine follows them with inert values
(a `Global` is a name, a `Call` a function applied to arguments, a `Persistent` a storage reference),
so nothing is imported or executed. The result says, before torch sees the file, which global a
hostile pickle wants (named in the refusal), and each tensor's storage, offset, size and stride, which
are checked against the storage records in the file so that no tensor can claim more memory than the
file holds (a stride-0 `expand` of one element into 786432 x 1024 is 151 KB on disk).

torch.load(weights_only=True) still unpickles afterwards: this scan names problems first and bounds
memory; torch's allow-list remains the gate.
"""

from __future__ import annotations

import io
import pickletools
from dataclasses import dataclass, field

MAX_OPS = 1_000_000  # a state dict needs ~30 opcodes a tensor; a drafter has < 100 tensors
MAX_DIMS = 64

# torch storage classes (the second item of a persistent id) -> (safetensors dtype, element size)
STORAGE_DTYPES = {
    "FloatStorage": ("F32", 4), "DoubleStorage": ("F64", 8), "HalfStorage": ("F16", 2), "BFloat16Storage": ("BF16", 2),
    "LongStorage": ("I64", 8), "IntStorage": ("I32", 4), "ShortStorage": ("I16", 2), "CharStorage": ("I8", 1),
    "ByteStorage": ("U8", 1), "BoolStorage": ("BOOL", 1),
    "Float8_e4m3fnStorage": ("F8_E4M3", 1), "Float8_e5m2Storage": ("F8_E5M2", 1),
}
REBUILD_TENSOR = {"torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor"}
REBUILD_PARAMETER = "torch._utils._rebuild_parameter"
ORDERED_DICT = "collections.OrderedDict"
ALLOWED = REBUILD_TENSOR | {REBUILD_PARAMETER, ORDERED_DICT, "torch.Size", "_codecs.encode"}
try:  # protocol <= 2 spells names the Python 2 way; the unpickler maps them back (fix_imports) with these tables
    import _compat_pickle
    IMPORT_MAPPING: dict[str, str] = _compat_pickle.IMPORT_MAPPING
    NAME_MAPPING: dict[tuple[str, str], tuple[str, str]] = _compat_pickle.NAME_MAPPING
except ImportError:  # pragma: no cover - every CPython has it
    IMPORT_MAPPING, NAME_MAPPING = {"__builtin__": "builtins", "copy_reg": "copyreg"}, {}


def python3_name(module: str, name: str) -> "Global":
    """The global the unpickler would look up for this (possibly Python 2) spelling."""
    if (module, name) in NAME_MAPPING:
        module, name = NAME_MAPPING[(module, name)]
    elif module in IMPORT_MAPPING:
        module = IMPORT_MAPPING[module]
    return Global(module, name)


class ScanError(ValueError):
    """The pickle is not a plain state dict; the message says what it holds instead."""


@dataclass(frozen=True)
class Global:
    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass
class Call:
    func: object
    args: object
    pairs: list = field(default_factory=list)  # items set on the result (an OrderedDict)
    state: object = None


@dataclass(frozen=True)
class Persistent:
    pid: object


@dataclass
class Dict:
    pairs: list = field(default_factory=list)


@dataclass(frozen=True)
class Storage:
    key: str
    dtype: str  # safetensors dtype
    element_size: int
    numel: int


@dataclass(frozen=True)
class TensorRecord:
    name: str
    storage: Storage
    offset: int  # in elements
    size: tuple[int, ...]
    stride: tuple[int, ...]


_MARK = object()


def scan(data: bytes | io.BytesIO) -> object:
    """Follow one pickle (from the current position of a BytesIO) and return its inert top object."""
    stream = data if isinstance(data, io.BytesIO) else io.BytesIO(data)
    stack: list = []
    memo: dict = {}
    count = 0
    try:
        for op, arg, _ in pickletools.genops(stream):
            count += 1
            if count > MAX_OPS:
                raise ScanError(f"more than {MAX_OPS} pickle opcodes: not a drafter's state dict")
            if op.name == "STOP":
                return stack.pop()
            _step(op.name, arg, stack, memo)
    except ScanError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, EOFError) as exc:  # malformed or truncated opcodes
        raise ScanError(f"the pickle is malformed or truncated ({type(exc).__name__}: {exc})") from None
    raise ScanError("the pickle ends without a STOP opcode (truncated)")


def _pop_mark(stack: list) -> list:
    items: list = []
    while True:
        item = stack.pop()
        if item is _MARK:
            items.reverse()
            return items
        items.append(item)


def _step(name: str, arg, stack: list, memo: dict) -> None:  # noqa: C901 - one branch per opcode family
    if name in ("PROTO", "FRAME"):
        return
    if name == "MARK":
        stack.append(_MARK)
    elif name in ("GLOBAL", "INST"):
        module, _, attr = arg.partition(" ")
        found = python3_name(module, attr)
        if name == "INST":
            raise ScanError(f"the pickle instantiates {found}")
        stack.append(found)
    elif name == "STACK_GLOBAL":
        attr, module = stack.pop(), stack.pop()
        if not (isinstance(module, str) and isinstance(attr, str)):
            raise ScanError("the pickle computes the name of a global")
        stack.append(python3_name(module, attr))
    elif name in ("REDUCE", "NEWOBJ"):
        args, func = stack.pop(), stack.pop()
        stack.append(_call(func, args))
    elif name == "NEWOBJ_EX":
        _kwargs, args, func = stack.pop(), stack.pop(), stack.pop()
        stack.append(_call(func, args))
    elif name == "OBJ":
        items = _pop_mark(stack)
        raise ScanError(f"the pickle instantiates {items[0] if items else 'an object'}")
    elif name.startswith("EXT"):
        raise ScanError("the pickle calls a registered extension (copyreg)")
    elif name == "BUILD":
        state = stack.pop()
        target = stack[-1]
        if isinstance(target, Call):
            target.state = state
        else:
            raise ScanError(f"the pickle sets state on a {type(target).__name__}")
    elif name in ("PERSID", "BINPERSID"):
        stack.append(Persistent(arg if name == "PERSID" else stack.pop()))
    elif name in ("EMPTY_DICT",):
        stack.append(Dict())
    elif name == "DICT":
        items = _pop_mark(stack)
        stack.append(Dict(list(zip(items[::2], items[1::2]))))
    elif name == "EMPTY_LIST":
        stack.append([])
    elif name == "LIST":
        stack.append(_pop_mark(stack))
    elif name == "EMPTY_TUPLE":
        stack.append(())
    elif name == "TUPLE":
        stack.append(tuple(_pop_mark(stack)))
    elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
        n = int(name[-1])
        items = stack[-n:]
        del stack[-n:]
        stack.append(tuple(items))
    elif name in ("EMPTY_SET", "FROZENSET"):
        stack.append(_pop_mark(stack) if name == "FROZENSET" else [])
    elif name == "ADDITEMS":
        items = _pop_mark(stack)
        _container(stack[-1], list).extend(items)
    elif name == "APPEND":
        value = stack.pop()
        _container(stack[-1], list).append(value)
    elif name == "APPENDS":
        items = _pop_mark(stack)
        _container(stack[-1], list).extend(items)
    elif name == "SETITEM":
        value, key = stack.pop(), stack.pop()
        _pairs(stack[-1]).append((key, value))
    elif name == "SETITEMS":
        items = _pop_mark(stack)
        _pairs(stack[-1]).extend(zip(items[::2], items[1::2]))
    elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
        memo[arg] = stack[-1]
    elif name == "MEMOIZE":
        memo[len(memo)] = stack[-1]
    elif name in ("GET", "BINGET", "LONG_BINGET"):
        stack.append(memo[arg])
    elif name == "POP":
        stack.pop()
    elif name == "POP_MARK":
        _pop_mark(stack)
    elif name == "DUP":
        stack.append(stack[-1])
    elif name == "NONE":
        stack.append(None)
    elif name in ("NEWTRUE", "NEWFALSE"):
        stack.append(name == "NEWTRUE")
    elif arg is not None or name in ("INT", "LONG"):  # every literal: ints, floats, strings, bytes
        stack.append(arg)
    else:
        raise ScanError(f"the pickle uses opcode {name}, which a state dict never needs")


def _call(func, args) -> Call:
    if not isinstance(func, Global):
        raise ScanError("the pickle calls something that is not a named global")
    if str(func) not in ALLOWED:
        raise ScanError(f"the pickle calls {func}, which a checkpoint of tensors never needs")
    return Call(func, args)


def _container(obj, kind):
    if not isinstance(obj, kind):
        raise ScanError(f"the pickle appends to a {type(obj).__name__}")
    return obj


def _pairs(obj) -> list:
    if isinstance(obj, Dict):
        return obj.pairs
    if isinstance(obj, Call) and str(obj.func) == ORDERED_DICT:
        return obj.pairs
    raise ScanError(f"the pickle sets items on a {type(obj).__name__}")


# ---------------------------------------------------------------------------------------------
# The state dict the scan describes


def state_dict_tensors(top: object) -> list[tuple[str, object]]:
    """(name, value) pairs of a dict / OrderedDict; values are TensorRecord or what else they are."""
    if isinstance(top, Dict) or (isinstance(top, Call) and str(top.func) == ORDERED_DICT):
        pairs = top.pairs
    else:
        raise ScanError(f"holds {_kind(top)}, not a state dict (name -> tensor)")
    return [(key, _tensor(key, value)) for key, value in pairs]


def _tensor(name, value) -> object:
    if isinstance(value, Call) and str(value.func) == REBUILD_PARAMETER:
        wrapped = value.args if isinstance(value.args, tuple) else ()
        value = wrapped[0] if wrapped else None
    if not (isinstance(value, Call) and str(value.func) in REBUILD_TENSOR):
        return value
    args = value.args
    if not (isinstance(args, tuple) and len(args) >= 4 and isinstance(args[0], Persistent)):
        raise ScanError(f"tensor {name!r}: rebuilt from unexpected arguments")
    storage = _storage(name, args[0].pid)
    offset, size, stride = args[1], args[2], args[3]
    if not (_is_int(offset) and _int_tuple(size) and _int_tuple(stride) and len(size) == len(stride) <= MAX_DIMS):
        raise ScanError(f"tensor {name!r}: offset {offset!r}, size {size!r}, stride {stride!r} are not a tensor's geometry")
    return TensorRecord(str(name), storage, offset, tuple(size), tuple(stride))


def _storage(name, pid) -> Storage:
    # zip format: ('storage', StorageType, key, location, numel); legacy adds view_metadata
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage" and isinstance(pid[1], Global)):
        raise ScanError(f"tensor {name!r}: its storage reference {pid!r} is not a torch storage")
    kind, key, numel = pid[1], pid[2], pid[4]
    if kind.module != "torch" or kind.name not in STORAGE_DTYPES:
        raise ScanError(f"tensor {name!r}: storage type {kind}, which safetensors cannot hold")
    if not (isinstance(key, str) and _is_int(numel) and numel >= 0):
        raise ScanError(f"tensor {name!r}: storage key {key!r} / size {numel!r} are malformed")
    if len(pid) > 5 and pid[5] is not None:
        raise ScanError(f"tensor {name!r}: a view of a storage view (legacy format), not supported")
    dtype, element_size = STORAGE_DTYPES[kind.name]
    return Storage(key, dtype, element_size, numel)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_tuple(value) -> bool:
    return isinstance(value, tuple) and all(_is_int(v) for v in value)


def _kind(value) -> str:
    if isinstance(value, Call):
        return f"the result of {value.func}"
    if isinstance(value, Dict):
        return "dict"
    return type(value).__name__
