"""Bundles unused for BUNDLE_MAX_AGE_DAYS are pruned, on the host (real sshd) and here: every compat version leaves
one (an editable install's every edit is a version), and nothing else ever removes them. The one a run uses is
kept whatever its age (it is touched); what is not compat's is never touched."""

from __future__ import annotations

import os
import re
import time

from conftest import compat

from compat.fleet.host_cache import BUNDLE_MAX_AGE_DAYS, prune_bundles

LONG_AGO = time.time() - (BUNDLE_MAX_AGE_DAYS + 30) * 86400


def _age(*paths) -> None:
    for path in paths:
        os.utime(path, (LONG_AGO, LONG_AGO))


def _env_on_alpha(server, engine_python) -> None:
    done = compat(server, "env", "--python", engine_python, "--host", "alpha")
    assert done.returncode == 0, done.stderr


def test_unused_bundles_go_on_the_host_and_here_and_the_one_in_use_stays(trusted, engine_python):
    _env_on_alpha(trusted, engine_python)
    there = trusted.remote_home("alpha") / ".cache" / "compat" / "fleet"
    here = trusted.home / ".cache" / "compat" / "fleet"
    (in_use,) = [p for p in there.iterdir() if re.fullmatch(r"[0-9a-f]{16}", p.name)]
    (zip_in_use,) = [p for p in here.glob("compat-*.pyz")]
    old_bundle, old_unpack, recent = there / "0123456789abcdef", there / ".unpack-k2x9", there / "fedcba9876543210"
    for folder in (old_bundle / "compat", old_unpack, recent):
        folder.mkdir(parents=True)
    (old_bundle / "compat" / "cli.py").write_text("")
    not_ours = there / "notes.txt"
    not_ours.write_text("the user's")
    old_zip, old_index = here / "compat-0123456789abcdef.pyz", here / ("index-" + "0" * 24 + ".json")
    old_zip.write_bytes(b"PK")
    old_index.write_text("{}")
    _age(old_bundle, old_unpack, not_ours, in_use, old_zip, old_index, zip_in_use)

    _env_on_alpha(trusted, engine_python)
    assert not old_bundle.exists() and not old_unpack.exists()
    assert in_use.is_dir() and recent.is_dir() and not_ours.read_text() == "the user's"
    assert time.time() - in_use.stat().st_mtime < 3600  # touched: its age counts from its last use
    assert not old_zip.exists() and not old_index.exists() and zip_in_use.is_file()
    assert not [p.name for p in there.iterdir() if p.name.startswith(".unpack-")]  # nothing half removed


def test_links_and_names_not_ours_are_never_removed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "0123456789abcdef").symlink_to(outside)  # a bundle's name, but a link out
    for name in ("0123456789ABCDEF", "compat-0123.pyz", "index.json"):
        (root / name).mkdir()
    for path in root.iterdir():
        os.utime(path, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    assert prune_bundles(str(root), [], 1) == []
    assert (outside / "keep").read_text() == "x" and len(list(root.iterdir())) == 4
    assert prune_bundles(str(tmp_path / "missing"), [], 1) == []
