"""`compat ARGS...` with doctor's in-memory patching memoised in the facts cache: a projection for the doctor.

    python bench/doctor_memo_shim.py doctor TARGET DRAFTER --engine vllm --releases '>=0.10,<0.34'

The doctor (compat/doctor.py today, compat/doctor/ soon) applies each offered patch to a release in memory
with libcst and probes the result; on a warm cache the probe answers come from the facts cache, but the
libcst transforms still run, and they are most of the time left. This script replaces the doctor's
`_apply_in_memory` with the same work wrapped in `compat.facts.memo` (a released tree is immutable, so
the transformed text of a patch with given options is too) and runs the CLI. It is what the doctor would
do with the 10-line change given in the bench README; nothing here is used by compat itself.

With COMPAT_BENCH_PARALLEL=1 it also probes the releases missing from the facts cache in parallel
processes before diagnosing them (`compat.report.probe_missing`), as doctor's `diagnose_range` would.
"""

from __future__ import annotations

import sys


def _transformed(patch, overlay, options: dict) -> dict:
    """{relpath: new text} the patch makes in the overlay, or {"refused": why}."""
    try:
        changes = {}
        for role, relpath in patch.find_files(overlay).items():
            source = overlay.text(relpath)
            if patch.has_fix(role, source, options):
                continue
            new = patch.transform(role, source, options)
            if new != source:
                changes[relpath] = new
        return {"changes": changes}
    except Exception as err:  # noqa: BLE001 - the doctor treats a patch that cannot apply as no fix
        return {"refused": f"{type(err).__name__}: {err}"}


def apply_in_memory(patch, overlay, options: dict) -> bool:
    from compat import facts

    inputs = {"patch": patch.id, "options": options}
    result = facts.memo(overlay, "in-memory-patch", inputs, lambda: _transformed(patch, overlay, options),
                        code=("compat.patches",))
    for relpath, text in (result.get("changes") or {}).items():
        overlay.replace(relpath, text)
    return bool(result.get("changes"))


def parallel(diagnose_range):
    """diagnose_range that first fills the facts cache for every release of the range, in parallel."""

    def wrapped(engine, specifier, target, drafter, options=None, **kwargs):
        from packaging.specifiers import SpecifierSet
        from packaging.version import Version

        from compat.core.errors import SourceError
        from compat.report import probe_missing
        from compat.sources.released import fetch_release, list_releases

        cache_dir, offline = kwargs.get("cache_dir"), kwargs.get("offline", False)
        versions = kwargs.get("versions") or list_releases(engine, cache_dir=cache_dir, offline=offline)
        trees = []
        for version in (v for v in versions if SpecifierSet(specifier).contains(Version(v), prereleases=False)):
            try:
                trees.append(fetch_release(engine, f"=={version}", cache_dir=cache_dir, offline=offline, progress=False))
            except SourceError:
                continue
        probe_missing(trees)
        return diagnose_range(engine, specifier, target, drafter, options, **kwargs)

    return wrapped


def main(argv: list[str]) -> int:
    import os

    import compat.commands.doctor
    import compat.doctor
    from compat import cli

    compat.doctor._apply_in_memory = apply_in_memory
    if os.environ.get("COMPAT_BENCH_PARALLEL") == "1":
        compat.commands.doctor.diagnose_range = parallel(compat.doctor.diagnose_range)
    return cli.main(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
