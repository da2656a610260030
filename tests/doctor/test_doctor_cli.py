"""The `compat doctor` command line: output for people and --json, exit codes, usage errors."""

from __future__ import annotations

import json

import pytest

from doctor_helpers import open_release

pytestmark = pytest.mark.network


def tree(engine: str, version: str) -> str:
    """A directory holding the release's package, for --path (from the user cache)."""
    return str(open_release(engine, version).root)


def test_json_output_and_exit_code_when_a_check_fails(kimi, doctor_cli):
    code, out, _ = doctor_cli(str(kimi.target), str(kimi.drafter), "--path", tree("vllm", "0.11.0"), "--json")
    assert code == 1
    data = json.loads(out)
    assert data["verdict"] == "works after compat patch"
    for c in data["checks"]:
        assert set(c) >= {"check", "verdict", "detail", "fix", "location"}
        assert c["verdict"] in ("pass", "fail", "warn")
        if c["verdict"] == "fail":
            assert c["fix"]["kind"] in ("patch", "convert", "release", "none")
    spec = json.loads(data["launch"]["argv"][data["launch"]["argv"].index("--speculative-config") + 1])
    assert spec == data["launch"]["speculative_config"]


def test_human_output_and_exit_0_when_everything_passes(kimi, doctor_cli):
    code, out, _ = doctor_cli(str(kimi.target / "config.json"), str(kimi.drafter), "--path", tree("vllm", "0.18.0"))
    assert code == 0, out
    assert "verdict: works as is" in out
    assert "vllm serve" in out and "--speculative-config" in out
    assert "PASS" in out and "FAIL" not in out


def test_sglang_command_printed(kimi, doctor_cli):
    code, out, _ = doctor_cli(str(kimi.target), str(kimi.drafter), "--path", tree("sglang", "0.5.8"), "--json")
    assert code == 0
    argv = json.loads(out)["launch"]["argv"]
    assert "--speculative-algorithm" in argv and argv[argv.index("--speculative-algorithm") + 1] == "EAGLE3"


def test_spec_option_validated_against_the_release(kimi, doctor_cli):
    code, out, _ = doctor_cli(str(kimi.target), str(kimi.drafter), "--path", tree("vllm", "0.18.0"),
                              "--spec", "disable_by_batch_size=4", "--spec", "draft_tensor_parallel_size=1", "--json")
    assert code == 0  # a dropped key is a warning: the printed command is valid
    spec = json.loads(out)["launch"]["speculative_config"]
    assert spec["draft_tensor_parallel_size"] == 1 and "disable_by_batch_size" not in spec


def test_usage_errors_exit_2(kimi, doctor_cli):
    code, _, err = doctor_cli(str(kimi.target), str(kimi.drafter))
    assert code == 2 and "--engine" in err
    code, _, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", "vllm==0.18.0", "--releases", ">=0.10")
    assert code == 2
    code, _, err = doctor_cli(str(kimi.target / "nope"), str(kimi.drafter), "--path", tree("vllm", "0.18.0"))
    assert code == 2 and "no such file or directory" in err
    code, _, _ = doctor_cli(str(kimi.target), str(kimi.drafter), "--path", tree("vllm", "0.18.0"), "--spec", "novalue")
    assert code == 2


def test_source_that_cannot_be_obtained_exits_3(kimi, doctor_cli, tmp_path):
    (tmp_path / "not-a-tree").mkdir()  # a folder holding no engine (a missing one is 2: a path naming nothing)
    code, _, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--path", str(tmp_path / "not-a-tree"))
    assert code == 3
    code, _, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", "vllm==0.0.1",
                              "--offline", "--cache-dir", str(tmp_path / "empty-cache"))
    assert code == 3 and "offline" in err


def test_broken_drafter_header_exits_4(kimi, doctor_cli, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(kimi.drafter, broken)
    (broken / "model.safetensors").write_bytes(b"\xff" * 16)
    code, _, err = doctor_cli(str(kimi.target), str(broken), "--path", tree("vllm", "0.18.0"))
    assert code == 4 and "model.safetensors" in err


def test_help_teaches(doctor_cli):
    code, out, _ = doctor_cli("--help")
    assert code == 0
    for words in ("TARGET", "DRAFTER", "--releases", "--spec", "exit codes", "works as is"):
        assert words in out


def test_releases_offline_without_a_cached_listing_exits_3(kimi, doctor_cli, tmp_path):
    cache = tmp_path / "empty-cache"
    code, _, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", "vllm", "--releases", ">=0.10",
                              "--offline", "--cache-dir", str(cache))
    assert code == 3, err
    assert f"error: offline and no index listing of vllm in the cache {cache / 'index' / 'vllm.json'}" in err, err
    assert "fix: pin a cached release (e.g. --engine vllm==X.Y.Z; cached: none) or run once online" in err, err
    assert "Traceback" not in err


def test_releases_row_for_a_release_that_cannot_be_fetched(kimi):
    from compat.doctor import SOURCE_UNAVAILABLE, diagnose_range, read_drafter, read_target
    from compat.core.errors import SourceError
    from doctor_helpers import open_release

    def flaky(version):
        if version == "0.18.1":
            raise SourceError("offline and vllm==0.18.1 is not in the cache")
        return open_release("vllm", version)

    target = read_target(kimi.target)
    table = diagnose_range("vllm", ">=0.18", target, read_drafter(kimi.drafter, target), versions=["0.18.0", "0.18.1"],
                           open_release=flaky)
    assert [(r["version"], r["verdict"]) for r in table["rows"]] == [("0.18.0", "works as is"), ("0.18.1", SOURCE_UNAVAILABLE)]
