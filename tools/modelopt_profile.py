#!/usr/bin/env python3
"""ModelOpt's own producer on compat's speculation_profile.json: a maintainer's check, outside CI.

    python tools/modelopt_profile.py [--source CHECKOUT]    exit 0: the same fields; 1: some differ; 2: no producer

Why outside CI: no nvidia-modelopt release on the package index reads the profile (0.47.0, the pinned one, and
0.48.0rc1 ship no `read_speculation_profile` / `write_speculation_profile`), and the producer, examples/specdec_bench/
specdec_bench/speculation_profile.py (`build_profile`) of NVIDIA/Model-Optimizer, is in the repository's examples,
in no wheel; CI reaches the package registries only. In CI, compat's profile is held to the producer's fields and
formulas as read at COMMIT (tests/verify/test_sweep_profile.py: modelled), and the pinned wheel to what
docs/verify-sweep.md says of it (tests/peers/test_speculation_profile_modelopt.py).

Here the producer itself runs: from a checkout of the repository (--source, or COMPAT_MODELOPT_SRC: its root), else
that one file fetched from GitHub at COMMIT into the user cache (never copied into compat). Fed the measurement
compat's profile was built from, in the peers venv (.ci/peers-venv; COMPAT_PEERS_VENV), it must write the same
schema-1.0 fields: vectors, means, histogram, accept-length model, and its two validation checks passing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "edf879d3daf7879acdeb2dab9f54a591837da7b0"   # NVIDIA/Model-Optimizer, speculation_profile.py's newest version
FILE = "examples/specdec_bench/specdec_bench/speculation_profile.py"
RAW = f"https://raw.githubusercontent.com/NVIDIA/Model-Optimizer/{COMMIT}/{FILE}"
FIELDS = ("schema_version", "measured", "method", "draft_checkpoint", "target_model", "num_speculative_tokens",
          "block_size", "max_supported_k", "verification_method", "conditional_accept_rates", "marginal_accept_rates",
          "mean_accept_length", "accept_length_model", "accept_length_by_k", "per_category", "measurement_conditions",
          "validation")


def measured_doc() -> dict:
    """A sweep's document as compat/verify/sweep/document.py writes it: 1200 drafts, a gap-free histogram, k=4."""
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


def differences(theirs: dict, ours: dict) -> list[str]:
    """What ModelOpt's producer wrote otherwise than compat, field by field ([] when they agree)."""
    found = [f"{key}: ModelOpt {theirs.get(key)!r}, compat {ours.get(key)!r}" for key in FIELDS
             if theirs.get(key) != ours.get(key)]
    histograms = [{int(k): v for k, v in (p.get("acceptance_length_histogram") or {}).items()} for p in (theirs, ours)]
    if histograms[0] != histograms[1]:
        found.append(f"acceptance_length_histogram: ModelOpt {histograms[0]}, compat {histograms[1]}")
    checks = (theirs.get("validation") or {})
    for name in ("mean_consistency", "marginal_monotonicity"):
        if not (checks.get(name) or {}).get("passed"):
            found.append(f"validation.{name}: ModelOpt's own check does not pass on compat's measurement")
    return found


def specdec_bench(checkout: str | None) -> Path | None:
    """examples/specdec_bench of ModelOpt: a checkout's, else the file at COMMIT fetched once into the user cache."""
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default=os.environ.get("COMPAT_MODELOPT_SRC"),
                        help="a checkout of NVIDIA/Model-Optimizer (default: fetch the producer at COMMIT)")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT / "tests" / "peers")]
    from compat.verify.sweep.profile import build_profile
    from peer_venv import peers_venv, run_in_peers

    source = specdec_bench(args.source)
    if source is None:
        print(f"no producer: {FILE} is neither in --source nor fetchable from {RAW}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        written = Path(tmp) / "speculation_profile.json"
        written.write_text(json.dumps(build_profile(measured_doc()), indent=2))
        theirs = run_in_peers(peers_venv() / "bin" / "python", "modelopt_profile.py", str(written), str(source))["producer"]
        found = differences(theirs, json.loads(written.read_text()))
    for line in found:
        print(line)
    print(f"ModelOpt's producer at {COMMIT[:12]}: {'the same fields as compat' if not found else f'{len(found)} differ'}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
