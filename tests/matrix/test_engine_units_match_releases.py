"""Every pinned release: what an engine unit declares (compat/engines/NAME.py) is what its release's code does.

The checks, doctor, explain, verify and the launch-line reader branch on the units' fields (SPEC_FORM, DRAFT_SHAPE,
MODEL_OPTION, TARGET_GATE, LAYER_IDS_FED_BY, SERVER_ACCEPTANCE, ...), where they once compared engine names. The
refactor kept behaviour only if each field says, for every release the tests run on, what the release's code says:
this test reads each fact with compat's probes on the real pinned release (tests/releases.json) and compares it with
the field, so a unit can neither drift from the engine nor be written for one release only. Nothing here is a copy
of engine code or a recorded answer: the expected side is the probe report compat computes on the release.
"""

from __future__ import annotations

import pytest

import pinned
from compat import engines

pytestmark = [pytest.mark.matrix, pytest.mark.network]


def _flags(report: dict) -> set[str]:
    return {f["name"] for f in report.get("cli_flags") or [] if isinstance(f, dict)}


def _arguments(report: dict) -> list[dict]:
    return (report.get("cli_arguments") or {}).get("arguments") or []


def _targets(report: dict) -> list[dict]:
    found = report.get("eagle3_targets")
    return [t for t in found if isinstance(t, dict)] if isinstance(found, list) else []


def _declared(engine: str, report: dict, version: str) -> None:
    unit = engines.get(engine)
    flags = _flags(report)
    where = f"{engine} {version} (compat/engines/{engine}.py)"

    # SPEC_FORM: one --speculative-config JSON object, or one --speculative-* flag per setting
    assert ("--speculative-config" in flags) == unit.spec_in_config, f"{where}: SPEC_FORM {unit.spec_form!r}"
    if not unit.spec_in_config:
        assert "--speculative-algorithm" in flags, f"{where}: SPEC_FORM 'flags' but no --speculative-algorithm"

    # DRAFT_SHAPE: a tree is steps x topk (--speculative-eagle-topk); a chain has no topk to give
    assert ("--speculative-eagle-topk" in flags) == (unit.draft_shape == "tree"), f"{where}: DRAFT_SHAPE"

    # MODEL_OPTION: "" is the first positional argument (`vllm serve MODEL`), else an option the parser declares
    arguments = _arguments(report)
    if unit.model_option:
        names = {n for a in arguments for n in (a["name"], *a.get("aliases", []))}
        assert unit.model_option in names, f"{where}: MODEL_OPTION {unit.model_option!r} is not an argument"
    else:
        assert any(a.get("value") == "positional" for a in arguments), f"{where}: MODEL_OPTION '' but no positional"

    # MHA_ATTENTION_BACKENDS: where the parser lists the backends it takes, one an MHA drafter runs on is among them
    backend = next((a for a in arguments if a["name"] == "--attention-backend"), None)
    if backend is not None and backend.get("choices") and unit.mha_attention_backends:
        assert set(unit.mha_attention_backends) & set(backend["choices"]), f"{where}: MHA_ATTENTION_BACKENDS"

    # SERVER_ACCEPTANCE and METRICS_PREFIX: where the server tells acceptance, under which metric names
    metrics = report.get("spec_decode_metrics") or {}
    series = {**(metrics.get("counters") or {}), **(metrics.get("series") or {})}
    assert series and all(s["name"].startswith(unit.metrics_prefix) for s in series.values()), f"{where}: METRICS_PREFIX"
    if unit.server_acceptance == "counters":
        assert metrics.get("counters"), f"{where}: SERVER_ACCEPTANCE 'counters' but the release declares none"
    else:
        assert (report.get("server_info") or {}).get("accept_length_key"), \
            f"{where}: SERVER_ACCEPTANCE 'server_info' but its server info has no accept length"

    # LAYER_IDS_FED_BY: each model runner reads the drafter's ids (vLLM), or the target's capture hook takes them
    runners = "runners" in (report.get("aux_layer_ids") or {})
    assert runners == (unit.layer_ids_fed_by == "runners"), f"{where}: LAYER_IDS_FED_BY {unit.layer_ids_fed_by!r}"

    # TARGET_GATE: an interface the class implements, or the capture hook it defines (never both kinds of entry)
    targets = _targets(report)
    if unit.target_gate == "interface":
        assert not any("method_location" in t for t in targets), f"{where}: TARGET_GATE 'interface' but capture hooks"
    else:
        assert not any(t.get("interface") for t in targets), f"{where}: TARGET_GATE 'capture_hook' but interfaces"


def _in_tree(engine: str, version: str) -> None:
    unit = engines.get(engine)
    root = pinned.fetch(engine, version).root
    assert any((root / f).is_file() for f in unit.version_files), f"{engine} {version}: none of VERSION_FILES"
    modules = [m for m in unit.launch_modules if (root / (m.replace(".", "/") + ".py")).is_file()]
    assert modules, f"{engine} {version}: none of LAUNCH_MODULES {unit.launch_modules} is in the release"


def test_vllm_unit_declares_what_each_release_does(vllm_report, vllm_version):
    _declared("vllm", vllm_report, vllm_version)
    _in_tree("vllm", vllm_version)


def test_sglang_unit_declares_what_each_release_does(sglang_report, sglang_version):
    _declared("sglang", sglang_report, sglang_version)
    _in_tree("sglang", sglang_version)


def test_a_unit_that_says_otherwise_is_caught(report_of):
    """The comparison can fail: the vLLM unit with SGLang's speculative form, shape or target gate is refused."""
    import dataclasses

    report = report_of("vllm", pinned.newest("vllm"))
    real = engines.get("vllm")
    for wrong in ({"spec_form": "flags"}, {"draft_shape": "tree"}, {"target_gate": "capture_hook"},
                  {"layer_ids_fed_by": "target_hook"}, {"model_option": "--model-path"}, {"metrics_prefix": "sglang:"}):
        unit = dataclasses.replace(real, **wrong)
        field = next(iter(wrong)).upper()  # the field the message names, with the unit's file
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(engines, "get", lambda name, unit=unit: unit)
            with pytest.raises(AssertionError, match=rf"^vllm \S+ \(compat/engines/vllm.py\): {field}\b"):
                _declared("vllm", report, pinned.newest("vllm"))
