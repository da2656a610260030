"""What each engine unit says of the checks' facts (FACTS) and of the method names (METHOD_NAMES), issue 39.

A term maps only to probe keys the engine's probes read; a term no check needs is not declared; LMDeploy's method
names arrive in the releases its probe says (`compat probe --engine lmdeploy==X --json`: `methods.accepted`).
"""

import pytest

from compat import engines
from compat.checks import all_checks
from compat.core.registry import ContractError
from compat.fact_vocabulary import TERMS
from compat.probes import all_probes


@pytest.mark.parametrize("engine", ["vllm", "sglang", "lmdeploy"])
def test_each_term_maps_to_probe_keys_the_engine_reads(engine):
    keys = {p.key for p in all_probes(engine)}
    for term, provided in engines.get(engine).facts.items():
        assert term in TERMS, term
        assert set(provided) <= keys, (term, set(provided) - keys)


def test_every_term_is_needed_by_a_check_and_every_need_is_a_term():
    needed = {term for c in all_checks() for term in c.needs}
    assert needed == set(TERMS)


def test_vllm_and_sglang_provide_every_term():
    for engine in ("vllm", "sglang"):
        assert set(engines.get(engine).facts) == set(TERMS), engine


def test_method_names_are_the_engines():
    from compat.methods import get_method

    assert [n.name for n in get_method("mtp").engine_names("lmdeploy")] == ["deepseek_mtp", "qwen3_5_mtp", "hy3_mtp"]
    assert [n.name for n in get_method("dflash").engine_names("sglang")] == ["DFLASH"]
    assert get_method("uno").engine_names("vllm") == () and "lmdeploy" not in get_method("uno").names


_UNIT = """NAME = "trtllm"; DISPLAY_NAME = "T"; IMPORT_NAME = "trtllm"; DISTRIBUTIONS = ("trtllm",); INDEX_NAME = "trtllm"
VERSION_FILES = ("trtllm/version.py",); REPOSITORY = "https://example.invalid/t"; VERSION_IN_LOG = r"v(\\d+)"
SERVER_OWNED_BY = "t"; METRICS_PREFIX = "t:"; DEFAULT_RELEASES = ">=1.0"; SPEC_FORM = "config"; LAYER_IDS_FED_BY = "runners"
SERVER_ACCEPTANCE = "counters"; DRAFT_SETTINGS_FROM = "draft"; DRAFT_SHAPE = "chain"; TARGET_GATE = "interface"
"""


@pytest.mark.parametrize("extra, match", [
    ('FACTS = {"aux_layer_ids": ("aux_layer_ids",)}', r"FACTS names \['aux_layer_ids'\]: not terms of compat/fact_vocabulary.py"),
    ('FACTS = {"layer ids": "aux_layer_ids"}', r"FACTS \['layer ids'\] is 'aux_layer_ids': expected a tuple of probe keys"),
    ('METHOD_NAMES = {"eagle3": ("eagle3",)}', r"METHOD_NAMES \['eagle3'\] is \('eagle3',\): expected a tuple of compat.methods.Name"),
])
def test_a_unit_with_a_wrong_fact_or_name_is_named(extra_folder, extra, match):
    (extra_folder / "trtllm.py").write_text(_UNIT + extra + "\n")
    with pytest.raises(ContractError, match=match):
        engines.all_engines()


@pytest.mark.network
@pytest.mark.parametrize("name, before, first", [("eagle", "0.10.0", "0.11.0"), ("eagle3", "0.10.0", "0.11.0"),
                                                 ("deepseek_mtp", "0.10.0", "0.11.0"), ("qwen3_5_mtp", "0.12.2", "0.12.3"),
                                                 ("hy3_mtp", "0.15.0", "0.16.0"), ("dflash", "0.17.0", "0.18.0")])
def test_each_lmdeploy_name_arrives_in_the_release_its_gate_says(name, before, first):
    import pinned
    from compat.probes.lmdeploy.methods import speculative_methods

    gate = next(n for names in engines.get("lmdeploy").method_names.values() for n in names if n.name == name)
    assert gate.since == first and gate.accepted_in(before) is False

    def accepted(version):
        return speculative_methods(pinned.fetch("lmdeploy", version)).get("accepted") or []

    assert name not in accepted(before) and name in accepted(first)
