"""Valid safetensors files and hostile mutations of them, driven by a random.Random.

Used by the header fuzz (tests/checkpoints/test_header_fuzz.py, where hypothesis supplies the Random
and shrinks through it) and by bench/bench_hostile.py (a seeded Random, 10,000 files). Stdlib only.

A header is a tree of Obj (a JSON object as a list of [key, value] pairs, so keys can repeat), lists,
str/int/bool/None and Raw (JSON text emitted verbatim: -0, 1e400, 5,000-digit integers, NaN, lone
surrogate escapes, deep nesting), emitted with random spacing and escaping. Each draw is one
decision, so a mutation costs a few dozen draws (hypothesis limits how much one example may draw).
"""

from __future__ import annotations

import json
import random
import struct

# The library's dtypes and bits (safetensors 0.8), and a few names it does not know.
DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32,
    "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}
# In the order valid files pick them: hypothesis favours the first choices, so the common ones lead.
LAYOUT_DTYPES = ["F32", "BF16", "F16", "I64", "U8", "BOOL", "F8_E4M3", "I32", "F64", "C64", "I8", "I16", "U16", "U32",
                 "U64", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"]
UNKNOWN_DTYPES = ["f32", "F128", "C128", "Q4_K", "", "F8_E4M3FN", "BF16 ", "i8"]
NAMES = ["fc.weight", "norm.weight", "layers.0.mlp.up_proj.weight", "d2t", "t2d", "", "a", "é", "名前", "emoji😀",
         "x\u0000y", "__metadata__x", "tab\tname", "quote\"name", "back\\slash", "a" * 300]


class Raw:
    """JSON text emitted as is."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return f"Raw({self.text[:40]!r}{'...' if len(self.text) > 40 else ''})"


class Obj:
    """A JSON object as [key, value] pairs: keys may repeat, and a key may be a Raw."""

    def __init__(self, pairs=None):
        self.pairs = [list(p) for p in (pairs or [])]

    def get(self, key):
        return next((v for k, v in self.pairs if k == key), None)

    def __repr__(self):
        return f"Obj({self.pairs!r})"


# ---------------------------------------------------------------------------------------------
# Valid files


def valid_file(rng: random.Random) -> tuple[Obj, bytes]:
    """A header tree the library accepts and its data section."""
    count = rng.choice([2, 1, 3, 0, 5])
    names = rng.sample(NAMES, count)
    entries, sizes = [], []
    for name in names:
        dtype = rng.choice(LAYOUT_DTYPES)
        bits = DTYPE_BITS[dtype]
        shape = [rng.choice([2, 1, 3, 0, 4, 8]) for _ in range(rng.choice([1, 2, 0, 3]))]
        elements = 1
        for d in shape:
            elements *= d
        if (elements * bits) % 8:  # sub-byte dtypes need a whole number of bytes
            shape, elements = shape + [8], elements * 8
        entries.append((name, dtype, shape))
        sizes.append(elements * bits // 8)
    order = list(range(count))
    rng.shuffle(order)  # the data is laid out in another order than the keys
    offsets, position = {}, 0
    for index in order:
        offsets[index] = [position, position + sizes[index]]
        position += sizes[index]
    pairs = []
    if rng.random() < 0.5:
        pairs.append(["__metadata__", Obj([["format", "pt"]] + ([["note", rng.choice(NAMES)]] if rng.random() < 0.5 else []))])
    for index, (name, dtype, shape) in enumerate(entries):
        pairs.append([name, Obj([["dtype", dtype], ["shape", shape], ["data_offsets", offsets[index]]])])
    rng.shuffle(pairs)
    return Obj(pairs), random.Random(rng.randrange(2**32)).randbytes(position)  # one draw for all the bytes


def tree_from_json(text: str) -> Obj:
    """The tree of an existing header (to mutate a real checkpoint's)."""
    def convert(value):
        if isinstance(value, list) and value and isinstance(value[0], tuple):
            return Obj([[k, convert(v)] for k, v in value])
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return convert(json.loads(text, object_pairs_hook=list))


# ---------------------------------------------------------------------------------------------
# Emitting


def emit(node, rng: random.Random) -> str:
    spaced = rng.random() < 0.3
    ascii_only = rng.random() < 0.5
    colon, comma = (": ", ", ") if spaced else (":", ",")

    def text(value) -> str:
        if isinstance(value, Raw):
            return value.text
        if isinstance(value, Obj):
            return "{" + comma.join(f"{text(k) if isinstance(k, Raw) else string(k)}{colon}{text(v)}" for k, v in value.pairs) + "}"
        if isinstance(value, list):
            return "[" + comma.join(text(v) for v in value) + "]"
        if isinstance(value, str):
            return string(value)
        return json.dumps(value)

    def string(value: str) -> str:
        return json.dumps(value, ensure_ascii=ascii_only)

    out = text(node)
    return (" " if spaced and rng.random() < 0.3 else "") + out


def file_bytes(header_text: str, data: bytes, pad: bool = True) -> bytes:
    raw = header_text.encode("utf-8", "surrogatepass")  # a raw lone surrogate becomes invalid UTF-8, as it would on disk
    if pad:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


# ---------------------------------------------------------------------------------------------
# Mutations


def hostile_value(rng: random.Random):
    """A value that is wrong, extreme or exotic in most places of a header."""
    depth = rng.choice([2, 100, 125, 126, 127, 128, 300, 1500])
    digits = rng.choice([19, 20, 21, 25, 309, 310, 400, 1001, 4301, 5000])
    return rng.choice([
        0, 1, -1, 2**63 - 1, 2**63, 2**64 - 1, Raw(str(2**64)), Raw("-0"), Raw("-0.0"), Raw("9" * digits), Raw("-" + "9" * digits),
        Raw("1e400"), Raw("-1e400"), Raw("1e-400"), Raw("1.0"), Raw("1E2"), Raw("0." + "0" * 1200 + "1"), Raw("NaN"),
        Raw("Infinity"), Raw("-Infinity"), True, False, None, "", "F32", "f32", rng.choice(UNKNOWN_DTYPES),
        Raw('"\\ud800"'), Raw('"\\udc00x"'), Raw('"\\ud83d\\ude00"'), Raw('"\\ud83d"'), "\ud800", [], Obj(),
        Raw("[" * depth + "]" * depth), Raw('{"k":' * depth + "1" + "}" * depth), Raw("[" * depth + "0" + "]" * depth),
        ["F32"], Obj([["F32", None]]), Obj([["F32", 1]]), ["F32", [1], [0, 4]], [0, 4, 4], [4, 0],
        [2**62] * rng.choice([2, 3, 50]) + [0], [0] + [2**62] * 3, [2**64 - 1, 0], [2**32, 2**32], [2**32, 2**31],
        Raw("[" + ",".join(["4611686018427387904"] * rng.choice([2, 1000, 20000])) + ",0]"),
        Raw("[" + ",".join(["{}"] * rng.choice([10, 3000])) + "]"),
        "x" * rng.choice([10, 5000]),
    ])


def _containers(node, found=None):
    """Every (container, index) in the tree: an Obj pair's value slot or a list element."""
    found = [] if found is None else found
    if isinstance(node, Obj):
        for pair in node.pairs:
            found.append((pair, 1))
            _containers(pair[1], found)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            found.append((node, i))
            _containers(item, found)
    return found


def _entries(tree: Obj) -> list[list]:
    return [pair for pair in tree.pairs if isinstance(pair[1], Obj) and pair[0] != "__metadata__"]


def mutate_tree(tree: Obj, rng: random.Random) -> None:
    """One structural mutation, in place."""
    entries = _entries(tree)
    entry = rng.choice(entries)[1] if entries else None
    kind = rng.randrange(14)
    if kind == 0 or entry is None:  # any value anywhere becomes a hostile one
        slots = _containers(tree)
        if slots:
            container, index = rng.choice(slots)
            container[index] = hostile_value(rng)
        else:
            tree.pairs.append([rng.choice(NAMES), hostile_value(rng)])
    elif kind == 1:  # a field of a tensor
        if entry.pairs:
            rng.choice(entry.pairs)[1] = hostile_value(rng)
    elif kind == 2:  # the dtype: another known one (size mismatch), unknown, sub-byte
        dtype = entry.get("dtype")
        choice = rng.choice(list(DTYPE_BITS) + UNKNOWN_DTYPES)
        for pair in entry.pairs:
            if pair[0] == "dtype":
                pair[1] = choice if rng.random() < 0.8 else [dtype]
    elif kind == 3:  # the offsets: shifted, swapped, overlapping, beyond the data
        for pair in entry.pairs:
            if pair[0] == "data_offsets" and isinstance(pair[1], list) and len(pair[1]) == 2 and all(type(o) is int for o in pair[1]):
                begin, end = pair[1]
                pair[1] = rng.choice([[begin + 1, end + 1], [end, begin], [0, end - begin], [begin, end + 4],
                                      [begin - 1, end], [begin, 2**64 - 1], [2**64 - 1, 2**64 - 1], [begin, end, end]])
    elif kind == 4:  # the shape: huge, overflowing, off by one
        for pair in entry.pairs:
            if pair[0] == "shape":
                shape = pair[1] if isinstance(pair[1], list) else []
                pair[1] = rng.choice([shape + [1], shape + [0], [2**62] * 3 + [0], [0] + [2**62] * 3, shape[:-1],
                                      [2**64 - 1, 2], [2**63, 2], shape + [2**32], [-1], [1.0], [True], [[1]], {}])
    elif kind == 5:  # a key given twice: a tensor, a field, __metadata__, a metadata key
        target = rng.choice([tree, entry, tree.get("__metadata__")])
        if isinstance(target, Obj) and target.pairs:
            pair = rng.choice(target.pairs)
            target.pairs.insert(rng.randrange(len(target.pairs) + 1), [pair[0], pair[1] if rng.random() < 0.5 else hostile_value(rng)])
    elif kind == 6:  # an ignored field with any JSON
        entry.pairs.insert(rng.randrange(len(entry.pairs) + 1), [rng.choice(["x", "extra", "DTYPE", "\ud800"]), hostile_value(rng)])
    elif kind == 7:  # a field missing or renamed
        if entry.pairs:
            index = rng.randrange(len(entry.pairs))
            if rng.random() < 0.5:
                del entry.pairs[index]
            else:
                entry.pairs[index][0] = rng.choice(["Dtype", "shape ", "data_offset", Raw('"\\u0064type"'), Raw('"\\ud800"')])
    elif kind == 8:  # a tensor written as an array, or as something else entirely
        pair = rng.choice(entries)
        dtype, shape, offsets = (pair[1].get(k) for k in ("dtype", "shape", "data_offsets"))
        pair[1] = rng.choice([[dtype, shape, offsets], [dtype, shape], [dtype, shape, offsets, 0], None, "F32", [], Obj()])
    elif kind == 9:  # the metadata: non-strings, surrogates, wrong type
        meta = tree.get("__metadata__")
        value = rng.choice([Obj([["format", hostile_value(rng)]]), Obj([[Raw('"\\ud800"'), "v"]]), Obj([["k", Raw('"\\ud800"')]]),
                            Obj([["k", "\ud800"]]), Obj(), None, [], "pt", Obj([["k", "v" * 3000]])])
        if meta is None:
            tree.pairs.insert(0, ["__metadata__", value])
        else:
            for pair in tree.pairs:
                if pair[0] == "__metadata__":
                    pair[1] = value
    elif kind == 10:  # a tensor dropped (its bytes become a gap or trailing bytes)
        tree.pairs.remove(rng.choice(entries))
    elif kind == 11:  # the tensor name: exotic, a surrogate, the metadata key
        pair = rng.choice(entries)
        pair[0] = rng.choice([Raw('"\\ud800"'), Raw('"a\\udfff"'), "\ud800", "__metadata__", "", "\u202e", rng.choice(NAMES)])
    elif kind == 12:  # nesting around the whole header
        depth = rng.choice([1, 126, 127, 1000])
        tree.pairs = [["x", Raw("[" * depth + "]" * depth)]] + tree.pairs
    else:  # a zero-size tensor stacked on another's offset
        pair = rng.choice(entries)
        offsets = pair[1].get("data_offsets")
        start = offsets[0] if isinstance(offsets, list) and offsets and isinstance(offsets[0], int) else 0
        tree.pairs.append([rng.choice(NAMES) + ".zero", Obj([["dtype", "F32"], ["shape", [0]], ["data_offsets", [start, start]]])])


def _length(n: int) -> bytes:
    return struct.pack("<Q", min(max(n, 0), 2**64 - 1))


def mutate_bytes(blob: bytes, rng: random.Random) -> bytes:
    """One byte-level mutation of a whole file: its header text, length field or data."""
    data = bytearray(blob)
    (n,) = struct.unpack("<Q", blob[:8]) if len(blob) >= 8 else (0,)
    end = min(8 + n, len(data))
    kind = rng.randrange(9)
    position = rng.randrange(8, end) if end > 8 else 8
    if kind == 0 and end > 8:  # flip a bit of the header
        data[position] ^= 1 << rng.randrange(8)
    elif kind == 1 and end > 8:  # a header byte becomes a special one
        data[position] = rng.choice(b'"\\{}[],:0-e \x00\x7f\x80\xc0\xed\xff')
    elif kind == 2:  # bytes inserted into the header (the length field follows, or not)
        insert = rng.choice([b"\xed\xa0\x80", b"\xc0\xaf", b"\xef\xbb\xbf", b"\\", b'"', b",", b"\x00", b" " * 9, b"]", b"}"])
        data[position:position] = insert
        if rng.random() < 0.7:
            data[:8] = _length(n + len(insert))
    elif kind == 3 and end > 8:  # a slice of the header deleted
        cut = rng.randrange(1, 8)
        del data[position:position + cut]
        if rng.random() < 0.7:
            data[:8] = _length(n - cut)
    elif kind == 4:  # the length field
        data[:8] = _length(rng.choice([0, 1, 2, max(0, n - 1), n + 1, n + 8, len(blob), len(blob) - 7, 100_000_000,
                                                 100_000_001, 2**63, 2**64 - 1]))
    elif kind == 5:  # the data section grows or shrinks
        if rng.random() < 0.5:
            data += bytes(rng.choice([1, 4, 8, 100]))
        else:
            del data[max(8 + n, len(data) - rng.choice([1, 4, 8, 100])):]
    elif kind == 6:  # the file truncated anywhere
        del data[rng.randrange(len(data) + 1):]
    elif kind == 7:  # no padding, or padding of NULs / tabs / newlines
        pad = rng.choice([b"\x00" * 3, b"\t\n\r ", b"\n"])
        data[end:end] = pad
        data[:8] = _length(n + len(pad))
    else:  # the header replaced by something that is not an object
        raw = rng.choice([b"[]", b'"x"', b"null", b"1", b"", b"{", b"{}", b"{} {}", b"\xef\xbb\xbf{}"])
        data = bytearray(struct.pack("<Q", len(raw)) + raw)
    return bytes(data)


def mutated_file(rng: random.Random, base: tuple[Obj, bytes] | None = None) -> bytes:
    """A valid file, then 0-3 structural and 0-2 byte mutations (none at all now and then). The first
    choice of every list is the one hypothesis favours: one structural mutation, no byte mutation."""
    tree, data = base if base is not None else valid_file(rng)
    for _ in range(rng.choice([1, 2, 1, 3, 0])):
        mutate_tree(tree, rng)
    blob = file_bytes(emit(tree, rng), data, pad=rng.random() < 0.9)
    for _ in range(rng.choice([0, 1, 0, 2, 0])):
        blob = mutate_bytes(blob, rng)
    return blob


# ---------------------------------------------------------------------------------------------
# The oracle: the safetensors library (imported here only, lazily: the rest of this file is stdlib)


def library_view(path) -> tuple[dict, dict | None] | None:
    """What the safetensors library reads from `path` ({name: (dtype, shape)}, metadata), None if it refuses."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "np") as f:
            tensors = {}
            for name in f.keys():
                piece = f.get_slice(name)
                tensors[name] = (piece.get_dtype(), list(piece.get_shape()))
            return tensors, f.metadata() or None
    except Exception:  # the library's refusal (SafetensorError, and a few others it raises)
        return None


def differential(path) -> tuple[str | None, str]:
    """(problem, outcome) of reading `path` with compat's read_header and with the library: problem is
    None when they agree, or compat refuses for one of the documented reasons (STRICTER), else what
    differs; outcome says which way it went. Whatever read_header raises that is not a
    CheckpointFormatError propagates. Every refusal must be one bounded line naming the file."""
    from compat.safetensors_stream import STRICTER, CheckpointFormatError, read_header

    library = library_view(path)
    try:
        header = read_header(path)
    except CheckpointFormatError as err:
        outcome = "both refuse" if library is None else f"compat stricter: {err.stricter}"
        if "\n" in err.message or len(err.message) > 1000 or not err.message.startswith(f"{path}: "):
            return f"the message is not one bounded line naming the file: {err.message[:300]!r}", outcome
        if library is not None and err.stricter not in STRICTER:
            return f"the library reads it, compat refuses it: {err.message[:300]}", outcome
        return None, outcome
    if library is None:
        return "compat reads it, the library refuses it", "compat reads, the library refuses"
    ours = ({name: (t.dtype, list(t.shape)) for name, t in header.tensors.items()}, header.metadata or None)
    if ours != library:
        return f"both read it, differently: compat {str(ours)[:200]}, library {str(library)[:200]}", "both read, differently"
    return None, "both read"
