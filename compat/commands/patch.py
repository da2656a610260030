"""`compat patch`: apply the version-pinned fixes of patches/<engine>/ to an engine tree (dry-run, status, revert).

The work (plan, apply, revert, the journal) is compat/patching/, the record compat/patch_record.py;
this file is the command line and what it prints. Each patch declares its own options (its
`add_args`): compat/patching/options.py shows them under the patch's id, and they reach it by dest name.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from compat.core.output import EXAMPLES_HERE, EXIT_CODES, examples_yours, plural, print_json
from compat.commands._source import add_source_arguments
from compat.core.errors import EXIT_OK, EXIT_REFUSED, EXIT_REPORT_FAILED, CompatError, RefusedError, UsageError
from compat.patch_record import RECORD_NAME, applied_patches, read_record, record_path
from compat.patching import (
    APPLY, BLOCKED, NOT_OFFERED, PRESENT, REFUSED, FileEdit, PlannedPatch, add_patch_options, apply, check_record,
    combined_edits, given_options, plan, revert, settle, settle_for_reading, tree_lock, version_range,
)
from compat.core.tree import EngineTree

NAME = "patch"
ORDER = 20
FLEET = True  # --host/--hosts/--ray (compat/fleet/)
SUMMARY = "apply version-pinned fixes to an installed engine or a source tree (dry-run, revert)"
DESCRIPTION = (
    "Apply the patches compat knows for this engine version: e.g. let vLLM 0.10.1-0.17.1 serve Kimi-K2/K2.5 and "
    "DeepSeek-V3 targets with an EAGLE-3 drafter. Shows what each patch will do; all-or-nothing across files, "
    "atomic writes, a record for a byte-identical --revert."
)

EPILOG = EXAMPLES_HERE + """
  compat patch --engine vllm==0.11.0 --dry-run      preview on a release from the package index
                                                    (released trees are a shared cache: preview only)

""" + examples_yours("an installed engine, a serving venv, a source tree") + """
  compat patch --engine vllm --dry-run              what would change in this interpreter's vLLM (a diff; nothing written)
  compat patch --engine vllm                        apply every patch offered for its version
  compat patch --engine vllm --python /opt/venv/bin/python   ... in the serving venv
  compat patch --path ./vllm-src --dry-run          a source tree (checkout or unpacked release)
  compat patch --engine vllm --select vllm-eagle3-whitelist --model-type glm4_moe
                                                    only the whitelist, with one more target type
  compat patch --engine vllm --skip vllm-kimi-k25-eagle3
  compat patch --engine vllm --status               what is applied (also shown by compat probe)
  compat patch --engine vllm --revert               put every patched file back, byte for byte

Patches are pinned to engine version ranges and find their files by content. Running again
is a no-op; a file that is not what a patch expects (a hand edit, a fork) is refused unless
--force. The record lives beside the engine: <site-packages>/vllm/.compat-patches.json.
A run that is killed (or fails on a full disk) leaves a journal there; the next compat run on
the tree puts it back to exactly before or after that run, and says so.
""" + "\n" + EXIT_CODES


def add_arguments(parser) -> None:
    add_source_arguments(parser)
    action = parser.add_argument_group("what to do (default: apply)")
    modes = action.add_mutually_exclusive_group()
    modes.add_argument("--dry-run", action="store_true", help="print the unified diff of what would change; write nothing")
    modes.add_argument("--revert", action="store_true", help="restore every file compat patched, byte for byte, and remove the record")
    modes.add_argument("--status", action="store_true", help="list the patches: applied, present upstream, offered, not offered")
    choice = parser.add_argument_group("which patches")
    choice.add_argument("--select", metavar="ID", action="append", default=[], help="only this patch (repeatable)")
    choice.add_argument("--skip", metavar="ID", action="append", default=[], help="not this patch (repeatable)")
    add_patch_options(parser)
    parser.add_argument("--force", action="store_true",
                        help="patch or revert files that changed since compat wrote them, apply a patch's other files when one "
                        "is not as expected, and offer every patch on a tree of unknown version")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (for CI)")


def run(args, console) -> int:
    from compat.commands._source import tree_from_args

    args.change_made = None  # what this run changed, once it has (compat.cli reports it if printing then fails)
    options = given_options(args)
    tree = tree_from_args(args, progress=not args.json)
    writes = not (args.dry_run or args.status)
    if writes and tree.source.kind == "released":
        raise UsageError(
            f"{tree.engine} {tree.version} from the package index is a shared, read-only cache: it is never patched",
            hint=f"preview with --dry-run, patch the installed engine (--engine {tree.engine}) or a copy (--path DIR)",
        )
    if not tree.version and not args.force and writes:
        raise RefusedError(
            f"cannot tell which {tree.engine} version {tree.root} is; patches are pinned to versions",
            hint="point --path at a tree with vllm/_version.py (or a dist-info), or pass --force to try every patch",
        )
    out = _Output(console, args.json, tree)
    out.data["selected"] = list(args.select)
    if not writes:
        notes, unsettled = settle_for_reading(tree, args.force)
        for note in notes:
            out.note(note)
        if unsettled:
            out.note(f"{unsettled['error']} (fix: {unsettled['fix']})")
        with tree_lock(tree, notify=out.note, shared=True) if tree.source.kind != "released" else nullcontext():
            tree = _fresh(tree)
            if args.status:
                return _status(tree, args, options, out, unsettled)
            planned = plan(tree, select=args.select, skip=args.skip, options=options, force=args.force,
                           record=_quiet_record(tree))
        out.plan(planned, action="dry-run")
        _note_unavailable_selection(planned, args, out)
        out.diffs(combined_edits(planned))
        return out.finish(_exit_code(planned, args))
    with tree_lock(tree, notify=out.note):
        for note in settle(tree, force=args.force):
            out.note(note)
        tree = _fresh(tree)  # what other runs wrote while this one waited for the lock
        record = read_record(tree)
        if args.revert:
            return _revert(tree, record, args, out)
        record, notes = check_record(tree, record, args.force)
        for note in notes:
            out.note(note)
        planned = plan(tree, select=args.select, skip=args.skip, options=options, force=args.force, record=record)
        out.plan(planned, action="apply")
        _note_unavailable_selection(planned, args, out)
        refused = [p for p in planned if p.state in (REFUSED, BLOCKED)]
        if refused:
            out.note("nothing was changed: " + "; ".join(f"{p.patch.id} {p.state}" for p in refused))
            return out.finish(EXIT_REFUSED)
        record, edits, notes = apply(tree, planned, record)
        if edits:
            args.change_made = f"applied {', '.join(p.patch.id for p in planned if p.state == APPLY)} (record {record_path(tree)})"
        for note in notes:
            out.note(note)
        out.applied(edits, planned)
        return out.finish(_exit_code(planned, args))


def _fresh(tree: EngineTree) -> EngineTree:
    """The same tree without its cache of file contents (read before the lock or before settling)."""
    return EngineTree(tree.engine, tree.root, tree.version, tree.source)


def _quiet_record(tree: EngineTree) -> dict | None:
    try:
        return read_record(tree)
    except CompatError:
        return None


def _note_unavailable_selection(planned: list[PlannedPatch], args, out: "_Output") -> None:
    for item in planned:
        if args.select and item.state == NOT_OFFERED:
            out.note(f"{item.patch.id} was selected but is not offered here: {item.reason}")


def _exit_code(planned: list[PlannedPatch], args) -> int:
    if any(p.state in (REFUSED, BLOCKED) for p in planned):
        return EXIT_REFUSED
    if args.select and any(p.state == NOT_OFFERED for p in planned):
        return EXIT_REFUSED  # an explicitly chosen patch that cannot apply here
    return EXIT_OK


def _status(tree: EngineTree, args, options: dict, out: "_Output", unsettled: dict | None) -> int:
    record = read_record(tree)
    planned = plan(tree, select=args.select, skip=args.skip, options=options, force=args.force, record=record)
    out.plan(planned, action="status")
    out.record(applied_patches(tree) + ([unsettled] if unsettled else []), record)
    return out.finish(EXIT_OK)


def _revert(tree: EngineTree, record: dict | None, args, out: "_Output") -> int:
    if not record:
        out.note(f"nothing to revert: compat has not patched {tree.root / tree.engine} (no {RECORD_NAME})")
        out.data.update(action="revert", reverted=[])
        return out.finish(EXIT_OK)
    ids = [p["id"] for p in record.get("patches", [])]
    restored, notes = revert(tree, record, args.force)
    args.change_made = f"reverted {', '.join(ids) or 'nothing'} (removed {record_path(tree)})"
    for note in notes:
        out.note(note)
    out.data.update(action="revert", reverted=ids, files=restored)
    if not out.json:
        out.console.print(f"Reverted {', '.join(ids) or 'nothing'}: restored {plural(len(restored), 'file')} byte for byte; removed {record_path(tree)}")
        for rel in restored:
            out.console.print(f"  {rel}")
    return out.finish(EXIT_OK)


_STATE_STYLE = {APPLY: "bold green", PRESENT: "green", NOT_OFFERED: "dim", REFUSED: "bold red", BLOCKED: "yellow"}


class _Output:
    """Human output on the console, or one JSON document at the end (--json)."""

    def __init__(self, console, as_json: bool, tree: EngineTree):
        self.console = console
        self.json = as_json
        self.tree = tree
        self.data: dict[str, Any] = {
            "engine": tree.engine, "version": tree.version, "source": tree.source.to_json(),
            "record": str(record_path(tree)), "notes": [],
        }

    def note(self, text: str) -> None:
        self.data["notes"].append(text)
        if not self.json:
            self.console.print(f"[yellow]note:[/] {text}")

    def plan(self, planned: list[PlannedPatch], action: str) -> None:
        self.data.update(action=action, patches=[p.to_json() for p in planned])
        if self.json:
            return
        from rich.markup import escape

        t = self.tree
        self.console.print(f"[bold]{t.engine} {t.version or '(version unknown)'}[/]  {t.source.kind}: {t.root}")
        if not planned:
            self.console.print("  no patch selected" if self.data.get("selected") else f"  compat has no patches for {t.engine} yet")
        for item in planned:
            style = _STATE_STYLE.get(item.state, "")
            self.console.print(f"  [{style}]{item.state:<12}[/] [bold]{item.patch.id}[/]  [dim]({version_range(item.patch.versions)})[/]")
            if item.state == NOT_OFFERED:
                continue
            self.console.print(f"      {escape(item.patch.description)}")
            if item.state == APPLY:
                for edit in item.edits:
                    added, removed = edit.stat()
                    self.console.print(f"      {edit.relpath}  (+{added} -{removed})")
            elif item.state == PRESENT:
                by = "applied by compat" if item.applied_by_compat else "already in this release: nothing to do"
                self.console.print(f"      {by} ({', '.join(item.files)})")
            if item.reason:
                self.console.print(f"      [dim]{escape(item.reason)}[/]")
        offered = [p for p in planned if p.state != NOT_OFFERED]
        if planned and not offered:
            self.console.print(f"  no patch applies to {t.engine} {t.version}: nothing to do")

    def diffs(self, edits: list[FileEdit]) -> None:
        text = "".join(e.diff() for e in edits)
        self.data["diff"] = text
        if self.json:
            return
        if text:
            self.console.print()
            self.console.out(text, highlight=False, end="")  # plain text: pipe it to `patch -p1` or a pager
            self.console.print(f"\n[dim]dry run: nothing was written ({plural(len(edits), 'file')} would change)[/]")
        else:
            self.console.print("dry run: nothing would change")

    def applied(self, edits: list[FileEdit], planned: list[PlannedPatch]) -> None:
        self.data["changed"] = [e.relpath for e in edits]
        if self.json:
            return
        if not edits:
            ours = [p.patch.id for p in planned if p.state == PRESENT and p.applied_by_compat]
            upstream = [p.patch.id for p in planned if p.state == PRESENT and not p.applied_by_compat]
            parts = ([f"already applied by compat: {', '.join(ours)}"] if ours else []) + (
                [f"{self.tree.engine} {self.tree.version} already has the fix of {', '.join(upstream)}"] if upstream else [])
            self.console.print("Nothing to do, no file changed: " + ("; ".join(parts) or "no patch applies to this version"))
            return
        ids = [p.patch.id for p in planned if p.state == APPLY]
        self.console.print(f"Applied {', '.join(ids)}: {plural(len(edits), 'file')} changed; record {record_path(self.tree)}")
        where = f"--path {self.tree.root}" if self.tree.source.kind == "path" else f"--engine {self.tree.engine}"
        from compat.sources.installed import installed_interpreter

        python = installed_interpreter(self.tree)
        self.console.print(f"Undo with: compat patch {where}{f' --python {python}' if python else ''} --revert")

    def record(self, applied: list[dict], record: dict | None) -> None:
        self.data["applied"] = applied
        if self.json:
            return
        if not applied:
            self.console.print(f"No compat patch applied here (no {record_path(self.tree)})")
            return
        self.console.print(f"Applied by compat (record {record_path(self.tree)}):")
        for p in applied:
            if "interrupted" in p:  # a journal this run could not settle (see the note above)
                self.console.print(f"  [red]an interrupted {p['interrupted']} run[/] ({', '.join(p['files'])}): journal {p['journal']}")
                continue
            state = "intact" if p["intact"] else "[red]changed since[/]"
            self.console.print(f"  {p['id']}  {p['applied_at']}  {', '.join(p['files'])}  ({state})")

    def finish(self, code: int) -> int:
        if self.json:
            self.data["exit_code"] = code
            print_json(self.data, "patch")
        return code
