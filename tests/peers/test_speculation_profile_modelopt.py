"""ModelOpt's own code on the speculation_profile.json `compat verify --server ... --save-profile` writes.

- ModelOpt's producer, `examples/specdec_bench/specdec_bench/speculation_profile.py` (`build_profile`), at a pinned
  commit of NVIDIA/Model-Optimizer: fed the same measurement, it writes the same schema-1.0 fields compat wrote
  (vectors, means, histogram, accept-length model, its two validation checks passing). The example is not in the
  wheel: the test takes it from a checkout (COMPAT_MODELOPT_SRC, the repository's root) or fetches that one file at
  the pinned commit into the user cache; it is never copied into compat. Where neither can be had (CI reaches the
  package registries only) the test says so and skips.
- The installed wheel's loader and writer (`hf_spec_export.read_speculation_profile`,
  `SpeculativeDecodingExporter.write_speculation_profile`): in the repository after nvidia-modelopt 0.47.0, the newest
  release, which ships neither; when a release does, the loaded profile must be compat's, whole.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from compat.verify.sweep.profile import build_profile
from peer_venv import run_in_peers

pytestmark = [pytest.mark.peers]

COMMIT = "edf879d3daf7879acdeb2dab9f54a591837da7b0"   # NVIDIA/Model-Optimizer, speculation_profile.py's newest version
FILE = "examples/specdec_bench/specdec_bench/speculation_profile.py"
RAW = f"https://raw.githubusercontent.com/NVIDIA/Model-Optimizer/{COMMIT}/{FILE}"
MODELOPT_FIELDS = ("schema_version", "measured", "method", "draft_checkpoint", "target_model", "num_speculative_tokens",
                   "block_size", "max_supported_k", "verification_method", "conditional_accept_rates",
                   "marginal_accept_rates", "mean_accept_length", "accept_length_model", "accept_length_by_k",
                   "per_category", "measurement_conditions", "validation")


def specdec_bench() -> Path | None:
    """examples/specdec_bench of ModelOpt: a checkout, else the pinned file fetched once into the user cache."""
    checkout = os.environ.get("COMPAT_MODELOPT_SRC")
    if checkout:
        root = Path(checkout) / "examples" / "specdec_bench"
        return root if (root / "specdec_bench" / "speculation_profile.py").is_file() else None
    root = Path.home() / ".cache" / "compat" / "peers-src" / f"Model-Optimizer-{COMMIT[:12]}" / "specdec_bench"
    target = root / "specdec_bench" / "speculation_profile.py"
    if not target.is_file():
        try:
            with urllib.request.urlopen(RAW, timeout=20) as answer:
                text = answer.read()
        except OSError:
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / "__init__.py").write_text("")
        partial = target.with_suffix(".part")
        partial.write_bytes(text)
        partial.replace(target)
    return root


def measured_doc() -> dict:
    """A sweep's document as document.py writes it: 1200 drafts, a gap-free histogram, k=4."""
    drafts, accepted = 1200, [900, 610, 300, 120]
    acc = {"per_position": [a / drafts for a in accepted], "drafts": drafts, "mean_accepted_length": 1 + sum(accepted) / drafts,
           "rate": sum(accepted) / (4 * drafts), "verdict": "healthy"}
    return {"server": {"url": "http://gpu1:8000", "engine": "vllm", "version": "0.32.0", "model": "/hf/meta/Llama-3.1-8B",
                       "method": "eagle3", "draft_model": "/hf/org/eagle3-llama", "num_speculative_tokens": 4,
                       "names_from": {"release": "0.32.0"}},
            "baseline": {"url": "http://gpu2:8000"}, "acceptance": acc, "concurrency": [1, 4],
            "prompts": {"source": "built-in", "temperature": 0.0, "max_tokens": 128, "endpoint": "/v1/chat/completions",
                        "requests_per_level": {"1": 8, "4": 8}},
            "levels": [], "verdict": {"pays": "every"}, "launch": "vllm serve ...", "complete": True, "stopped": None}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("profile") / "speculation_profile.json"
    path.write_text(json.dumps(build_profile(measured_doc()), indent=2))
    return path


def test_modelopts_own_producer_writes_the_same_fields_for_the_same_measurement(peers_python, written):
    source = specdec_bench()
    if source is None:
        pytest.skip(f"ModelOpt's {FILE} is not in the wheel and cannot be fetched here (CI reaches the package "
                    f"registries only): set COMPAT_MODELOPT_SRC to a checkout of NVIDIA/Model-Optimizer at {COMMIT[:12]}")
    answer = run_in_peers(peers_python, "modelopt_profile.py", str(written), str(source))
    theirs, ours = answer["producer"], json.loads(written.read_text())
    for key in MODELOPT_FIELDS:
        assert theirs[key] == ours[key], (key, theirs[key], ours[key])
    assert {int(k): v for k, v in theirs["acceptance_length_histogram"].items()} == \
        {int(k): v for k, v in ours["acceptance_length_histogram"].items()}
    assert theirs["validation"]["mean_consistency"]["passed"] and theirs["validation"]["marginal_monotonicity"]["passed"]


def test_the_installed_modelopt_loads_the_profile_when_it_ships_a_loader(peers_python, written):
    wheel = run_in_peers(peers_python, "modelopt_profile.py", str(written))["wheel"]
    print(f"nvidia-modelopt {wheel['version']}: loader {'yes' if wheel['loader'] is not None else 'no'}, "
          f"writer {'yes' if wheel['writer'] is not None else 'no'}")
    if wheel["loader"] is None and wheel["writer"] is None:
        pytest.skip(f"nvidia-modelopt {wheel['version']} ships no speculation-profile loader or writer (they are in the "
                    "repository after it): the producer test above is ModelOpt's word on the format")
    ours = json.loads(written.read_text())
    for got in (wheel["loader"], wheel["writer"]):
        if got is not None:
            assert got == ours  # read and placed whole: compat's fields beside ModelOpt's survive
