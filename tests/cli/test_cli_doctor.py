"""Issue 12, point 10: doctor says which options a release ignores (a warning line and `notes` in --json), a
target config of `{}` is diagnosed (the checks say what is missing), no fix holds a placeholder, and the
`--releases` table groups ranges and shows each fix whole."""

from __future__ import annotations

import json
import re
import sys

import pytest

from cli_helpers import compat, engine_tree

PLACEHOLDER = re.compile(r"<[a-z][^>]*>|'>=X'|>=X\b|\.\.\. --engine|TARGET|DRAFTER|ENGINE==VERSION|\bPY\b|\bDIR\b")


def fixes_of(d: dict) -> list[str]:
    texts = [s["command"] for s in d.get("fix_steps") or []]
    for c in d["checks"]:
        fix = c.get("fix") or {}
        texts += [fix[k] for k in ("command", "text") if fix.get(k)]
    return texts


@pytest.fixture
def work(tmp_path):
    engine_tree(tmp_path / "vllm-tree", "vllm", "0.20.0")
    engine_tree(tmp_path / "sglang-tree", "sglang", "0.5.8")
    return tmp_path


def test_topk_on_vllm_is_said_not_dropped(work, pair, env):
    target, drafter = pair
    run = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--topk", "4", "--json", env=env, cwd=work)
    notes = run.json()["notes"]
    assert any(n.startswith("--topk 4 is ignored: vLLM") for n in notes), notes
    human = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--topk", "4", env=env, cwd=work)
    assert "  warning: --topk 4 is ignored: vLLM" in human.out
    default = compat("doctor", target, drafter, "--path", "vllm-tree", "--offline", "--json", env=env, cwd=work)
    assert not any("--topk" in n for n in default.json()["notes"])  # only what the user asked for


def test_spec_on_sglang_is_said_not_dropped(work, pair, env):
    target, drafter = pair
    run = compat("doctor", target, drafter, "--path", "sglang-tree", "--offline", "--spec", "draft_tensor_parallel_size=1",
                 "--json", env=env, cwd=work)
    assert any(n.startswith("--spec draft_tensor_parallel_size=1 is ignored: SGLang") for n in run.json()["notes"])


def test_an_empty_target_config_is_diagnosed(work, pair, env):
    (work / "empty-target").mkdir()
    (work / "empty-target" / "config.json").write_text("{}")
    run = compat("doctor", "empty-target", pair[1], "--path", "vllm-tree", "--offline", "--json", env=env, cwd=work)
    assert run.code == 1, run.err  # diagnosed: checks fail; not refused as input
    d = run.json()
    assert d["schema"] == "compat.doctor/1" and d["verdict"] == "does not work"
    details = " ".join(c["detail"] for c in d["checks"])
    assert "no architectures" in details and "no num_hidden_layers" in details
    human = compat("doctor", "empty-target", pair[1], "--path", "vllm-tree", "--offline", env=env, cwd=work)
    assert "model_type=(none) (no architectures) (no num_hidden_layers)" in human.out


def test_no_fix_holds_a_placeholder_offline(work, pair, env):
    target, drafter = pair
    for tree in ("vllm-tree", "sglang-tree"):
        d = compat("doctor", target, drafter, "--path", tree, "--offline", "--json", env=env, cwd=work).json()
        fixes = fixes_of(d)
        assert fixes and not [f for f in fixes if PLACEHOLDER.search(f)], fixes
    compare = [f for f in fixes_of(d) if "compare the releases after this one" in f]
    assert compare and f"compat doctor {target} {drafter} --engine sglang --releases '>0.5.8'" in compare[0]


@pytest.mark.network
@pytest.mark.parametrize("engine, version", [("vllm", "0.10.0"), ("vllm", "0.17.1"), ("vllm", "0.24.0"), ("sglang", "0.5.8")])
def test_no_fix_holds_a_placeholder_on_real_releases(pair, engine, version):
    target, drafter = pair
    # a --python that exists (one that does not is refused beside a release); its preflight is not what is tested
    for extra in ([], ["--python", sys.executable, "--no-preflight"]):
        run = compat("doctor", target, drafter, "--engine", f"{engine}=={version}", "--json", *extra)
        fixes = fixes_of(run.json())
        assert not [f for f in fixes if PLACEHOLDER.search(f)], fixes
        for command in (f for f in fixes if f.startswith("compat convert ckpt")):
            assert f"--engine {engine}=={version}" in command and "--engine-version" not in command


@pytest.mark.network
def test_spec_keys_a_release_lacks_are_said(pair):
    target, drafter = pair
    run = compat("doctor", target, drafter, "--engine", "vllm==0.18.0", "--spec", "no_such_key=1", "--json")
    notes = run.json()["notes"]
    assert any(n.startswith("--spec no_such_key: this release's SpeculativeConfig has no such field") for n in notes)
    assert "no_such_key" not in run.json()["launch"]["command"]


@pytest.mark.network
def test_releases_table_groups_ranges_and_shows_fixes_whole(pair):
    target, drafter = pair
    run = compat("doctor", target, drafter, "--engine", "vllm", "--releases", ">=0.16,<0.19")
    assert run.code == 1, run.err
    lines = run.out.splitlines()
    assert any(line.startswith("0.16.0 - 0.17.1 ") and "works after compat patch" in line for line in lines), run.out
    words = " ".join(run.out.split())  # the fix column wraps at $COLUMNS, never cuts
    assert "patch vllm-eagle3-whitelist; patch vllm-deepseek-eagle3-aux" in words and "..." not in run.out
    assert any(line.startswith("0.18.0 - 0.18.1 ") and "works as is" in line for line in lines), run.out
    assert f"details of one release: compat doctor {target} {drafter} --engine vllm==0.16.0" in run.out
    table = compat("doctor", target, drafter, "--engine", "vllm", "--releases", ">=0.16,<0.19", "--json").json()
    assert table["schema"] == "compat.doctor-releases/1" and table["notes"] == []
    assert json.dumps(table).count('"version"') >= 5
