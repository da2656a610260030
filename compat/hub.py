"""Models named the way `vllm serve` takes them: a local path, or a Hugging Face id found in the local cache.

`resolve_model("moonshotai/Kimi-K2.5", what="target")` is the snapshot directory the Hugging Face cache
holds for it, found the way huggingface_hub finds it, with no network and no huggingface_hub import:

    cache   $HF_HUB_CACHE (or the older $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else
            $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
    repo    <cache>/models--moonshotai--Kimi-K2.5/
    rev     `org/name` is refs/main; `org/name@REV` is refs/REV (a branch or tag), or a commit
            (snapshots/REV, or the one snapshot whose hash starts with REV)
    result  <repo>/snapshots/<commit>/ (its files are links into <repo>/blobs/, which compat/files.py allows)

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

from compat.errors import RefusedError, UsageError

__all__ = ["hf_hub_cache", "resolve_model", "hub_id", "looks_like_hub_id", "model_name", "local_name"]

_ID = re.compile(r"^(?:(?P<org>[A-Za-z0-9][\w.-]*)/)?(?P<name>[A-Za-z0-9][\w.-]*)(?:@(?P<rev>[\w./-]+))?$")
_HEX = re.compile(r"^[0-9a-f]{7,40}$")


def hf_hub_cache(environ=os.environ) -> Path:
    """Where huggingface_hub keeps downloaded repositories on this machine (not created here)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if environ.get(name):
            return Path(environ[name]).expanduser()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser() / "hub"
    xdg = environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


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
        have = sorted(p.name for p in (repo / "refs").rglob("*") if p.is_file()) if (repo / "refs").is_dir() else []
        raise UsageError(f"{what} {given}: the cache has {repo_id} but no revision {rev or 'main'} "
                         f"(refs: {', '.join(have) or 'none'}; snapshots: {', '.join(_snapshots(repo)) or 'none'})",
                         hint=f"download that revision: {download}, or name one it has: {repo_id}@REV")
    snapshot = repo / "snapshots" / commit
    if not (snapshot / "config.json").exists():
        raise RefusedError(f"{what} {given}: the cached snapshot {snapshot} has no config.json (a partial download?)",
                           hint=f"download it again: {download}")
    return snapshot


def _commit(repo: Path, rev: str) -> str | None:
    ref = repo / "refs" / rev
    if ref.is_file():
        commit = ref.read_text().strip()
        return commit if (repo / "snapshots" / commit).is_dir() else None
    snapshots = _snapshots(repo)
    if rev in snapshots:
        return rev
    if _HEX.match(rev):
        found = [s for s in snapshots if s.startswith(rev)]
        return found[0] if len(found) == 1 else None
    return None


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
        main = (repo / "refs" / "main").read_text().strip()
    except OSError:
        main = None
    return repo_id if main == revision else f"{repo_id}@{revision}"


def local_name(path: str | Path) -> str:
    """The name to derive a sibling from: the repository's name for a snapshot, else the path itself."""
    snapshot = _snapshot(path)
    return snapshot[0].split("/")[-1] if snapshot else str(path).rstrip("/")
