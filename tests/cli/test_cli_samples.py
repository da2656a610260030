"""Issue 33, item 4: `compat samples DIR` writes the README's targets and drafters (the seed case included) with a
plain install's means (no numpy), the same files the tests build with numpy and safetensors (doctor_models.py)."""

from __future__ import annotations

import json

import pytest
from cli_helpers import compat
from doctor_models import kimi_k2_target, kimi_k25_target, specforge_drafter
from safetensors import safe_open

from compat.safetensors_stream import read_header

NAMES = ["Kimi-K2-Instruct", "Kimi-K2.5", "kimi-k2-eagle3", "kimi-k25-eagle3-ft"]  # the ones the tests' builders write too
OTHERS = ["Llama-3.1-8B-Instruct", "Llama-3.2-1B-Instruct", "Llama-3.3-70B-Instruct", "Llama-3.3-70B-Instruct-Eagle3",
          "Qwen3-8B", "kimi-k2-eagle3-final", "qwen3-8b-dflash"]  # the docs' other examples


def _tensors(path):
    with safe_open(str(path), "np") as f:  # the safetensors library reads what compat wrote
        return {name: (f.get_tensor(name).dtype.name, f.get_tensor(name).shape) for name in f.keys()}


def test_samples_are_the_files_the_tests_build(tmp_path):
    run = compat("samples", tmp_path / "samples")
    assert run.code == 0, run.err
    assert sorted(p.name for p in (tmp_path / "samples").iterdir()) == sorted(NAMES + OTHERS)  # no staging folder left
    built = tmp_path / "built"
    kimi_k2_target(built / "Kimi-K2-Instruct")
    kimi_k25_target(built / "Kimi-K2.5")
    specforge_drafter(built / "kimi-k2-eagle3")
    specforge_drafter(built / "kimi-k25-eagle3-ft", layer_ids=[2, 30, 58], prefix="layers.0.")
    for name in NAMES:
        ours, theirs = tmp_path / "samples" / name, built / name
        assert json.loads((ours / "config.json").read_text()) == json.loads((theirs / "config.json").read_text()), name
        if name.startswith("kimi-k2"):
            assert _tensors(ours / "model.safetensors") == _tensors(theirs / "model.safetensors"), name
            assert read_header(ours / "model.safetensors").tensors  # and compat's own reader takes it


def test_the_vocab_maps_agree(tmp_path):
    compat("samples", tmp_path)
    with safe_open(str(tmp_path / "kimi-k25-eagle3-ft" / "model.safetensors"), "np") as f:
        d2t, t2d = f.get_tensor("d2t"), f.get_tensor("t2d")
    targets = d2t + range(len(d2t))  # d2t holds offsets: draft id i is target id i + d2t[i]
    assert sorted(targets) == list(targets) and len(set(targets)) == len(targets) == 256
    assert set(targets.tolist()) == {i for i, used in enumerate(t2d) if used}


def test_a_second_run_keeps_them_and_a_foreign_folder_is_refused(tmp_path):
    assert compat("samples", tmp_path).code == 0
    before = (tmp_path / "kimi-k2-eagle3" / "model.safetensors").read_bytes()
    again = compat("samples", tmp_path, "--json")
    assert again.code == 0 and {s["state"] for s in again.json()["samples"]} == {"unchanged"}
    assert (tmp_path / "kimi-k2-eagle3" / "model.safetensors").read_bytes() == before  # the draw is fixed

    other = tmp_path / "other"
    (other / "Kimi-K2.5").mkdir(parents=True)
    (other / "Kimi-K2.5" / "config.json").write_text('{"model_type": "mine"}')
    refused = compat("samples", other)
    assert refused.code == 4 and "Kimi-K2.5 exists and is not compat's Kimi-K2.5 sample" in refused.err
    assert sorted(p.name for p in other.iterdir()) == ["Kimi-K2.5"]  # nothing written, no staging left
    assert (other / "Kimi-K2.5" / "config.json").read_text() == '{"model_type": "mine"}'


def test_a_file_is_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    run = compat("samples", tmp_path / "f")
    assert run.code == 4 and "a file, not a directory" in run.err and "Traceback" not in run.err


@pytest.mark.network
def test_the_seed_case_is_diagnosed_on_the_samples(tmp_path):
    compat("samples", tmp_path)
    run = compat("doctor", "Kimi-K2.5", "kimi-k25-eagle3-ft", "--engine", "vllm==0.16.0", "--json", cwd=tmp_path)
    assert run.code == 1, run.err
    result = run.json()
    assert result["verdict"].startswith("depends on how the drafter was trained")
    assert result["drafter"]["layout"] == "vllm" and result["target"]["model_type"] == "kimi_k2"


@pytest.mark.network
def test_the_seed_case_reads_in_lines_under_200_characters(tmp_path):
    """Issue 33's measure: piped, every line of `doctor -q` on the seed case but the launch command is under 200
    characters; the whole reasons are under -v and in --json."""
    compat("samples", tmp_path)
    words = ["doctor", "Kimi-K2.5", "kimi-k25-eagle3-ft", "--engine", "vllm==0.16.0"]
    quiet, detailed, as_json = (compat(*words, *extra, cwd=tmp_path) for extra in (["-q"], ["-q", "-v"], ["--json"]))
    launch = quiet.out.split("\nlaunch")[1].splitlines()[1:]  # the commands to copy, whole
    assert all(len(line) < 200 for line in quiet.out.splitlines() if line not in launch), quiet.out
    failing = [c for c in as_json.json()["checks"] if c["verdict"] != "pass"]
    assert failing and all(c["detail"] in detailed.out and c["detail"] not in quiet.out for c in failing
                           if len(c["detail"]) > 150)
    assert [line.split()[1] for line in quiet.out.splitlines() if line[:5] in ("FAIL ", "WARN ")] == \
        [c["check"] for c in failing]
