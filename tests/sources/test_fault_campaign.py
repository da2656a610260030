"""A seeded campaign of faults against the index (the README's hardening figures): each run publishes a release
(an sdist, or a wheel read through ranges or whole), injects one kind of fault on the page or the artifact, once,
a few times or on every request, and fetches it. Every run must end one of two ways: the release, byte for byte,
or a SourceError (exit 3) whose one-line message names the URL, with nothing cached. CI runs a reduced campaign;
COMPAT_STRESS=1 the full one. `python tests/sources/test_fault_campaign.py --runs 300` prints the figures."""

from __future__ import annotations

import os
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_index import FAULTS, Index, Server, make_sdist, make_wheel, package_files  # noqa: E402

from compat.core.errors import SourceError  # noqa: E402
from compat.sources import auth, settings  # noqa: E402
from compat.sources.released import fetch_release  # noqa: E402
from compat.sources.settings import NetworkOptions  # noqa: E402

ARTIFACTS = {"sdist": "vllm-0.10.0.tar.gz", "ranged wheel": "vllm-0.10.0-py3-none-any.whl", "whole wheel": "vllm-0.10.0-py3-none-any.whl"}


def one_run(rng: random.Random, work: Path) -> tuple[str, str, int]:
    """(outcome, what, faults served): outcome is "recovered" or "refused"; anything else raises."""
    kind = rng.choice(sorted(ARTIFACTS))
    index = Index(work / "index")
    data = make_sdist("vllm", "0.10.0") if kind == "sdist" else make_wheel("vllm", "0.10.0", modules=rng.randint(0, 12))
    index.publish("vllm", ARTIFACTS[kind], data)
    server = Server(index, ranges=kind != "whole wheel", stall=10)
    fault, times = rng.choice(FAULTS), rng.choice([1, 1, 2, 3, 99])
    target = "/simple/vllm/" if rng.random() < 0.2 else ARTIFACTS[kind]
    server.inject(fault, target, times=times, at=rng.choice([0.05, 0.3, 0.5, 0.7, 0.95]))
    cache = work / "cache"
    try:
        tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=server.url, progress=False,
                             network=NetworkOptions(retries=2, timeout=0.3))
        expected = package_files("vllm", "0.10.0") if kind == "sdist" else _wheel_sources(data)
        assert sorted(tree.files()) == sorted(expected), (kind, fault, times)
        assert all(tree.read_bytes(name) == content for name, content in expected.items()), (kind, fault, times)
        outcome = "recovered"
    except SourceError as err:
        assert err.exit_code == 3 and "\n" not in err.message and "127.0.0.1" in err.message, err
        releases = cache / "releases" / "vllm"
        assert not releases.exists() or list(releases.iterdir()) == [], (kind, fault, times, err)
        outcome = "refused"
        # only a fault that kept coming: on every try (--retries 2: 3 of them), or flipped bytes on both fetches
        assert times >= 3 or (fault == "corrupt" and times >= 2), (kind, fault, times, target, err)
    finally:
        server.close()
    served = sum(1 for entry in server.log if entry["fault"])
    return outcome, f"{fault} x{'always' if times == 99 else times} on {'the page' if target.startswith('/') else 'a ' + kind}", served


def _wheel_sources(data: bytes) -> dict[str, bytes]:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {n: archive.read(n) for n in archive.namelist() if n.startswith("vllm/") and n.endswith(".py")}


def campaign(runs: int, seed: int = 23) -> tuple[Counter, Counter, int]:
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    by_fault: Counter = Counter()
    served = 0
    for _ in range(runs):
        auth.forget_credentials()
        settings.configure()
        with tempfile.TemporaryDirectory(dir=os.environ.get("PYTEST_DEBUG_TEMPROOT")) as work:
            outcome, what, faults = one_run(rng, Path(work))
        outcomes[outcome] += 1
        by_fault[(what.split(" ")[0], outcome)] += 1
        served += faults
    return outcomes, by_fault, served


def test_every_fault_is_recovered_or_refused_with_one_line_and_nothing_cached():
    runs = 300 if os.environ.get("COMPAT_STRESS") == "1" else 20
    outcomes, _, served = campaign(runs)
    assert sum(outcomes.values()) == runs and set(outcomes) <= {"recovered", "refused"}
    assert outcomes["recovered"] > outcomes["refused"] > 0 and served >= runs // 2


if __name__ == "__main__":
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=23)
    options = parser.parse_args()
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_RETRIES", "PIP_TIMEOUT", "HTTP_PROXY", "http_proxy"):
        os.environ.pop(name, None)
    os.environ["PIP_CONFIG_FILE"] = os.devnull
    started = time.monotonic()
    outcomes, by_fault, served = campaign(options.runs, options.seed)
    print(f"{options.runs} runs, {served} faulty responses served, {dict(outcomes)} in {time.monotonic() - started:.0f} s")
    for (fault, outcome), count in sorted(by_fault.items()):
        print(f"  {fault:<13} {outcome:<10} {count}")
else:
    pytestmark = pytest.mark.usefixtures("isolated")
