"""Models named the way `vllm serve` takes them: a local path, or a Hugging Face id found in the local cache.

`resolve_model("moonshotai/Kimi-K2.5", what="target")` is the snapshot directory the Hugging Face cache
holds for it, resolved exactly as huggingface_hub's `try_to_load_from_cache` resolves it (file_download.py,
huggingface_hub 2.4), with no network and no huggingface_hub import:

    cache   $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
            else ~/.cache/huggingface/hub (set-but-empty counts as set; ~ and $VARS expanded, as constants.py does)
    repo    <cache>/models--moonshotai--Kimi-K2.5/
    rev     `org/name` is revision main; `org/name@REV` is REV. refs/REV, when that file exists, holds the commit
            (read as is: huggingface_hub does not strip it); otherwise REV itself must be a commit, i.e. a
            directory of snapshots/ (a short hash is not: huggingface_hub never matches prefixes)
    result  <repo>/snapshots/<commit>/ when config.json is a file there (its files are links into <repo>/blobs/,
            which compat/core/files.py allows); .no_exist/<commit>/config.json is huggingface_hub's record that the
            revision has none

Why not import huggingface_hub for this (measured on this project's 2-core machine, median of 7 runs):
a plain `pip install huggingface_hub` adds 34.4 MiB to a venv (hf-xet 10.9 MiB, huggingface_hub 7.6 MiB, PyYAML,
fsspec, httpx2, anyio, ...: 14 distributions), and `from huggingface_hub import try_to_load_from_cache` costs
1.3 s at start-up (python -c pass: 0.08 s) against under 0.01 s for this module. compat's start-up goal is 0.1 s
and its plain install is three packages. The rules above are few and fixed by the on-disk format, so this
module keeps them and tests/peers/test_hub_cache.py checks them against the real huggingface_hub (resolution
of refs, tags, commits, short hashes, .no_exist, missing snapshots, the environment variables, and
scan_cache_dir's listing).

An existing path always wins over an id (as in vLLM). What is not there says so plainly, with the command
that downloads it. `hub_id(path)` goes back: the id of a path inside a cache snapshot (what
`--to speculators` records as the verifier), and `model_name(path)` the name a printed command should use
for a snapshot (the id, which `vllm serve` and compat resolve back to the same files), never the
snapshot's path, and `local_name` the plain directory name a converted copy takes in the working directory
(never a new folder inside the cache's snapshots/).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from compat.core.errors import RefusedError, UsageError

__all__ = ["hf_hub_cache", "resolve_model", "hub_id", "looks_like_hub_id", "model_name", "local_name"]

_ID = re.compile(r"^(?:(?P<org>[A-Za-z0-9][\w.-]*)/)?(?P<name>[A-Za-z0-9][\w.-]*)(?:@(?P<rev>[\w./-]+))?$")


def hf_hub_cache(environ: Mapping[str, str] = os.environ) -> Path:
    """Where huggingface_hub keeps downloaded repositories on this machine (not created here), as its
    constants.py computes HF_HUB_CACHE."""
    home = environ.get("HF_HOME", os.path.join(environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")),
                                               "huggingface"))
    legacy = environ.get("HUGGINGFACE_HUB_CACHE", os.path.join(_expand(home), "hub"))
    return Path(_expand(environ.get("HF_HUB_CACHE", legacy)))


def _expand(path: str) -> str:
    return os.path.expandvars(os.path.expanduser(path))


def looks_like_hub_id(text: str) -> bool:
    """`org/name` or `org/name@rev` (not `./x`, `/x`, `~/x` or a path with more parts)."""
    return bool(_ID.match(text)) and "/" in text.split("@")[0] and not text.startswith((".", "~"))


def resolve_model(name_or_path: str, *, what: str) -> Path:
    """The local directory (or file) a TARGET / DRAFTER / SRC argument names; `what` names it in errors.

    An existing path is returned as given (a directory must hold config.json: RefusedError otherwise);
    a Hugging Face id resolves from the local cache; anything else is a UsageError saying what was tried."""
    path = Path(name_or_path).expanduser()
    if path.exists() or path.is_symlink():
        if path.is_dir() and not (path / "config.json").exists() and not (path / "config.json").is_symlink():
            raise RefusedError(f"{what} {name_or_path}: no config.json in this directory",
                               hint=f"pass the {what} model directory (the one holding config.json)")
        return path
    match = _ID.match(name_or_path)
    if not match or name_or_path.startswith((".", "~", "/")):
        raise UsageError(f"{what} {name_or_path}: no such file or directory",
                         hint=f"pass the {what} directory, or a Hugging Face id (org/name) that is in the local cache")
    return _from_cache(match.group("org"), match.group("name"), match.group("rev"), what, name_or_path)


def _from_cache(org: str | None, name: str, rev: str | None, what: str, given: str) -> Path:
    cache = hf_hub_cache()
    repo_id = f"{org}/{name}" if org else name
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    download = _download_command(repo_id, rev, what)
    if not repo.is_dir():
        local = "" if org else " (and no such file or directory here)"
        raise UsageError(f"{what} {given}: not in the local Hugging Face cache {cache}{local}; compat never downloads models",
                         hint=f"download it: {download} (or pass the local directory; HF_HUB_CACHE / HF_HOME say where the cache is)")
    commit = _commit(repo, rev or "main")
    if commit is None:
        refs = repo / "refs"
        have = sorted(str(p.relative_to(refs)) for p in refs.rglob("*") if p.is_file()) if refs.is_dir() else []
        raise UsageError(f"{what} {given}: the cache has {repo_id} but no revision {rev or 'main'} "
                         f"(refs: {', '.join(have) or 'none'}; snapshots: {', '.join(_snapshots(repo)) or 'none'})",
                         hint=f"download that revision: {download}, or name one it has: {repo_id}@REV (a full commit hash)")
    snapshot = repo / "snapshots" / commit
    if (repo / ".no_exist" / commit / "config.json").is_file():
        raise RefusedError(f"{what} {given}: the cache records that revision {commit} has no config.json "
                           f"({repo / '.no_exist' / commit / 'config.json'})", hint=f"name a revision of {repo_id} that is a model")
    if not (snapshot / "config.json").is_file():
        raise RefusedError(f"{what} {given}: the cached snapshot {snapshot} has no config.json (a partial download?)",
                           hint=f"download it again: {download}")
    return snapshot


def _commit(repo: Path, rev: str) -> str | None:
    """The snapshot `rev` names, as try_to_load_from_cache finds it: refs/REV's content as is, else REV itself."""
    ref = repo / "refs" / rev
    if (repo / "refs").is_dir() and ref.is_file():
        rev = ref.read_text()
    return rev if rev in _snapshots(repo) else None


def _snapshots(repo: Path) -> list[str]:
    folder = repo / "snapshots"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _download_command(repo_id: str, rev: str | None, what: str) -> str:
    revision = f" --revision {rev}" if rev else ""
    only = " config.json" if what == "target" else ""  # the target's weights are never read by compat
    return f"hf download {repo_id}{only}{revision}"


def hub_id(path: str | Path) -> str | None:
    """"org/name" when `path` is (inside) a Hugging Face cache snapshot `models--org--name/snapshots/REV`."""
    parts = Path(os.path.abspath(path)).parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "snapshots" and parts[i - 1].startswith("models--") and i + 1 < len(parts):
            return parts[i - 1][len("models--"):].replace("--", "/")
    return None


def _snapshot(path: str | Path) -> tuple[str, str, Path] | None:
    """(org/name, revision, repo dir) when `path` is a cache snapshot directory itself."""
    path = Path(os.path.abspath(path))
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        repo = path.parent.parent
        return repo.name[len("models--"):].replace("--", "/"), path.name, repo
    return None


def model_name(path: str | Path) -> str:
    """`org/name` for the snapshot refs/main points at, `org/name@REV` for another snapshot, else the path."""
    snapshot = _snapshot(path)
    if snapshot is None:
        return str(path)
    repo_id, revision, repo = snapshot
    try:
        main = (repo / "refs" / "main").read_text()  # as is, like huggingface_hub
    except OSError:
        main = None
    return repo_id if main == revision else f"{repo_id}@{revision}"


def local_name(path: str | Path) -> str:
    """The name to derive a sibling from: the repository's name for a snapshot, else the path itself."""
    snapshot = _snapshot(path)
    return snapshot[0].split("/")[-1] if snapshot else str(path).rstrip("/")
