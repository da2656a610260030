"""Issue 12, point 4: `compat convert ckpt` takes the source options every command takes (--engine SPEC,
--path DIR, --python PY); the release it converts for is that tree's version; a release that does not
exist is refused with the releases near it; `--engine-version X` still works, as `--engine <layout's
engine>==X`, validated the same way. The package index is a file:// folder written here (no network)."""

from __future__ import annotations

import pytest

from cli_helpers import compat, engine_tree, file_index


@pytest.fixture
def index_env(env, tmp_path):
    url = file_index(tmp_path / "index", {"vllm": ["0.16.0", "0.18.0", "0.20.0"], "sglang": ["0.5.8", "0.5.12"]})
    return {**env, "PIP_INDEX_URL": url}


def plan(run) -> dict:
    assert run.code == 0, run.err
    return run.json()["plan"]


def convert(pair, *args, env, cwd=None, to="vllm"):
    target, drafter = pair
    return compat("convert", "ckpt", drafter, drafter.parent / "out", "--to", to, "--target", target, "--dry-run",
                  "--json", *args, env=env, cwd=cwd)


def test_a_release_of_the_index(pair, index_env):
    p = plan(convert(pair, "--engine", "vllm==0.16.0", env=index_env))
    assert (p["engine"], p["engine_version"]) == ("vllm", "0.16.0")
    assert p["engine_source"] == "vllm 0.16.0, a release on the package index"


def test_a_range_is_its_newest_release_and_latest_the_newest(pair, index_env):
    assert plan(convert(pair, "--engine", "vllm>=0.16,<0.20", env=index_env))["engine_version"] == "0.18.0"
    assert plan(convert(pair, "--engine", "vllm==latest", env=index_env))["engine_version"] == "0.20.0"


@pytest.mark.parametrize("spec, near", [
    ("vllm==99.0", "0.18.0, 0.20.0"),  # does not exist: the newest ones
    ("vllm==0.5.8", "0.16.0, 0.18.0"),  # an SGLang number for vLLM
])
def test_a_release_that_does_not_exist_is_refused_with_the_releases_near_it(pair, index_env, spec, near):
    run = convert(pair, "--engine", spec, env=index_env)
    assert run.code == 3
    error = run.json()
    assert set(error) == {"schema", "error", "fix", "exit_code"} and error["exit_code"] == 3
    assert f"no release of vllm matches =={spec.split('==')[1]}" in error["error"]
    assert near in error["fix"]
    assert not (pair[1].parent / "out").exists()


def test_engine_version_is_the_old_spelling_of_engine_and_is_validated_the_same_way(pair, index_env):
    old = plan(convert(pair, "--engine-version", "0.18.0", env=index_env))
    new = plan(convert(pair, "--engine", "vllm==0.18.0", env=index_env))
    assert old == new
    sglang = plan(convert(pair, "--engine-version", "0.5.12", env=index_env, to="sglang"))
    assert (sglang["engine"], sglang["engine_version"]) == ("sglang", "0.5.12")
    refused = convert(pair, "--engine-version", "99.0", env=index_env)
    assert refused.code == 3 and "closest available" in refused.json()["fix"]
    assert convert(pair, "--engine-version", "latest", env=index_env).code == 2  # a release number, as always
    both = convert(pair, "--engine-version", "0.18.0", "--engine", "vllm==0.18.0", env=index_env)
    assert both.code == 2 and "--engine vllm==0.18.0" in both.json()["fix"]


def test_the_engine_must_be_the_layouts(pair, index_env):
    run = convert(pair, "--engine", "sglang==0.5.8", env=index_env)
    assert run.code == 2 and "the layout is loaded by vllm" in run.json()["error"]


def test_a_tree_is_its_own_version_and_a_tree_of_unknown_version_is_refused(pair, env, tmp_path):
    tree = engine_tree(tmp_path / "tree", version="0.20.0")
    p = plan(convert(pair, "--path", "tree", env=env, cwd=tmp_path))  # relative, from the working directory
    assert p["engine_version"] == "0.20.0" and str(tree.resolve()) in p["engine_source"]
    unknown = tmp_path / "unknown"
    (unknown / "vllm").mkdir(parents=True)
    (unknown / "vllm" / "__init__.py").write_text("")
    run = convert(pair, "--path", unknown, env=env)
    assert run.code == 4 and "cannot tell which vllm release" in run.json()["error"]
    assert run.json()["fix"] == "name the release instead: --engine vllm==X.Y.Z"


def test_offline_with_nothing_cached_says_so(pair, env):
    run = convert(pair, "--engine", "vllm==0.16.0", "--offline", env=env)
    assert run.code == 3 and "offline" in run.json()["error"]


def test_without_any_source_option_every_known_release(pair, env):
    p = plan(convert(pair, env=env))
    assert p["engine_version"] is None and p["engine_source"] is None
