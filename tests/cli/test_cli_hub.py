"""Issue 12, point 9: targets and drafters named the way `vllm serve` takes them: a Hugging Face id resolves from
the local Hugging Face cache (HF_HUB_CACHE, else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub), refs/main
to its snapshot, `org/name@rev` too, with no network; what is not there is said plainly, with the download
command. `--to speculators` records the verifier's hub id. The caches are written here, laid out as
huggingface_hub lays them out (snapshot files are links into blobs/)."""

from __future__ import annotations

import json

import pytest

from cli_helpers import compat, engine_tree, files_of, hf_cache_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


@pytest.fixture
def hub(tmp_path, pair):
    """A hub cache with moonshotai/Kimi-K2-Instruct (its config only) and acme/kimi-k2-eagle3 (the whole drafter)."""
    target, drafter = pair
    root = tmp_path / "hub"
    hf_cache_model(root, "moonshotai/Kimi-K2-Instruct", files_of(target), commit=COMMIT)
    hf_cache_model(root, "acme/kimi-k2-eagle3", files_of(drafter), commit=COMMIT)
    engine_tree(tmp_path / "tree")
    return root


def doctor(*names, env, cwd):
    return compat("doctor", *names, "--path", "tree", "--offline", "--json", env=env, cwd=cwd)


def test_doctor_takes_hub_ids_from_hf_hub_cache(tmp_path, hub, env):
    run = doctor("moonshotai/Kimi-K2-Instruct", "acme/kimi-k2-eagle3", env={**env, "HF_HUB_CACHE": str(hub)}, cwd=tmp_path)
    assert run.code == 1, run.err  # a minimal tree: checks fail; the inputs were read
    d = run.json()
    assert d["target"]["path"] == str(hub / "models--moonshotai--Kimi-K2-Instruct" / "snapshots" / COMMIT)
    assert d["target"]["model_type"] == "kimi_k2" and d["target"]["num_hidden_layers"] == 61
    assert d["drafter"]["path"] == str(hub / "models--acme--kimi-k2-eagle3" / "snapshots" / COMMIT)
    assert d["drafter"]["layout"] == "eagle" and d["drafter"]["tensors"] == 15


@pytest.mark.parametrize("variable, value", [("HF_HOME", "{tmp}"), ("XDG_CACHE_HOME", "{tmp}/xdg")])
def test_the_other_places_the_hub_cache_is(tmp_path, pair, env, variable, value):
    home = value.format(tmp=tmp_path / "home")
    hub = tmp_path / "home" / ("hub" if variable == "HF_HOME" else "xdg/huggingface/hub")
    hf_cache_model(hub, "moonshotai/Kimi-K2-Instruct", files_of(pair[0]))
    engine_tree(tmp_path / "tree")
    run = doctor("moonshotai/Kimi-K2-Instruct", pair[1], env={**env, variable: home}, cwd=tmp_path)
    assert run.code == 1 and run.json()["target"]["path"].startswith(str(hub))


def test_a_revision_by_branch_or_commit(tmp_path, pair, env):
    hub = tmp_path / "hub"
    target = files_of(pair[0])
    hf_cache_model(hub, "moonshotai/Kimi-K2-Instruct", target, commit=COMMIT)
    older = {**target, "config.json": json.dumps({**json.loads(target["config.json"]), "num_hidden_layers": 27}).encode()}
    hf_cache_model(hub, "moonshotai/Kimi-K2-Instruct", older, commit=OTHER, ref="v1")
    engine_tree(tmp_path / "tree")
    env = {**env, "HF_HUB_CACHE": str(hub)}
    layers = {name: doctor(name, pair[1], env=env, cwd=tmp_path).json()["target"]["num_hidden_layers"]
              for name in ("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Instruct@v1",
                           f"moonshotai/Kimi-K2-Instruct@{OTHER}", f"moonshotai/Kimi-K2-Instruct@{COMMIT}")}
    assert list(layers.values()) == [61, 27, 27, 61]
    # a short hash is no revision to huggingface_hub (try_to_load_from_cache matches no prefix), so not to compat
    assert doctor(f"moonshotai/Kimi-K2-Instruct@{OTHER[:10]}", pair[1], env=env, cwd=tmp_path).code == 2
    missing = doctor("moonshotai/Kimi-K2-Instruct@v2", pair[1], env=env, cwd=tmp_path)
    assert missing.code == 2
    error = missing.json()
    assert "no revision v2" in error["error"] and "refs: main, v1" in error["error"]
    assert error["fix"].startswith("download that revision: hf download moonshotai/Kimi-K2-Instruct config.json --revision v2")


def test_a_model_that_is_not_there_says_so_and_how_to_download_it(tmp_path, hub, pair, env):
    env = {**env, "HF_HUB_CACHE": str(hub)}
    target = doctor("moonshotai/Kimi-K2.5", pair[1], env=env, cwd=tmp_path)
    assert target.code == 2
    error = target.json()
    assert error["error"] == (f"target moonshotai/Kimi-K2.5: not in the local Hugging Face cache {hub}; "
                              "compat never downloads models")
    assert error["fix"].startswith("download it: hf download moonshotai/Kimi-K2.5 config.json ")  # doctor reads the config only
    drafter = doctor(pair[0], "acme/other-eagle3", env=env, cwd=tmp_path)
    assert drafter.code == 2 and "hf download acme/other-eagle3 (" in drafter.json()["fix"]


def test_a_snapshot_without_config_json_is_a_partial_download(tmp_path, pair, env):
    hub = tmp_path / "hub"
    hf_cache_model(hub, "moonshotai/Kimi-K2-Instruct", {"tokenizer.json": b"{}"})
    engine_tree(tmp_path / "tree")
    run = doctor("moonshotai/Kimi-K2-Instruct", pair[1], env={**env, "HF_HUB_CACHE": str(hub)}, cwd=tmp_path)
    assert run.code == 4 and "a partial download?" in run.json()["error"]


def test_a_local_directory_wins_over_a_hub_id(tmp_path, hub, pair, env):
    local = tmp_path / "moonshotai" / "Kimi-K2-Instruct"
    local.mkdir(parents=True)
    (local / "config.json").write_text(json.dumps({**json.loads((pair[0] / "config.json").read_text()), "num_hidden_layers": 5}))
    run = doctor("moonshotai/Kimi-K2-Instruct", pair[1], env={**env, "HF_HUB_CACHE": str(hub)}, cwd=tmp_path)
    assert run.json()["target"]["num_hidden_layers"] == 5  # as vLLM does: a path that exists is a path


def test_convert_reads_a_hub_drafter_and_speculators_records_the_verifiers_hub_id(tmp_path, hub, env):
    env = {**env, "HF_HUB_CACHE": str(hub)}
    run = compat("convert", "ckpt", "acme/kimi-k2-eagle3", "out", "--to", "speculators", "--target",
                 "moonshotai/Kimi-K2-Instruct", "--json", env=env, cwd=tmp_path)
    assert run.code == 0, run.err
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["speculators_config"]["verifier"] == {"name_or_path": "moonshotai/Kimi-K2-Instruct",
                                                        "architectures": ["DeepseekV3ForCausalLM"]}
    assert run.json()["plan"]["src"] == str(hub / "models--acme--kimi-k2-eagle3" / "snapshots" / COMMIT)
    assert not list(hub.rglob("*out*"))  # nothing written into the Hugging Face cache


def test_a_local_target_is_recorded_by_its_path(tmp_path, pair, env):
    target, drafter = pair
    run = compat("convert", "ckpt", drafter, tmp_path / "out", "--to", "speculators", "--target", target, env=env)
    assert run.code == 0, run.err
    verifier = json.loads((tmp_path / "out" / "config.json").read_text())["speculators_config"]["verifier"]
    assert verifier["name_or_path"] == str(target)


def test_hub_module_reads_ids_without_the_network():
    from compat.hub import hub_id, looks_like_hub_id

    assert looks_like_hub_id("moonshotai/Kimi-K2.5") and looks_like_hub_id("org/name@main")
    assert not looks_like_hub_id("./models/x") and not looks_like_hub_id("/abs/x") and not looks_like_hub_id("a/b/c")
    assert hub_id("/c/hub/models--moonshotai--Kimi-K2.5/snapshots/abc") == "moonshotai/Kimi-K2.5"
    assert hub_id("/c/hub/models--moonshotai--Kimi-K2.5/snapshots/abc/config.json") == "moonshotai/Kimi-K2.5"
    assert hub_id("/srv/models/Kimi-K2.5") is None


def test_printed_commands_name_a_snapshot_by_its_id_and_its_revision_when_not_main(tmp_path, pair):
    from compat.hub import local_name, model_name

    main = hf_cache_model(tmp_path / "hub", "acme/kimi-k2-eagle3", files_of(pair[1]), commit=COMMIT)
    other = hf_cache_model(tmp_path / "hub", "acme/kimi-k2-eagle3", files_of(pair[1]), commit=OTHER, ref="v1")
    assert model_name(main) == "acme/kimi-k2-eagle3"
    assert model_name(other) == f"acme/kimi-k2-eagle3@{OTHER}"
    assert model_name(pair[1]) == str(pair[1]) and model_name(main / "config.json") == str(main / "config.json")
    assert local_name(main) == "kimi-k2-eagle3" and local_name(str(pair[1]) + "/") == str(pair[1])
