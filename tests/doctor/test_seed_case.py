"""The seed case (issue 9): Kimi-K2.5 served by vLLM 0.16.0 with a drafter fine-tuned by SpecForge from the
AQ-MedAI Kimi checkpoint: `layers.0.*` names, d2t/t2d, `eagle_config` ids [2, 30, 58] (SpecForge writes
output-of ids, so it trained on the residual stream entering layers 3, 31, 59). Doctor must say which layers
each release feeds, that this is one layer off for a SpecForge-trained drafter or that it cannot know
without the convention, and the patch and conversion that fix it, and then accept its own fix."""

from __future__ import annotations

import json
import sys

import pytest

from compat.doctor import DEPENDS, DOES_NOT_WORK, FAIL, NEEDS_CONVERT, PASS, WORKS, WORKS_PATCHED, WORKS_PATCHED_CONVERTED
from doctor_helpers import check
from doctor_models import kimi_k25_target, specforge_drafter

pytestmark = pytest.mark.network

KIMI_PATCHES = ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux", "vllm-kimi-k25-eagle3"]


@pytest.fixture
def seed(tmp_path):
    class Seed:
        target = kimi_k25_target(tmp_path / "Kimi-K2.5")
        drafter = specforge_drafter(tmp_path / "kimi-k25-eagle3-ft", layer_ids=[2, 30, 58], prefix="layers.0.")
        specforge = specforge_drafter(tmp_path / "kimi-k25-eagle3-specforge", layer_ids=[2, 30, 58])

    return Seed


def doctor(doctor_cli, target, drafter, *args):
    code, out, err = doctor_cli(str(target), str(drafter), *args, "--json")
    return code, json.loads(out)


def test_vllm_0_16_without_the_convention_fails_with_both_readings_and_asks(seed, doctor_cli):
    code, d = doctor(doctor_cli, seed.target, seed.drafter, "--engine", "vllm==0.16.0")
    assert code == 1 and d["verdict"] == DEPENDS
    ids = check(d, "layer-ids")
    assert ids["verdict"] == FAIL and ids["needs_input"] and ids["trained"] is None
    assert ids["branches"] == {"capture-before": [2, 30, 58], "output-of": [3, 31, 59]}
    assert ids["fed"] == [{"by": "runner v1", "ids": [2, 30, 58], "how": "no key it reads is set: default"}]
    assert "capture-before (vLLM, speculators): trained on [2, 30, 58]" in ids["detail"] and "matches" in ids["detail"]
    assert "output-of (SpecForge, AngelSlim, ModelOpt HF training): trained on [3, 31, 59]" in ids["detail"]
    assert "1 layer low" in ids["detail"]
    answers = ids["fix"]["answers"]
    assert ids["fix"]["kind"] == "ask" and answers["capture-before"]["verdict"] == PASS
    assert answers["output-of"]["fix"].endswith("--layer-ids-convention output-of")
    assert not d["launch"]["runnable"]


def test_vllm_0_16_told_output_of_gives_the_patch_and_the_conversion(seed, doctor_cli, tmp_path):
    python = tmp_path / "srv" / "venv" / "bin" / "python"  # the serving venv's, named in the fixes (one that does
    python.parent.mkdir(parents=True)  # not exist is refused beside a release); its preflight is not what is tested
    python.symlink_to(sys.executable)
    code, d = doctor(doctor_cli, seed.target, seed.drafter, "--engine", "vllm==0.16.0", "--layer-ids-convention", "output-of",
                     "--python", str(python), "--no-preflight")
    assert code == 1 and d["verdict"] == WORKS_PATCHED_CONVERTED
    ids = check(d, "layer-ids")
    assert ids["trained"] == [3, 31, 59] and ids["fed"][0]["ids"] == [2, 30, 58] and "silent off-by-one" in ids["detail"]
    patch, convert = d["fix_steps"]
    assert patch["kind"] == "patch" and patch["patch_ids"] == KIMI_PATCHES
    assert patch["command"].startswith(f"compat patch --engine vllm --python {python} --select ")
    assert convert["kind"] == "convert" and "--to vllm --engine vllm==0.16.0" in convert["command"]
    assert convert["command"].endswith("--layer-ids-convention output-of")
    spec = d["launch"]["speculative_config"]
    assert spec["model"] == convert["dst"] and d["launch"]["runnable"] and d["launch"]["after"] == ["patch", "convert"]


def test_vllm_0_16_accepts_its_own_conversion(seed, doctor_cli, tmp_path):
    from compat import cli

    _, d = doctor(doctor_cli, seed.target, seed.drafter, "--engine", "vllm==0.16.0", "--layer-ids-convention", "output-of")
    convert = next(step for step in d["fix_steps"] if step["kind"] == "convert")
    argv = convert["command"].split()[1:]  # the exact command doctor printed, as a user runs it
    assert cli.main(argv) == 0
    code, again = doctor(doctor_cli, seed.target, convert["dst"], "--engine", "vllm==0.16.0")
    assert again["verdict"] == WORKS_PATCHED, [c for c in again["checks"] if c["verdict"] == FAIL]
    ids = check(again, "layer-ids")
    assert ids["verdict"] == PASS and ids["trained"] == [3, 31, 59] == ids["fed"][0]["ids"]
    assert "compat convert's record" in ids["detail"]


def _in_hub_cache(hub, repo_id: str, model, commit: str = "c0ffee" * 6 + "c0ff"):
    """`model` as huggingface_hub keeps it: models--org--name/snapshots/COMMIT, refs/main naming it."""
    import shutil

    repo = hub / ("models--" + repo_id.replace("/", "--"))
    shutil.copytree(model, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return repo / "snapshots"


def test_models_from_the_hub_cache_are_named_by_id_and_converted_into_the_working_directory(seed, doctor_cli, tmp_path,
                                                                                          monkeypatch):
    from compat import cli

    hub = tmp_path / "hub"
    _in_hub_cache(hub, "moonshotai/Kimi-K2.5", seed.target)
    snapshots = _in_hub_cache(hub, "acme/kimi-ft", seed.drafter)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.chdir(work)
    _, d = doctor(doctor_cli, "moonshotai/Kimi-K2.5", "acme/kimi-ft", "--engine", "vllm==0.16.0",
                  "--layer-ids-convention", "output-of")
    convert = next(step for step in d["fix_steps"] if step["kind"] == "convert")
    assert convert["command"].startswith("compat convert ckpt acme/kimi-ft kimi-ft-vllm-0.16.0 --to vllm ")
    assert "--target moonshotai/Kimi-K2.5" in convert["command"] and convert["dst"] == "kimi-ft-vllm-0.16.0"
    assert d["launch"]["argv"][:3] == ["vllm", "serve", "moonshotai/Kimi-K2.5"]
    assert d["launch"]["speculative_config"]["model"] == "kimi-ft-vllm-0.16.0"
    assert cli.main(convert["command"].split()[1:]) == 0  # the printed command, run where the user is
    assert (work / "kimi-ft-vllm-0.16.0" / "config.json").is_file()
    assert sorted(p.name for p in snapshots.iterdir()) == ["c0ffee" * 6 + "c0ff"]  # nothing new inside the cache
    _, again = doctor(doctor_cli, "moonshotai/Kimi-K2.5", "kimi-ft-vllm-0.16.0", "--engine", "vllm==0.16.0")
    assert again["verdict"] == WORKS_PATCHED and again["launch"]["speculative_config"]["model"] == "kimi-ft-vllm-0.16.0"


def test_a_specforge_layout_drafter_is_recognised_as_output_of(seed, doctor_cli):
    code, d = doctor(doctor_cli, seed.target, seed.specforge, "--engine", "vllm==0.16.0")
    assert d["verdict"] == WORKS_PATCHED_CONVERTED
    ids = check(d, "layer-ids")
    assert ids["trained"] == [3, 31, 59] and "written by SpecForge" in ids["detail"]


def test_vllm_0_13_has_no_kimi_k25_class_so_no_patch_is_offered(seed, doctor_cli):
    code, d = doctor(doctor_cli, seed.target, seed.drafter, "--engine", "vllm==0.13.0", "--layer-ids-convention", "output-of")
    assert d["verdict"] == DOES_NOT_WORK
    arch = check(d, "target-architecture")
    assert arch["verdict"] == FAIL and "KimiK25ForConditionalGeneration is not in vllm 0.13.0" in arch["detail"]
    assert "it arrives in 0.15.0" in arch["detail"] and arch["fix"] == {**arch["fix"], "kind": "release", "releases": ">=0.15.0"}
    assert all((c["fix"] or {}).get("kind") != "patch" for c in d["checks"])
    assert d["fix_steps"] == [] and not d["launch"]["runnable"]


@pytest.mark.parametrize("version", ["0.5.12", "0.5.14", "0.5.23"])
def test_sglang_feeds_the_declared_ids_unshifted_for_kimi_from_0_5_13(seed, doctor_cli, version):
    _, unknown = doctor(doctor_cli, seed.target, seed.drafter, "--engine", f"sglang=={version}")
    _, told = doctor(doctor_cli, seed.target, seed.drafter, "--engine", f"sglang=={version}", "--layer-ids-convention", "output-of")
    if version == "0.5.12":  # the unconditional +1: SpecForge's meaning
        assert told["verdict"] == WORKS and check(told, "layer-ids")["fed"][0]["ids"] == [3, 31, 59]
    else:  # first id is not 1: no +1, one layer low for a SpecForge-trained drafter
        assert unknown["verdict"] == DEPENDS and told["verdict"] == NEEDS_CONVERT
        assert check(told, "layer-ids")["fed"][0]["ids"] == [2, 30, 58]
