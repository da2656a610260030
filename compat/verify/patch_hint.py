"""Which `compat patch` fixes an engine failure: a patch says in its WHY which error it is for
("error on ...: <the engine's message>"); one that is offered for this release, not applied yet,
and whose message the engine printed, is the fix. The command is the one doctor prints."""

from __future__ import annotations

import shlex

MIN_KEY = 12  # shorter messages would match by accident


def error_keys(why: tuple[str, ...]) -> list[str]:
    """The engine messages a patch's WHY quotes: the text after `error ...:`, up to its first ` (`."""
    keys = []
    for line in why:
        head, sep, message = line.partition(": ")
        if sep and head.lower().startswith("error"):
            key = message.split(" (")[0].strip()
            if len(key) >= MIN_KEY:
                keys.append(key)
    return keys


def patch_command(engine: str, python: str | None, patch_ids: list[str]) -> str:
    parts = ["compat", "patch", "--engine", engine, *(["--python", python] if python else [])]
    for pid in patch_ids:
        parts += ["--select", pid]
    return shlex.join(parts)


def patches_for_error(tree, error: str, python: str | None) -> list[dict]:
    """The patches that fix `error` on `tree` and are not applied there yet: [{id, description, command}]."""
    from compat.patches import all_patches
    from compat.patching import APPLY, plan

    named = [p for p in all_patches(tree.engine)
             if p.applies_to(tree.version) and any(key in error for key in error_keys(p.why))]
    if not named:
        return []
    planned = plan(tree, select=[p.id for p in named])
    return [{"id": item.patch.id, "description": item.patch.description,
             "command": patch_command(tree.engine, python, [item.patch.id])}
            for item in planned if item.state == APPLY]
