"""Which `compat patch` fixes an engine failure: a patch declares the engine messages of the failures it fixes
(FIXES_ERRORS, and TARGET_CLASSES for a patch that serves some targets only); one that is offered for this
release, not applied yet, and whose message the engine printed, is the fix. The command is the one doctor prints
(compat/fix.py, for the installed engine of the run's interpreter)."""

from __future__ import annotations

from compat.fix import PatchFix
from compat.release_ref import ReleaseRef


def patch_command(engine: str, python: str | None, patch_ids: list[str]) -> str:
    command, _ = PatchFix.commands(ReleaseRef.installed(engine, python), patch_ids, {})
    return command


def patches_for_error(tree, error: str, python: str | None) -> list[dict]:
    """The patches that fix `error` on `tree` and are not applied there yet: [{id, description, command}]."""
    from compat.patches import all_patches
    from compat.patching import APPLY, plan

    named = [p for p in all_patches(tree.engine) if p.applies_to(tree.version) and p.fixes(error)]
    if not named:
        return []
    planned = plan(tree, select=[p.id for p in named])
    return [{"id": item.patch.id, "description": item.patch.description,
             "command": patch_command(tree.engine, python, [item.patch.id])}
            for item in planned if item.state == APPLY]
