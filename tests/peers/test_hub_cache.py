"""compat/hub.py resolves a Hugging Face cache exactly as huggingface_hub does (run in the peers venv):
`try_to_load_from_cache` for refs, tags, PR refs, full and short commit hashes, a missing snapshot, a partial
one and a cached non-existence; `constants.HF_HUB_CACHE` for the environment variables; `scan_cache_dir` for
the refs and snapshots compat lists when a revision is missing. compat does not import huggingface_hub
(compat/hub.py says why, with the measured cost)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from compat.core.errors import CompatError
from compat.hub import _commit, _snapshots, hf_hub_cache, resolve_model
from peer_venv import run_in_peers

pytestmark = [pytest.mark.peers]

A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)
REPO = "org/model"


def build(cache: Path, *, broken: bool = True) -> None:
    """One repository with: main -> A, tag v1 -> B, refs/pr/1 -> C, a commit D with no ref, a ref whose
    snapshot is gone, a ref file with a trailing newline, a partial snapshot and a recorded non-existence."""
    repo = cache / "models--org--model"
    for commit in (A, B, C, D):
        (repo / "snapshots" / commit).mkdir(parents=True)
        blob = repo / "blobs" / commit[:8]
        blob.parent.mkdir(exist_ok=True)
        blob.write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "commit": commit}))
        if commit != D:
            os.symlink(os.path.relpath(blob, repo / "snapshots" / commit), repo / "snapshots" / commit / "config.json")
    (repo / "snapshots" / D / "tokenizer.json").write_text("{}")  # D: a partial download, no config.json
    refs = {"main": A, "v1": B, "refs/pr/1": C, "partial": D}
    if broken:  # scan_cache_dir reports a repository with these as corrupted (and lists it no more)
        refs.update({"gone": "e" * 40, "newline": B + "\n"})
    for name, commit in refs.items():
        (repo / "refs" / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "refs" / name).write_text(commit)
    (repo / ".no_exist" / C).mkdir(parents=True)
    (repo / ".no_exist" / C / "generation_config.json").write_text("")
    other = cache / "models--solo"  # a repository id without an organisation
    (other / "snapshots" / A).mkdir(parents=True)
    (other / "snapshots" / A / "config.json").write_text("{}")
    (other / "refs").mkdir()
    (other / "refs" / "main").write_text(A)


REVISIONS = [None, "main", "v1", "refs/pr/1", A, B, D, A[:7], A[:12], "gone", "newline", "partial", "nope"]


def test_compat_resolves_the_cache_as_huggingface_hub_does(tmp_path, peers_python, monkeypatch):
    cache, clean = tmp_path / "hub", tmp_path / "clean"
    build(cache)
    build(clean, broken=False)
    lookups = [{"cache": str(cache), "repo_id": REPO, "revision": rev, "filename": "config.json"} for rev in REVISIONS]
    lookups += [{"cache": str(cache), "repo_id": REPO, "revision": C, "filename": "generation_config.json"},
                {"cache": str(cache), "repo_id": "solo", "revision": None, "filename": "config.json"},
                {"cache": str(cache), "repo_id": "org/absent", "revision": None, "filename": "config.json"}]
    home = tmp_path / "home"
    envs = [{}, {"HF_HOME": str(home)}, {"XDG_CACHE_HOME": str(tmp_path / "xdg")}, {"HUGGINGFACE_HUB_CACHE": str(tmp_path / "old")},
            {"HF_HUB_CACHE": str(tmp_path / "new"), "HUGGINGFACE_HUB_CACHE": str(tmp_path / "old")},
            {"HF_HOME": "~/hfhome", "XDG_CACHE_HOME": str(tmp_path / "xdg")}, {"HF_HUB_CACHE": "$HOME/x/hub"}]
    job = tmp_path / "job.json"
    job.write_text(json.dumps({"lookups": lookups, "envs": envs, "scan": str(clean)}))
    theirs = run_in_peers(peers_python, "hub_resolve.py", str(job))

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    for lookup, found in zip(lookups[:len(REVISIONS) + 2], theirs["lookups"]):
        rev = lookup["revision"]
        name = lookup["repo_id"] + (f"@{rev}" if rev else "")
        if lookup["filename"] != "config.json":  # the .no_exist record of another file
            assert found == "NO_EXIST" and (cache / "models--org--model" / "snapshots" / C / "config.json").is_file()
            continue
        try:
            mine = resolve_model(name, what="target") / "config.json"
        except CompatError as err:
            assert found is None, (name, found, err)
        else:
            assert str(mine) == found, name
    assert theirs["lookups"][-1] is None
    with pytest.raises(CompatError, match=r"^target org/absent: not in the local Hugging Face cache .+; compat never "
                                          r"downloads models\n  fix: download it: hf download org/absent config.json"):
        resolve_model("org/absent", what="target")

    base = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")}
    for env, cache_dir in zip(envs, theirs["caches"]):
        assert str(hf_hub_cache({**base, **env})) == cache_dir, env

    listed = theirs["scan"][REPO]
    repo = clean / "models--org--model"
    assert _snapshots(repo) == listed["commits"]
    assert sorted(listed["refs"]) == ["main", "partial", "refs/pr/1", "v1"]
    # the refs compat lists when a revision is missing are the ones huggingface_hub finds, each resolved alike
    refs = repo / "refs"
    assert sorted(str(p.relative_to(refs)) for p in refs.rglob("*") if p.is_file()) == listed["refs"]
    assert all(_commit(repo, ref) is not None for ref in listed["refs"])
