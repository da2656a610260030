"""`compat patch` on a small vLLM-shaped tree: plan, dry-run, apply, record, no-op, status, revert,
and the failure paths (hand edits, a missing file, a crash between writes, two runs at once,
read-only files, stale bytecode, released trees)."""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compat import patch_record
from compat.cli import main
from compat.patching import journal
from compat.sources import open_path

from patch_trees import snapshot, write_mini_vllm

MODEL = "vllm/model_executor/models/deepseek_v2.py"
CONFIG = "vllm/config/speculative.py"

def run(capsys, *argv) -> tuple[int, dict]:
    code = main(["patch", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out.strip().splitlines()[0] if out.lstrip().startswith('{"error"') else out)


def states(result: dict) -> dict[str, str]:
    return {p["id"]: p["state"] for p in result["patches"]}


def record_of(root: Path) -> dict:
    return json.loads((root / "vllm" / patch_record.RECORD_NAME).read_text())


# -- the happy path -----------------------------------------------------------------------------------
def test_dry_run_prints_the_diff_and_writes_nothing(mini_vllm, capsys):
    before = snapshot(mini_vllm)
    code = main(["patch", "--path", str(mini_vllm), "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    assert f"--- a/{CONFIG}" in out and f"+++ b/{MODEL}" in out
    assert '+        eagle3_target_supported = ["llama", "qwen", "kimi_k2", "deepseek_v3", "deepseek_v2"]' in out
    assert "+class DeepseekV2ForCausalLM(SupportsPP, SupportsEagle3):" in out
    assert "dry run: nothing was written" in out
    assert snapshot(mini_vllm) == before


def test_apply_records_then_a_second_run_is_a_no_op_and_revert_is_byte_identical(mini_vllm, capsys):
    originals = {rel: (mini_vllm / rel).read_bytes() for rel in (CONFIG, MODEL)}
    before = snapshot(mini_vllm)

    code, result = run(capsys, "--path", str(mini_vllm))
    assert code == 0
    assert {k: v for k, v in states(result).items() if v != "not-offered"} == {
        "vllm-eagle3-whitelist": "apply", "vllm-deepseek-eagle3-aux": "apply",
    }  # the others are outside 0.11.0 or about files the mini tree does not have
    assert sorted(result["changed"]) == [CONFIG, MODEL]
    record = record_of(mini_vllm)
    assert [p["id"] for p in record["patches"]] == ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"]
    assert record["engine_version"] == "0.11.0" and record["pending"] is None
    for rel, original in originals.items():
        entry = record["files"][rel]
        assert base64.b64decode(entry["original_base64"]) == original
        assert entry["sha256_before"] == hashlib.sha256(original).hexdigest()
        assert entry["sha256_after"] == hashlib.sha256((mini_vllm / rel).read_bytes()).hexdigest() != entry["sha256_before"]
        compile((mini_vllm / rel).read_bytes(), rel, "exec")

    patched = snapshot(mini_vllm)
    code, result = run(capsys, "--path", str(mini_vllm))
    assert code == 0 and result["changed"] == []
    assert set(states(result).values()) == {"present", "not-offered"}
    assert all(p["by"] == "compat" for p in result["patches"] if p["state"] == "present")
    assert snapshot(mini_vllm) == patched

    code, result = run(capsys, "--path", str(mini_vllm), "--status")
    assert code == 0 and [p["id"] for p in result["applied"]] == ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"]
    assert all(p["intact"] for p in result["applied"])

    code, result = run(capsys, "--path", str(mini_vllm), "--revert")
    assert code == 0 and sorted(result["files"]) == [CONFIG, MODEL]
    assert snapshot(mini_vllm) == before  # byte-identical, and the record is gone

    code, result = run(capsys, "--path", str(mini_vllm), "--revert")
    assert code == 0 and result["reverted"] == []


def test_human_output_says_what_happened(mini_vllm, capsys):
    assert main(["patch", "--path", str(mini_vllm)]) == 0
    out = capsys.readouterr().out
    assert "Applied vllm-eagle3-whitelist, vllm-deepseek-eagle3-aux: 2 files changed" in out
    assert f"Undo with: compat patch --path {mini_vllm} --revert" in out
    assert main(["patch", "--path", str(mini_vllm)]) == 0
    assert "Nothing to do, no file changed: already applied by compat: vllm-eagle3-whitelist, vllm-deepseek-eagle3-aux" in capsys.readouterr().out


def test_applied_patches_for_compat_probe(mini_vllm, capsys):
    tree = open_path(mini_vllm)
    assert patch_record.applied_patches(tree) == []
    run(capsys, "--path", str(mini_vllm))
    applied = patch_record.applied_patches(open_path(mini_vllm))
    assert [(p["id"], p["intact"]) for p in applied] == [("vllm-eagle3-whitelist", True), ("vllm-deepseek-eagle3-aux", True)]
    assert applied[1]["files"] == [MODEL]


def test_upstream_fix_is_recognised_and_nothing_changes(tmp_path, capsys):
    root = write_mini_vllm(tmp_path / "t")
    config = root / CONFIG
    config.write_text(config.read_text().replace('["llama", "qwen"]', '["llama", "qwen", "deepseek_v2", "deepseek_v3", "kimi_k2"]'))
    before = snapshot(root)
    code, result = run(capsys, "--path", str(root), "--select", "vllm-eagle3-whitelist")
    assert code == 0 and states(result) == {"vllm-eagle3-whitelist": "present"}
    assert result["patches"][0]["by"] == "upstream"
    assert snapshot(root) == before


# -- choosing patches -------------------------------------------------------------------------------
def test_select_skip_and_model_type(mini_vllm, capsys):
    code, result = run(capsys, "--path", str(mini_vllm), "--skip", "vllm-deepseek-eagle3-aux", "--model-type", "glm4_moe")
    assert code == 0 and result["changed"] == [CONFIG]
    assert '"deepseek_v2", "glm4_moe"]' in (mini_vllm / CONFIG).read_text()
    original_model = (mini_vllm / MODEL).read_bytes()
    # a later run adds another type on top; the record keeps the very first original
    first_original = record_of(mini_vllm)["files"][CONFIG]["original_base64"]
    code, result = run(capsys, "--path", str(mini_vllm), "--select", "vllm-eagle3-whitelist", "--model-type", "minimax_m2")
    assert code == 0 and '"glm4_moe", "minimax_m2"]' in (mini_vllm / CONFIG).read_text()
    assert record_of(mini_vllm)["files"][CONFIG]["original_base64"] == first_original
    assert (mini_vllm / MODEL).read_bytes() == original_model
    code, _ = run(capsys, "--path", str(mini_vllm), "--revert")
    assert code == 0 and (mini_vllm / CONFIG).read_bytes() == base64.b64decode(first_original)


def test_unknown_patch_id_and_bad_model_type_are_usage_errors(mini_vllm, capsys):
    assert main(["patch", "--path", str(mini_vllm), "--select", "vllm-nope"]) == 2
    assert "unknown patch id vllm-nope" in capsys.readouterr().err
    assert main(["patch", "--path", str(mini_vllm), "--model-type", 'x"]; import os']) == 2
    assert "not a model_type" in capsys.readouterr().err


def test_kimi_k25_patch_is_blocked_without_the_deepseek_patch(tmp_path, capsys):
    root = write_mini_vllm(tmp_path / "t", version="0.16.0")
    (root / "vllm/model_executor/models/kimi_k25.py").write_text(
        "from .interfaces import SupportsPP\n\n\nclass KimiK25ForConditionalGeneration(SupportsPP):\n    pass\n")
    (root / "vllm/v1/spec_decode").mkdir(parents=True)
    (root / "vllm/v1/spec_decode/eagle.py").write_text(textwrap.dedent('''
        def load_model(self, target_model):
            if self.get_model_name(target_model) == "X":
                self.model.config.image_token_index = 1
            else:
                self.model.config.image_token_index = target_model.config.image_token_index
    '''))
    before = snapshot(root)
    code, result = run(capsys, "--path", str(root), "--skip", "vllm-deepseek-eagle3-aux")
    assert code == 4 and states(result)["vllm-kimi-k25-eagle3"] == "blocked"
    assert snapshot(root) == before
    code, result = run(capsys, "--path", str(root), "--select", "vllm-kimi-k25-eagle3")
    assert code == 4 and states(result)["vllm-kimi-k25-eagle3"] == "blocked"
    code, result = run(capsys, "--path", str(root), "--select", "vllm-deepseek-eagle3-aux")
    assert code == 0
    # its requirement is now in the tree: selecting it alone is enough
    code, result = run(capsys, "--path", str(root), "--select", "vllm-kimi-k25-eagle3")
    assert code == 0 and states(result)["vllm-kimi-k25-eagle3"] == "apply"


# -- versions ---------------------------------------------------------------------------------------
def test_outside_every_range_nothing_is_offered_or_changed(tmp_path, capsys):
    root = write_mini_vllm(tmp_path / "t", version="0.22.0")
    before = snapshot(root)
    code, result = run(capsys, "--path", str(root))
    assert code == 0 and set(states(result).values()) == {"not-offered"} and result["changed"] == []
    assert snapshot(root) == before
    # explicitly asking for a patch that cannot apply here is a refusal, still with no change
    code, result = run(capsys, "--path", str(root), "--select", "vllm-deepseek-eagle3-aux")
    assert code == 4 and snapshot(root) == before


def test_local_version_label_is_in_range(tmp_path, capsys):
    root = write_mini_vllm(tmp_path / "t", version="0.11.0+cpu")
    code, result = run(capsys, "--path", str(root), "--dry-run")
    assert code == 0 and states(result)["vllm-deepseek-eagle3-aux"] == "apply"


def test_unknown_version_is_refused_unless_forced(mini_vllm, capsys):
    (mini_vllm / "vllm/_version.py").unlink()
    before = snapshot(mini_vllm)
    assert main(["patch", "--path", str(mini_vllm)]) == 4
    assert "cannot tell which vllm version" in capsys.readouterr().err
    assert snapshot(mini_vllm) == before
    code, result = run(capsys, "--path", str(mini_vllm), "--force")
    assert code == 0 and sorted(result["changed"]) == [CONFIG, MODEL]


# -- refusals ---------------------------------------------------------------------------------------
def test_hand_edited_file_is_refused_and_nothing_changes(mini_vllm, capsys):
    model = mini_vllm / MODEL
    model.write_text(model.read_text().replace("for layer in islice", "for block in islice").replace("= layer(", "= block("))
    before = snapshot(mini_vllm)
    code, result = run(capsys, "--path", str(mini_vllm))
    assert code == 4
    assert states(result)["vllm-deepseek-eagle3-aux"] == "refused"
    assert "decoder-layer loop" in next(p["reason"] for p in result["patches"] if p["id"] == "vllm-deepseek-eagle3-aux")
    assert snapshot(mini_vllm) == before  # the whitelist file was not patched either: all or nothing
    # --force applies what still finds its anchors (the other patch); the refused file stays as it is
    code, result = run(capsys, "--path", str(mini_vllm), "--force", "--skip", "vllm-deepseek-eagle3-aux")
    assert code == 0 and result["changed"] == [CONFIG]


def test_a_patch_whose_file_is_missing_is_not_offered_and_refused_when_asked_for(mini_vllm, capsys):
    (mini_vllm / MODEL).unlink()
    before = snapshot(mini_vllm)
    code, result = run(capsys, "--path", str(mini_vllm), "--dry-run")
    assert code == 0 and states(result)["vllm-deepseek-eagle3-aux"] == "not-offered"
    assert "missing file" in next(p["reason"] for p in result["patches"] if p["id"] == "vllm-deepseek-eagle3-aux")
    code, result = run(capsys, "--path", str(mini_vllm), "--select", "vllm-deepseek-eagle3-aux")
    assert code == 4 and "missing file" in result["patches"][0]["reason"] and result["patches"][0]["state"] == "refused"
    assert snapshot(mini_vllm) == before


def test_file_changed_after_apply_blocks_apply_and_revert_until_forced(mini_vllm, capsys):
    original = (mini_vllm / MODEL).read_bytes()
    run(capsys, "--path", str(mini_vllm))
    model = mini_vllm / MODEL
    model.write_text(model.read_text() + "# a hand edit\n")
    edited = snapshot(mini_vllm)
    assert main(["patch", "--path", str(mini_vllm), "--model-type", "glm4_moe"]) == 4
    assert f"changed since compat patched them: {MODEL}" in capsys.readouterr().err
    assert main(["patch", "--path", str(mini_vllm), "--revert"]) == 4
    assert f"{MODEL} changed since compat patched it" in capsys.readouterr().err
    assert snapshot(mini_vllm) == edited
    assert main(["patch", "--path", str(mini_vllm), "--revert", "--force"]) == 0
    assert model.read_bytes() == original and not (mini_vllm / "vllm" / patch_record.RECORD_NAME).exists()


def test_reinstalled_engine_makes_the_record_stale_and_it_is_forgotten(mini_vllm, capsys):
    originals = {rel: (mini_vllm / rel).read_bytes() for rel in (CONFIG, MODEL)}
    run(capsys, "--path", str(mini_vllm))
    for rel, data in originals.items():  # what `pip install --force-reinstall` does
        (mini_vllm / rel).write_bytes(data)
    code, result = run(capsys, "--path", str(mini_vllm))
    assert code == 0 and any("stale record" in n for n in result["notes"])
    assert sorted(result["changed"]) == [CONFIG, MODEL]


def test_released_trees_are_never_patched(mini_vllm, capsys, monkeypatch):
    from compat.core.tree import EngineTree, SourceInfo

    released = EngineTree("vllm", mini_vllm, "0.11.0", SourceInfo("released", str(mini_vllm)))
    monkeypatch.setattr("compat.commands._source.tree_from_args", lambda args, progress: released)
    before = snapshot(mini_vllm)
    assert main(["patch", "--engine", "vllm==0.11.0"]) == 2
    assert "never patched" in capsys.readouterr().err
    assert main(["patch", "--engine", "vllm==0.11.0", "--dry-run"]) == 0
    assert snapshot(mini_vllm) == before


# -- transactions -----------------------------------------------------------------------------------
def test_read_only_files_are_refused_before_any_write(mini_vllm, capsys, monkeypatch):
    before = snapshot(mini_vllm)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p).endswith("deepseek_v2.py") else real_access(p, mode))
    assert main(["patch", "--path", str(mini_vllm)]) == 4
    err = capsys.readouterr().err
    assert "deepseek_v2.py is not writable" in err and "run compat patch as the user that owns" in err
    assert snapshot(mini_vllm) == before


def test_a_held_lock_makes_another_run_wait_then_give_up(mini_vllm, capsys, monkeypatch):
    monkeypatch.setattr(journal, "LOCK_TIMEOUT", 0.3)
    fd = os.open(mini_vllm / "vllm", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        before = snapshot(mini_vllm)
        assert main(["patch", "--path", str(mini_vllm)]) == 4
        assert "another compat patch run holds" in capsys.readouterr().err
        assert snapshot(mini_vllm) == before
    finally:
        os.close(fd)


def test_two_concurrent_runs_apply_once(mini_vllm):
    procs = [
        subprocess.Popen([sys.executable, "-m", "compat", "patch", "--path", str(mini_vllm), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sorted(len(r["changed"]) for r in results) == [0, 2]  # one applied, the other found it done
    record = record_of(mini_vllm)
    assert [p["id"] for p in record["patches"]] == ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"]
    text = (mini_vllm / MODEL).read_text()
    assert text.count("SupportsEagle3") == 2  # the import and the base, once each


# -- bytecode and file attributes -------------------------------------------------------------------
def test_stale_bytecode_of_touched_modules_is_removed(mini_vllm, capsys):
    cache = (mini_vllm / MODEL).parent / "__pycache__"
    cache.mkdir()
    stale = [cache / "deepseek_v2.cpython-311.pyc", cache / "deepseek_v2.cpython-311.opt-1.pyc"]
    other = cache / "interfaces.cpython-311.pyc"
    for pyc in [*stale, other]:
        pyc.write_bytes(b"stale")
    run(capsys, "--path", str(mini_vllm))
    assert not any(p.exists() for p in stale) and other.exists()
    stale[0].write_bytes(b"patched bytecode")
    run(capsys, "--path", str(mini_vllm), "--revert")
    assert not stale[0].exists()


def test_file_mode_is_kept(mini_vllm, capsys):
    (mini_vllm / MODEL).chmod(0o640)
    run(capsys, "--path", str(mini_vllm))
    assert (mini_vllm / MODEL).stat().st_mode & 0o777 == 0o640
    run(capsys, "--path", str(mini_vllm), "--revert")
    assert (mini_vllm / MODEL).stat().st_mode & 0o777 == 0o640


# -- an installed engine (--python) -----------------------------------------------------------------
def test_installed_engine_in_another_interpreter(tmp_path, capsys):
    """`--python` finds the engine in a venv; the record sits beside it in site-packages."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    write_mini_vllm(site)
    (site / "vllm/_version.py").unlink()  # an installed engine's version comes from its metadata
    info = site / "vllm-0.11.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.11.0\n")
    (info / "RECORD").write_text("vllm/__init__.py,,\n")
    before = snapshot(site / "vllm")

    code, result = run(capsys, "--engine", "vllm", "--python", str(python))
    assert code == 0 and result["source"]["kind"] == "installed" and sorted(result["changed"]) == [CONFIG, MODEL]
    assert (site / "vllm" / patch_record.RECORD_NAME).is_file()
    code, result = run(capsys, "--engine", "vllm", "--python", str(python), "--revert")
    assert code == 0 and snapshot(site / "vllm") == before


def test_symlinked_file_is_refused(mini_vllm, tmp_path, capsys):
    real = tmp_path / "elsewhere.py"
    model = mini_vllm / MODEL
    real.write_bytes(model.read_bytes())
    model.unlink()
    model.symlink_to(real)
    before = snapshot(mini_vllm), real.read_bytes()
    assert main(["patch", "--path", str(mini_vllm)]) == 4
    assert "is a symbolic link" in capsys.readouterr().err
    assert (snapshot(mini_vllm), real.read_bytes()) == before
