"""doctor's work, counted rather than timed (issue 42): over N releases it decodes each facts-cache entry (a release's
probe report, its patched overlays', the in-memory patches') and each fact of it at most once, shares them between a
release's row and the readings of its ask, and a reading runs again only the checks that read what its answer changes;
the answers are the ones a doctor that reuses nothing gives."""

from __future__ import annotations

import pytest

from compat import fact_parts
from compat.checks import DRAFTER_FIELDS, Check, Ctx, Options
from compat.doctor import DEPENDS, diagnose, diagnose_range, read_drafter, read_target
from compat.doctor import reuse
from compat.doctor.inputs import recognise
from compat.doctor.releases import ReleaseFinder
from compat.report import build_report

# 0.11.1: patched overlays and conversions; 0.18.0: the readings differ (as is / converted); 0.22.0: both convert
VERSIONS = ("0.11.1", "0.18.0", "0.22.0")


@pytest.fixture
def ask(tmp_path, kimi):
    """The Kimi-K2 target and a drafter whose layer ids nothing settles the convention of (layers.0.*: no SpecForge
    fingerprint): doctor asks --layer-ids-convention on every release here, and reads it both ways."""
    from doctor_models import specforge_drafter

    target = read_target(kimi.target)
    return target, read_drafter(specforge_drafter(tmp_path / "unsettled", prefix="layers.0."), target)


def doctor_over(release, target, drafter) -> dict:
    return diagnose_range("vllm", ">=0.10", target, drafter, versions=list(VERSIONS), open_release=lambda v: release("vllm", v))


def fresh_process() -> None:
    """Nothing read yet, nothing counted: as a new `compat doctor` process starts (the facts cache on disk is warm)."""
    fact_parts.forget_all()
    fact_parts.DECODES.clear()


def decoded_twice() -> dict[tuple[str, str], int]:
    return {where: n for where, n in fact_parts.DECODES.items() if n > 1}


@pytest.mark.parametrize("drafter_kind", ["settled", "asks"])
def test_a_doctor_over_n_releases_decodes_each_fact_file_once(release, kimi, ask, drafter_kind):
    target, unsettled = ask
    drafter = unsettled if drafter_kind == "asks" else read_drafter(kimi.drafter, target)
    doctor_over(release, target, drafter)  # the facts cache filled (probes, in-memory patches)
    fresh_process()
    table = doctor_over(release, target, drafter)
    assert decoded_twice() == {}
    reports = {where for where, part in fact_parts.DECODES if part == "" and "probe-report" in where}
    for version in VERSIONS:  # each release's own report was read, once
        assert [w for w in reports if f"/{version}/" in w], version
    assert len(table["rows"]) == len(VERSIONS)
    if drafter_kind == "asks":
        assert {row["verdict"] for row in table["rows"]} == {DEPENDS} and all(len(row["answers"]) == 2 for row in table["rows"])


def test_the_count_sees_a_fact_file_decoded_twice(release, kimi, monkeypatch):
    """What the test above guards against: with nothing kept in the process, the same files are decoded again."""
    target = read_target(kimi.target)
    drafter = read_drafter(kimi.drafter, target)
    doctor_over(release, target, drafter)
    fresh_process()
    monkeypatch.setattr(fact_parts, "KEEP_IN_PROCESS", 0)
    doctor_over(release, target, drafter)
    assert decoded_twice()


def test_a_reading_runs_again_only_the_checks_that_read_what_it_changes(release, ask, monkeypatch):
    target, drafter = ask
    tree = release("vllm", "0.18.0")
    finder = ReleaseFinder("vllm", open_release=lambda v: release("vllm", v), versions=list(VERSIONS))
    options = Options()
    told = recognise(read_drafter(drafter.path, target), target, convention="output-of")
    changed = {name for name in DRAFTER_FIELDS if getattr(drafter, name) != getattr(told, name)}
    assert "settled" in changed and "config" not in changed  # the answer settles the ids; the files are the same
    runs: list[tuple[str, object, object]] = []
    real_call = Check.__call__

    def counted(check: Check, ctx: Ctx):
        runs.append((check.id, ctx.drafter, ctx.report))
        return real_call(check, ctx)

    monkeypatch.setattr(Check, "__call__", counted)
    with reuse.reusing() as row:
        diagnose(tree, target, drafter, options, releases=finder)
        report = row.of_tree(tree, build_report)  # the release's own (the fixes run checks on patched overlays too)
        first = [check for check, on, about in runs if on is drafter and about is report]
        runs.clear()
        reading = diagnose(tree, target, told, options, releases=finder)
    again = [check for check, on, about in runs if on is told and about is report]
    assert len(first) == len(set(first)) and len(again) == len(set(again))  # at most once per reading
    assert "layer-ids" in again  # it reads the drafter's ids
    assert "target-whitelist" in first and "target-whitelist" not in again  # it reads no drafter field
    assert len(again) < len(first)
    alone = diagnose(tree, target, told, options, releases=finder)  # nothing reused
    assert reading == alone


def test_the_readings_reused_give_the_verdicts_of_a_doctor_that_reuses_nothing(release, ask, monkeypatch):
    target, drafter = ask
    table = doctor_over(release, target, drafter)
    monkeypatch.setattr(reuse, "reusing", _nothing_shared)
    assert doctor_over(release, target, drafter) == table


class _nothing_shared:
    """reuse.reusing() that shares nothing: every diagnosis runs every check (what doctor did before issue 42)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
