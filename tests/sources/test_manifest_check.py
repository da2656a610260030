"""A cached release checked against its manifest (compat/sources/manifest.py): the stats are shared by threads, and
the problem said is still the first file, in the manifest's order, that is missing or of another size."""

from __future__ import annotations

import pytest

from compat.sources import manifest


@pytest.fixture
def release(tmp_path):
    folder = tmp_path / "0.11.0"
    for n in range(200):
        path = folder / "vllm" / f"m{n // 50}" / f"f{n:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = %d\n" % n)
    return folder, manifest.write_manifest(folder, "vllm")


@pytest.mark.parametrize("threads", [1, 4])
def test_a_sound_release_has_no_problem_whatever_the_threads(release, monkeypatch, threads):
    monkeypatch.setattr(manifest, "STAT_THREADS", threads)
    folder, sealed = release
    assert manifest._problem(folder, sealed) is None


@pytest.mark.parametrize("threads", [1, 3, 4])
def test_the_first_damaged_file_in_the_manifests_order_is_said(release, monkeypatch, threads):
    monkeypatch.setattr(manifest, "STAT_THREADS", threads)
    folder, sealed = release
    (folder / "vllm" / "m3" / "f170.py").write_text("")  # later in the order, checked by another thread
    (folder / "vllm" / "m1" / "f061.py").unlink()
    (folder / "vllm" / "m2" / "f123.py").write_text("x = 123 and more\n")
    assert manifest._problem(folder, sealed) == "vllm/m1/f061.py is missing"
    (folder / "vllm" / "m1" / "f061.py").write_text("x = 61\n")
    assert manifest._problem(folder, sealed) == "vllm/m2/f123.py has 17 bytes, the manifest says 8"
