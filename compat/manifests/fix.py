"""doctor --manifest --fix: doctor's fixes written into the manifests, comments, order and quoting kept.

What is written, for each serving container doctor found fixable: its launch line as doctor prints it (an option the
release lacks dropped, a `--speculative-config` key it would refuse or ignore removed, EAGLE-3 selected), as edits
of the nodes the words came from (a container's `args` / `command` items, the keys of Ray Serve's `engine_kwargs`
and `speculative_config`, an LLMInferenceService's speculative block); and the image tag, when a release is the fix.
A word a chart or controller adds (production-stack's typed flags, `vllm serve` before llm-d's args) or one inside a
shell script is not edited: its fix is said, and the file left as it is there.

The files are read and written with ruamel.yaml's round-trip loader (comments, key order, quotes kept; the
indentation measured from each file), the unified diff is shown first, and nothing is written without --write
(atomically, a temporary file renamed over the original). The tests re-parse what was written, compare its comments
and run doctor on it again.
"""

from __future__ import annotations

import difflib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.core import atomic
from compat.core.errors import EXIT_CHECK_FAILED, EXIT_OK
from compat.core.output import plural
from compat.launch_line import read_line
from compat.manifests import Outcome
from compat.manifests.checking import Checked
from compat.manifests.images import with_release
from compat.manifests.model import Word
from compat.manifests.words import entry_index

EDITABLE = {"list"}


@dataclass
class FileEdits:
    """The node edits of one file: (document, path, operation, value) in the order they apply."""

    path: Path
    edits: list[tuple[int, tuple[str | int, ...], str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan(outcome: Outcome) -> dict[str, FileEdits]:
    files: dict[str, FileEdits] = {}

    def of(file: str) -> FileEdits:
        return files.setdefault(file, FileEdits(Path(file)))

    for checked in outcome.checked:
        serving = checked.serving
        if checked.release_fix and serving.image is not None and checked.version != checked.release_fix:
            image = serving.image
            if image.tag_path:
                new_tag = with_release(image, checked.release_fix).rpartition(":")[2]
                of(image.where.file).edits.append((image.document, image.tag_path, "set", new_tag))
            elif image.path:
                of(image.where.file).edits.append((image.document, image.path, "set", with_release(image, checked.release_fix)))
            else:
                of(image.where.file).notes.append(f"{serving.name}: the release {checked.release_fix} is the fix; "
                                                  f"change {image.ref} at {image.where} by hand")
        if checked.fixed_line and checked.line is not None:
            _line_edits(checked, of)
    return {k: v for k, v in files.items() if v.edits or v.notes}


def _line_edits(checked: Checked, of) -> None:
    serving, line = checked.serving, checked.line
    assert line is not None and checked.fixed_line is not None
    start = entry_index([w.text for w in serving.words]) or 0
    old = serving.words[start + len(line.entry):]
    new = checked.fixed_line[len(line.env) + len(line.entry):]
    opcodes = difflib.SequenceMatcher(None, [w.text for w in old], new, autojunk=False).get_opcodes()
    touched = [w for tag, i1, i2, _j1, _j2 in opcodes if tag != "equal"
               for w in (old[i1:i2] or old[max(0, i1 - 1):i1 + 1])]
    holders = {w.holder for w in touched}
    if holders <= EDITABLE:
        _list_edits(checked, old, new, of)
    elif holders & {"kwargs", "crd"}:
        _spec_edits(checked, old, new, of)
    else:
        where = old[0].where if old else serving.where
        of(where.file).notes.append(f"{serving.name}: its line is built by a chart or a shell script here; write the "
                                    f"fixed line by hand: {' '.join(checked.fixed_line)}")


def _list_edits(checked: Checked, old: list[Word], new: list[str], of) -> None:
    """Items of the container's lists dropped, replaced or inserted where the fixed line differs (later ones first,
    so the indexes of earlier ones hold)."""
    opcodes = difflib.SequenceMatcher(None, [w.text for w in old], new, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in reversed(opcodes):
        if tag == "equal":
            continue
        anchor = old[i1] if i1 < len(old) else (old[-1] if old else None)
        if anchor is None:
            of(checked.serving.where.file).notes.append(f"{checked.serving.name}: no argument list to add {new[j1:j2]} to")
            continue
        edits = of(anchor.where.file).edits
        for word in reversed(old[i1:i2]):
            edits.append((word.document, word.path, "delete", None))
        if j2 > j1:
            at = anchor.path if i1 < len(old) else (*anchor.path[:-1], int(anchor.path[-1]) + 1)
            edits.append((anchor.document, at, "insert", new[j1:j2]))


def _spec_edits(checked: Checked, old: list[Word], new: list[str], of) -> None:
    """Ray Serve engine_kwargs / an LLMInferenceService block: the speculative keys removed or set."""
    assert checked.line is not None
    before = checked.line.spec
    after = read_line([*checked.line.entry, *new]).spec
    word = next((w for w in old if w.holder in ("kwargs", "crd") and w.path and w.path[-1] in
                 ("speculative_config", "speculativeDecoding", "speculator")), None)
    if word is None:
        return
    edits = of(word.where.file).edits
    extra = {"speculativeDecoding": ("additionalConfig",), "speculator": ("config",)}.get(str(word.path[-1]), ())
    for key in before:
        if key not in after:
            edits.append((word.document, (*word.path, *extra, key), "delete-key", None))
    for key, value in after.items():
        if before.get(key) != value and key == "method":
            inner = ("config",) if word.path[-1] == "speculator" else ()
            edits.append((word.document, (*word.path, *inner, key), "set", value))


# -- applying, with ruamel.yaml ------------------------------------------------------------------------------------
def yaml_io(text: str) -> Any:
    from ruamel.yaml import YAML

    mapping, offset = guess_indent(text)
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    rt.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    rt.explicit_start = text.lstrip().startswith("---")
    return rt


def guess_indent(text: str) -> tuple[int, int]:
    """(mapping indent, the dash's offset under its key) as the file writes them (the first of each seen)."""
    rows = [r for r in text.splitlines() if r.strip() and not r.lstrip().startswith("#")]
    mapping = offset = None
    for a, b in zip(rows, rows[1:]):
        if not re.match(r"^\s*(- )?[^\s#][^:]*:\s*(#.*)?$", a):
            continue
        ia = len(a) - len(a.lstrip()) + (2 if a.lstrip().startswith("- ") else 0)
        ib = len(b) - len(b.lstrip())
        if b.lstrip().startswith("- "):
            offset = ib - ia if offset is None and ib >= ia else offset
        elif ib > ia and mapping is None:
            mapping = ib - ia
    return mapping or 2, offset or 0


def apply(text: str, edits: list[tuple[int, tuple[str | int, ...], str, Any]]) -> str:
    rt = yaml_io(text)
    docs = [d for d in rt.load_all(text)]
    for document, path, op, value in edits:
        parent = docs[document]
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        if op == "delete":
            del parent[last]
        elif op == "insert":
            for offset, item in enumerate(value):
                parent.insert(int(last) + offset, item)
        elif op == "delete-key":
            if last in parent:
                del parent[last]
        else:
            parent[last] = value
    out = io.StringIO()
    rt.dump_all(docs, out)
    return keep_unchanged(text, out.getvalue(), {document for document, *_ in edits})


SEPARATOR = re.compile(r"^---(\s|$)")


def keep_unchanged(before: str, after: str, edited: set[int]) -> str:
    """The documents no edit touched, as they were written (a round trip may respell a flow mapping): spliced back
    when both texts split into the same number of documents at their `---` lines."""
    old, new = _documents(before), _documents(after)
    if len(old) != len(new):
        return after
    index = -1
    out = []
    for old_chunk, new_chunk in zip(old, new):
        if any(line.strip() and not line.lstrip().startswith(("#", "---")) for line in old_chunk):
            index += 1
        out += new_chunk if index in edited else old_chunk
    return "".join(out)


def _documents(text: str) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    for line in text.splitlines(True):
        if SEPARATOR.match(line) and any(l.strip() and not l.lstrip().startswith("#") for l in chunks[-1]):
            chunks.append([])
        chunks[-1].append(line)
    return chunks


def diff(file: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{file}", f"b/{file}"))


def write_atomic(path: Path, text: str) -> None:
    """The manifest replaced whole, keeping its mode."""
    atomic.write_text(path, text, keep_mode=True, suffix=".compat-tmp")


def run_fix(outcome: Outcome, args: Any, console: Any, code: int) -> int:
    from rich.text import Text

    planned = plan(outcome)
    changed = 0
    for file, fe in sorted(planned.items()):
        for note in fe.notes:
            console.print(Text(f"not written: {note}", style="yellow"), soft_wrap=True)
        if not fe.edits or file == "<stdin>":
            continue
        before = fe.path.read_text(encoding="utf-8")
        after = apply(before, fe.edits)
        if after == before:
            continue
        changed += 1
        console.print(Text(diff(file, before, after)), soft_wrap=True, end="")
        if args.write:
            write_atomic(fe.path, after)
    if not changed:
        console.print("nothing to write: doctor has no fix to write into these manifests")
        return code
    if not args.write:
        console.print(Text(f"dry run: {plural(changed, 'file')} would change; write them with --fix --write", style="dim"))
        return code
    console.print(Text(f"wrote {plural(changed, 'file')}; check them again: compat doctor --manifest ...", style="bold"))
    return EXIT_OK if code == EXIT_OK else EXIT_CHECK_FAILED
