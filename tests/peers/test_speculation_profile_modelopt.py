"""nvidia-modelopt's own code on the speculation_profile.json `compat verify --server ... --save-profile` writes.

The pinned release (nvidia-modelopt 0.47.0, .ci/peers-venv) is asked for its profile loader and writer
(`hf_spec_export.read_speculation_profile`, `SpeculativeDecodingExporter.write_speculation_profile`): when it has
them, the loaded and the placed profile must be compat's, whole; while it has neither (0.47.0 and 0.48.0rc1, the newest
on the index, have none: they are in ModelOpt's repository only), docs/verify-sweep.md must say that this release reads
no profile and that compatibility is modelled. ModelOpt's producer (examples/specdec_bench, in no wheel) is run on
compat's profile by tools/modelopt_profile.py, a maintainer's check: CI reaches the package registries only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from compat.verify.sweep.profile import build_profile
from peer_venv import run_in_peers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from modelopt_profile import measured_doc  # noqa: E402  (the measurement the maintainer's check feeds ModelOpt)

pytestmark = [pytest.mark.peers]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("profile") / "speculation_profile.json"
    path.write_text(json.dumps(build_profile(measured_doc()), indent=2))
    return path


def test_the_pinned_modelopt_reads_the_profile_whole_or_the_docs_say_it_reads_none(peers_python, written):
    wheel = run_in_peers(peers_python, "modelopt_profile.py", str(written))["wheel"]
    ours = json.loads(written.read_text())
    for got in (wheel["loader"], wheel["writer"]):
        if got is not None:
            assert got == ours  # read and placed whole: compat's fields beside ModelOpt's survive
    if wheel["loader"] is None and wheel["writer"] is None:
        said = " ".join((ROOT / "docs" / "verify-sweep.md").read_text().split())
        assert f"nvidia-modelopt {wheel['version']} ships no profile reader" in said and "is modelled" in said, \
            f"docs/verify-sweep.md does not say that nvidia-modelopt {wheel['version']} reads no profile"
