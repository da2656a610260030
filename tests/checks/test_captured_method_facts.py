"""The captured release facts the offline method-check tests read are what the probes say today (network)."""

import json

import pytest

from capture_method_facts import FACTS_DIR, RELEASES, facts

pytestmark = pytest.mark.network


@pytest.mark.parametrize("engine, version", RELEASES, ids=[f"{e}-{v}" for e, v in RELEASES])
def test_captured_method_facts_match_the_probes(engine, version):
    captured = json.loads((FACTS_DIR / f"{engine}-{version}.json").read_text())
    assert captured == json.loads(json.dumps(facts(engine, version))), "re-run tests/checks/capture_method_facts.py"
