"""compat doctor on real releases: a Kimi-K2 target with a SpecForge-layout drafter (and variants).

Each scenario asserts the verdicts, the proposed fix (verified by the doctor itself: patches are
applied in memory and the release re-probed; conversions are planned and re-checked), and that the
launch JSON holds only keys the release's SpeculativeConfig has.
"""

from __future__ import annotations

import json

import pytest

from compat.doctor import (DOES_NOT_WORK, FAIL, NEEDS_CONVERT, PASS, WARN, WORKS, WORKS_PATCHED,
                           WORKS_PATCHED_CONVERTED)
from doctor_helpers import check
from doctor_models import specforge_drafter

pytestmark = pytest.mark.network  # releases come from the package index (cached)


def spec_fields(release, version: str) -> set[str]:
    from compat.report import build_report

    report = build_report(release("vllm", version))
    return {f["name"] for f in report["speculative_config"]["fields"]}


def assert_launch_json_accepted(diagnosis: dict, release, version: str) -> dict:
    spec = diagnosis["launch"]["speculative_config"]
    assert set(spec) <= spec_fields(release, version)
    argv = diagnosis["launch"]["argv"]
    assert argv[:3] == ["vllm", "serve", diagnosis["target"]["path"]]
    assert json.loads(argv[argv.index("--speculative-config") + 1]) == spec
    return spec


# -- vLLM --------------------------------------------------------------------------------------------------


def test_vllm_0_11_0_whitelist_and_interface_fixed_by_patches(kimi, diagnose, release):
    d = diagnose("vllm", "0.11.0", kimi.target, kimi.drafter)
    assert d["verdict"] == WORKS_PATCHED
    whitelist = check(d, "target-whitelist")
    assert whitelist["verdict"] == FAIL and "kimi_k2" in whitelist["detail"]
    assert whitelist["location"].startswith("vllm/config/speculative.py:")
    assert whitelist["fix"]["kind"] == "patch" and whitelist["fix"]["patch_ids"] == ["vllm-eagle3-whitelist"]
    assert "--select vllm-eagle3-whitelist" in whitelist["fix"]["command"]
    interface = check(d, "target-interface")
    assert interface["verdict"] == FAIL and "fails at model load" in interface["detail"]
    assert interface["fix"]["patch_ids"] == ["vllm-deepseek-eagle3-aux"]
    layer_ids = check(d, "layer-ids")  # 0.11.0 never reads drafter ids: the default, which SpecForge's [1, 29, 57] means
    assert layer_ids["verdict"] == PASS and layer_ids["trained"] == [2, 30, 58]
    assert layer_ids["fed"] == [{"by": "every runner", "ids": [2, 30, 58], "how": "drafter ids are not read; the target's default"}]
    assert check(d, "drafter-architecture")["verdict"] == PASS
    assert {i["id"] for i in check(d, "known-issues")["issues"]} >= {"vllm-eagle3-whitelist-kimi", "vllm-deepseek-no-eagle3-interface"}
    spec = assert_launch_json_accepted(d, release, "0.11.0")
    assert spec == {"method": "eagle3", "model": str(kimi.drafter), "num_speculative_tokens": 3}
    assert "--trust-remote-code" in d["launch"]["argv"]  # Kimi-K2's config needs its auto_map before 0.18.0


def test_vllm_0_17_1_interface_missing_is_patched(kimi, diagnose, release):
    d = diagnose("vllm", "0.17.1", kimi.target, kimi.drafter)
    assert d["verdict"] == WORKS_PATCHED
    interface = check(d, "target-interface")
    assert interface["verdict"] == FAIL
    assert interface["fix"] == {**interface["fix"], "kind": "patch", "patch_ids": ["vllm-deepseek-eagle3-aux"]}
    assert "DeepseekV3ForCausalLM" in interface["fix"]["verified"]
    whitelist = check(d, "target-whitelist")  # renamed aux_hidden_states_supported in 0.17.0, still no kimi_k2
    assert "aux_hidden_states_supported" in whitelist["detail"] and whitelist["fix"]["patch_ids"] == ["vllm-eagle3-whitelist"]
    assert_launch_json_accepted(d, release, "0.17.1")


def test_vllm_0_18_0_works_layer_ids_read_only_top_level(kimi, diagnose, release):
    d = diagnose("vllm", "0.18.0", kimi.target, kimi.drafter)
    assert d["verdict"] == WORKS
    assert all(c["verdict"] in (PASS, WARN) for c in d["checks"])
    layer_ids = check(d, "layer-ids")
    # on cuda 0.18.0 builds the V1 runner (VLLM_USE_V2_MODEL_RUNNER unset: envs.py:236): only its reader feeds it
    assert {f["by"] for f in layer_ids["fed"]} == {"runner v1"}
    assert all(f["ids"] == [2, 30, 58] for f in layer_ids["fed"])
    assert "eagle_config" not in layer_ids["reads"]  # before 0.22 only the top-level key is read
    assert layer_ids["reads"].count("eagle_aux_hidden_state_layer_ids (+0") == 2
    assert_launch_json_accepted(d, release, "0.18.0")


@pytest.mark.parametrize("version", ["0.24.0", "0.32.0"])
def test_vllm_after_0_22_reads_nested_ids_needs_converted_drafter(kimi, diagnose, release, version):
    """From 0.22 runner v1 reads eagle_config ids as capture-before: SpecForge's output-of [1, 29, 57] is one layer early."""
    d = diagnose("vllm", version, kimi.target, kimi.drafter)
    assert d["verdict"] == NEEDS_CONVERT
    layer_ids = check(d, "layer-ids")
    assert layer_ids["verdict"] == FAIL and "eagle_config.eagle_aux_hidden_state_layer_ids" in layer_ids["reads"]
    assert {"by": "runner v1", "ids": [1, 29, 57], "how": "eagle_config.eagle_aux_hidden_state_layer_ids + 0"} in layer_ids["fed"]
    fix = layer_ids["fix"]
    assert fix["kind"] == "convert"
    assert f"--to vllm --engine vllm=={version} --target" in fix["command"]
    assert "[2, 30, 58]" in fix["verified"]
    assert_launch_json_accepted(d, release, version)


def test_vllm_top_level_ids_work_as_is_after_0_22(tmp_path, kimi, diagnose):
    drafter = specforge_drafter(tmp_path / "both-keys", top_level_ids=[2, 30, 58])  # what --to eagle writes
    d = diagnose("vllm", "0.24.0", kimi.target, drafter)
    assert d["verdict"] == WORKS, [c for c in d["checks"] if c["verdict"] == FAIL]


def test_vllm_0_10_0_does_not_work(kimi, diagnose):
    d = diagnose("vllm", "0.10.0", kimi.target, kimi.drafter)
    assert d["verdict"] == DOES_NOT_WORK
    whitelist = check(d, "target-whitelist")
    assert whitelist["fix"]["kind"] == "release" and whitelist["fix"]["releases"] == ">=0.18.0"
    # LlamaForCausalLMEagle3 is registered only from 0.10.2; 0.10.0 prefixes it to Eagle3LlamaForCausalLMEagle3
    arch = check(d, "drafter-architecture")
    assert arch["verdict"] == FAIL and arch["fix"]["kind"] == "convert"


def test_vllm_0_10_1_needs_patch_and_converted_drafter(kimi, diagnose):
    d = diagnose("vllm", "0.10.1", kimi.target, kimi.drafter)
    assert d["verdict"] == WORKS_PATCHED_CONVERTED
    assert check(d, "drafter-architecture")["fix"]["kind"] == "convert"
    assert check(d, "target-whitelist")["fix"]["kind"] == "patch"


def test_vllm_off_by_one_kimi_template_ids(tmp_path, kimi, diagnose):
    """SpecForge's Kimi template declares [2, 30, 58] as output-of: trained on [3, 31, 59], vLLM 0.18 feeds the default."""
    drafter = specforge_drafter(tmp_path / "template-ids", layer_ids=[2, 30, 58])
    d = diagnose("vllm", "0.18.0", kimi.target, drafter)
    layer_ids = check(d, "layer-ids")
    assert layer_ids["verdict"] == FAIL and layer_ids["trained"] == [3, 31, 59]
    assert all(f["ids"] == [2, 30, 58] for f in layer_ids["fed"])
    assert layer_ids["fix"]["kind"] == "convert"  # the converted drafter declares top-level [3, 31, 59]
    assert d["verdict"] == NEEDS_CONVERT


def test_vllm_unknown_spec_key_dropped_where_rejected(kimi, diagnose, release):
    """disable_by_batch_size: a field up to 0.16.0; 0.17.0+ forbids unknown keys, so the command leaves it out."""
    old = diagnose("vllm", "0.16.0", kimi.target, kimi.drafter, extra_spec={"disable_by_batch_size": 4})
    assert old["launch"]["speculative_config"]["disable_by_batch_size"] == 4
    assert check(old, "launch-command")["verdict"] == PASS
    new = diagnose("vllm", "0.18.0", kimi.target, kimi.drafter, extra_spec={"disable_by_batch_size": 4})
    assert "disable_by_batch_size" not in new["launch"]["speculative_config"]
    launch = check(new, "launch-command")
    assert launch["verdict"] == WARN and "rejects unknown keys" in launch["detail"]
    assert_launch_json_accepted(new, release, "0.18.0")


def test_vllm_full_vocab_drafter_with_d2t_refused_from_0_30(tmp_path, kimi, diagnose):
    from doctor_models import VOCAB

    drafter = specforge_drafter(tmp_path / "full-vocab", draft_vocab=VOCAB)
    d = diagnose("vllm", "0.30.0", kimi.target, drafter)
    vocab = check(d, "vocab-maps")
    assert vocab["verdict"] == FAIL and "refuses" in vocab["detail"]
    assert vocab["fix"]["kind"] == "convert"  # the vLLM layout drops the identity map
    assert check(diagnose("vllm", "0.29.0", kimi.target, drafter), "vocab-maps")["verdict"] == PASS


def test_missing_d2t_is_a_silent_failure_nothing_fixes(tmp_path, kimi, diagnose):
    from doctor_models import specforge_drafter as make

    drafter = make(tmp_path / "no-d2t", d2t=False)
    path = drafter / "model.safetensors"
    from safetensors.numpy import load_file, save_file

    tensors = load_file(str(path))
    tensors.pop("t2d")
    save_file(tensors, str(path))
    d = diagnose("vllm", "0.18.0", kimi.target, drafter)
    vocab = check(d, "vocab-maps")
    assert vocab["verdict"] == FAIL and "neither d2t nor t2d" in vocab["detail"]
    assert vocab["fix"]["kind"] == "none" and "conversion refused" in vocab["fix"]["text"]
    assert d["verdict"] == DOES_NOT_WORK


# -- SGLang ------------------------------------------------------------------------------------------------


def test_sglang_0_5_3_has_no_deepseek_capture_which_a_patch_adds(kimi, diagnose):
    d = diagnose("sglang", "0.5.3", kimi.target, kimi.drafter)
    assert d["verdict"] == WORKS_PATCHED
    interface = check(d, "target-interface")
    assert interface["verdict"] == FAIL and "set_eagle3_layers_to_capture" in interface["detail"]
    assert interface["fix"]["kind"] == "patch" and interface["fix"]["patch_ids"] == ["sglang-deepseek-eagle3-capture"]
    assert "DeepseekV3ForCausalLM" in interface["fix"]["verified"]
    layer_ids = check(d, "layer-ids")  # nothing is captured before the patch; after it, the trained layers
    assert layer_ids["verdict"] == WARN and layer_ids["fix"]["kind"] == "patch"
    assert check(d, "target-whitelist")["verdict"] == PASS  # SGLang has none


def test_sglang_0_5_8_works_with_plus_one_offset(kimi, diagnose):
    d = diagnose("sglang", "0.5.8", kimi.target, kimi.drafter)
    assert d["verdict"] == WORKS
    layer_ids = check(d, "layer-ids")
    assert layer_ids["fed"] == [{"by": "target", "ids": [2, 30, 58],
                                 "how": "eagle_config.eagle_aux_hidden_state_layer_ids + 1 (DeepseekV3ForCausalLM)"}]
    assert "eagle_config.eagle_aux_hidden_state_layer_ids (sglang/srt/model_executor/model_runner.py:" in layer_ids["reads"]
    argv = d["launch"]["argv"]
    assert argv[:4] == ["python", "-m", "sglang.launch_server", "--model-path"]
    pairs = dict(zip(argv[::1], argv[1::1]))
    assert pairs["--speculative-algorithm"] == "EAGLE3"
    assert pairs["--speculative-draft-model-path"] == str(kimi.drafter)
    assert (pairs["--speculative-num-steps"], pairs["--speculative-eagle-topk"], pairs["--speculative-num-draft-tokens"]) == ("3", "1", "4")


def test_sglang_0_5_13_conditional_offset(kimi, tmp_path, diagnose):
    ok = diagnose("sglang", "0.5.13", kimi.target, kimi.drafter)  # first id 1: +1
    assert check(ok, "layer-ids")["fed"][0]["ids"] == [2, 30, 58] and ok["verdict"] == WORKS
    # SpecForge's Kimi template [2, 30, 58] (trained on 3, 31, 59): no +1 from 0.5.13 on, +1 on 0.5.8
    drafter = specforge_drafter(tmp_path / "template-ids", layer_ids=[2, 30, 58])
    new = diagnose("sglang", "0.5.13", kimi.target, drafter)
    assert check(new, "layer-ids")["verdict"] == FAIL and check(new, "layer-ids")["fed"][0]["ids"] == [2, 30, 58]
    # 0.5.8 adds +1 in eager passes (the trained layers), but its CUDA graphs are captured with the defaults
    old = check(diagnose("sglang", "0.5.8", kimi.target, drafter), "layer-ids")
    assert old["fed"][0]["ids"] == [3, 31, 59] == old["trained"]
    assert old["verdict"] == FAIL and "CUDA-graph replays use the default [2, 30, 58]" in old["detail"]


def test_sglang_layers0_names_skipped_silently_before_0_5_12(tmp_path, kimi, diagnose):
    drafter = specforge_drafter(tmp_path / "layers0", prefix="layers.0.")
    d = diagnose("sglang", "0.5.8", kimi.target, drafter)
    tensors = check(d, "drafter-tensors")
    assert tensors["verdict"] == FAIL
    assert any(s.startswith("layers.0.self_attn.q_proj.weight") for s in tensors["skipped"])
    assert "layers.0.self_attn.q_proj.weight" in tensors["random"]
    assert tensors["fix"]["kind"] == "convert" and "--to sglang --engine sglang==0.5.8" in tensors["fix"]["command"]
    # nested-only ids with layers.0.* names (ModelOpt >= 0.43 style) do not say their convention: the user must
    assert tensors["fix"]["command"].endswith("--layer-ids-convention capture-before|output-of")
    layer_ids = check(d, "layer-ids")  # and so the layers it was trained on are not known: both readings, and ask
    assert layer_ids["verdict"] == FAIL and layer_ids["needs_input"] and layer_ids["fix"]["kind"] == "ask"
    assert layer_ids["branches"] == {"capture-before": [1, 29, 57], "output-of": [2, 30, 58]}
    assert check(diagnose("sglang", "0.5.12", kimi.target, drafter), "drafter-tensors")["verdict"] == PASS


def test_sglang_target_architecture_drafter_is_rewritten_to_nextn(tmp_path, kimi, diagnose):
    drafter = specforge_drafter(tmp_path / "nextn", architecture="DeepseekV3ForCausalLM")
    arch = check(diagnose("sglang", "0.5.8", kimi.target, drafter), "drafter-architecture")
    assert arch["verdict"] == FAIL and "NextN" in arch["detail"]


# -- across releases ---------------------------------------------------------------------------------------


def test_releases_table(kimi, release):
    from compat.doctor import diagnose_range, read_drafter, read_target

    target = read_target(kimi.target)
    drafter = read_drafter(kimi.drafter, target)
    versions = ["0.10.0", "0.10.1", "0.11.0", "0.17.1", "0.18.0", "0.21.0", "0.22.0", "0.33.0"]
    table = diagnose_range("vllm", ">=0.10,<0.34", target, drafter, versions=versions + ["0.9.2"],
                           open_release=lambda v: release("vllm", v))
    got = {row["version"]: row["verdict"] for row in table["rows"]}
    assert got == {
        "0.10.0": DOES_NOT_WORK, "0.10.1": WORKS_PATCHED_CONVERTED, "0.11.0": WORKS_PATCHED, "0.17.1": WORKS_PATCHED,
        "0.18.0": WORKS, "0.21.0": WORKS, "0.22.0": NEEDS_CONVERT, "0.33.0": NEEDS_CONVERT,
    }
    row = next(r for r in table["rows"] if r["version"] == "0.11.0")
    assert row["fixes"] == ["patch vllm-eagle3-whitelist", "patch vllm-deepseek-eagle3-aux"]


def test_kimi_k25_wrapper_needs_the_interface_patches_on_0_16_and_a_release_before_0_15(tmp_path, kimi, diagnose):
    from doctor_models import kimi_k25_target

    target = kimi_k25_target(tmp_path / "Kimi-K2.5")
    d = diagnose("vllm", "0.16.0", target, kimi.drafter)
    assert d["verdict"] == WORKS_PATCHED
    assert d["target"]["model_type"] == "kimi_k2"  # the whitelist tests the text config's model_type
    assert check(d, "target-interface")["fix"]["patch_ids"] == ["vllm-deepseek-eagle3-aux", "vllm-kimi-k25-eagle3"]
    old = diagnose("vllm", "0.14.1", target, kimi.drafter)  # kimi_k25.py appears in 0.15.0
    assert old["verdict"] == DOES_NOT_WORK and check(old, "target-interface")["fix"]["kind"] == "release"
    k25 = diagnose("sglang", "0.5.9", target, kimi.drafter)  # kimi_k25.py exists without the hook: a patch delegates it
    assert k25["verdict"] == WORKS_PATCHED and check(k25, "target-interface")["fix"]["patch_ids"] == ["sglang-kimi-k25-eagle3"]
    assert diagnose("sglang", "0.5.10", target, kimi.drafter)["verdict"] == WORKS


@pytest.mark.parametrize("engine, version", [("vllm", "0.17.1"), ("vllm", "0.24.0"), ("sglang", "0.5.8")])
def test_every_engine_location_is_a_real_line_of_the_release(kimi, diagnose, release, engine, version):
    d = diagnose(engine, version, kimi.target, kimi.drafter)
    root = release(engine, version).root
    located = [c for c in d["checks"] if (c["location"] or "").startswith(f"{engine}/")]
    assert len(located) >= 5
    for c in located:
        relpath, _, line = c["location"].partition(":")
        lines = (root / relpath).read_text().splitlines()
        assert line.isdigit() and 1 <= int(line) <= len(lines), c


def test_a_failed_probe_gives_warnings_not_guesses(kimi, release):
    from compat.doctor import Ctx, Options, launch_command, read_drafter, read_target, run_checks
    from compat.report import build_report

    report = build_report(release("vllm", "0.18.0"))
    for key in ("eagle3_whitelist", "eagle3_targets", "eagle3_drafters", "aux_layer_ids", "speculative_config", "cli_flags"):
        report[key] = {"present": False, "error": f"probe {key} failed: SyntaxError"}
    target = read_target(kimi.target)
    ctx = Ctx(report, target, read_drafter(kimi.drafter, target), Options())
    verdicts = {c.check: c.verdict for c in run_checks(ctx)}
    for name in ("target-whitelist", "target-interface", "drafter-architecture", "layer-ids", "method", "launch-command"):
        assert verdicts[name] == WARN, name
    assert launch_command(ctx)["problems"]  # and the command says why it cannot be trusted


def test_releases_table_names_one_release_bound_when_several_checks_need_newer_releases(tmp_path, release):
    """The seed pair on SGLang 0.5.4.post1: KimiK25ForConditionalGeneration arrives in 0.5.9, its EAGLE-3 hook in
    0.5.10. The single-release diagnosis says each check's own bound; the table row one bound, the newer."""
    from compat.doctor import diagnose, diagnose_range, read_drafter, read_target
    from compat.doctor.releases import ReleaseFinder
    from doctor_models import kimi_k25_target

    target = read_target(kimi_k25_target(tmp_path / "Kimi-K2.5"))
    drafter = read_drafter(specforge_drafter(tmp_path / "ft", layer_ids=[2, 30, 58], prefix="layers.0."), target)
    versions = ["0.5.4.post1", "0.5.8", "0.5.9", "0.5.10"]
    finder = ReleaseFinder("sglang", open_release=lambda v: release("sglang", v), versions=versions)
    one = diagnose(release("sglang", "0.5.4.post1"), target, drafter, releases=finder)
    bounds = {c["check"]: c["fix"]["releases"] for c in one["checks"] if (c["fix"] or {}).get("kind") == "release"}
    assert bounds == {"target-architecture": ">=0.5.9", "target-interface": ">=0.5.10"}
    table = diagnose_range("sglang", "==0.5.4.post1", target, drafter, versions=versions,
                           open_release=lambda v: release("sglang", v))
    (row,) = table["rows"]
    assert row["verdict"] == DOES_NOT_WORK
    assert [f for f in row["fixes"] if f.startswith("use ")] == ["use >=0.5.10"], row["fixes"]
