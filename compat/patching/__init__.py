"""`compat patch`'s work: apply the version-pinned source patches of `patches/<engine>/` to an engine tree.

sources -> patches -> record:

1. plan (plan.py): the patches offered for the tree's version (`VERSIONS`), each checked against
   the files it edits (located by content, read through the tree, so an in-memory overlay
   works too): already fixed (by an earlier run or upstream), to apply (the new text computed
   in memory and compiled), or refused (the file is not what the patch expects). Nothing is
   written while planning: `--dry-run` prints the plan's diff. Option values come by dest name
   (a patch declares its own options: patches/__init__.py; options.py puts them on a command line,
   reads them back with `given_options` and spells them back with `option_flags`).
2. apply / revert (apply.py), each one journaled operation (journal.py): all-or-nothing across
   files, each file replaced atomically (temp file + rename, mode and owner kept, its cached
   bytecode removed first), and recoverable at any instant: the next run on the tree finds the
   journal of a killed run and puts the tree back to exactly before or after it.
3. record (compat/patch_record.py): `<package>/.compat-patches.json` beside the engine: patch
   ids, versions and options, and per file the sha256 before and after and the original bytes,
   so `--revert` is byte-identical and `compat probe` can show what is applied.

A run holds an exclusive `flock` on the package directory (`tree_lock`), so two runs never interleave.
"""

from compat.patching.apply import apply, check_record, revert
from compat.patching.journal import applied_patches_settled, settle, settle_for_reading, tree_lock
from compat.patching.options import add_patch_options, every_patch, given_options, option_actions, option_flags, resolve_options
from compat.patching.plan import (
    APPLY, BLOCKED, NOT_OFFERED, PRESENT, REFUSED, FileEdit, PlannedPatch, combined_edits, plan, version_range,
)

__all__ = [
    "APPLY", "BLOCKED", "NOT_OFFERED", "PRESENT", "REFUSED", "FileEdit", "PlannedPatch", "add_patch_options", "apply",
    "check_record", "every_patch", "given_options",
    "combined_edits", "option_actions", "option_flags", "plan", "resolve_options", "revert", "settle",
    "settle_for_reading", "tree_lock", "version_range", "applied_patches_settled",
]
