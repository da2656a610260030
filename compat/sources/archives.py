"""Archives: only the package's .py files are taken from an sdist or a wheel, never anything outside the destination.

Member names that are absolute, climb with `..`, name a drive or hold odd characters are skipped;
links and devices are never created; a member that collides with an earlier one is skipped. The
package folder is the shallowest `<engine>/__init__.py` (`vllm-X/vllm`, `sglang-X/python/sglang`, a
wheel's root), so a vendored copy deeper in an sdist is ignored.
"""

from __future__ import annotations

import io
import re
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, cast

__all__ = ["extract_sdist", "extract_wheel"]

_CHUNK = 1024 * 1024


def _safe_parts(name: str) -> list[str] | None:
    """The path components of an archive member name; None for absolute, `..`, drive or odd names."""
    if not name or "\\" in name or "\x00" in name or name.startswith("/"):
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or re.match(r"^[A-Za-z]:", parts[0]):
        return None
    return parts


def _package_prefix(candidates: list[list[str]], engine: str) -> list[str] | None:
    """The shallowest folder holding `<engine>/__init__.py` (`vllm-X/`, `sglang-X/python/`, or the wheel's root)."""
    inits = [parts[:-2] for parts in candidates if len(parts) >= 2 and parts[-2] == engine and parts[-1] == "__init__.py"]
    return min(inits, key=len) if inits else None


def _write_member(source: IO[bytes], dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as out:
        shutil.copyfileobj(source, out, _CHUNK)


def extract_sdist(stream: IO[bytes] | io.RawIOBase, staging: Path, engine: str) -> Path | None:
    """Stream a .tar.gz, keeping the .py files that sit under some `<engine>/` folder; the package folder or None."""
    kept: list[list[str]] = []
    with tarfile.open(fileobj=cast("IO[bytes]", stream), mode="r|*") as tar:
        for member in tar:
            if not member.isreg():  # symlinks, hard links, devices: never created
                continue
            parts = _safe_parts(member.name)
            source = tar.extractfile(member)
            if parts is None or not parts[-1].endswith(".py") or engine not in parts[:-1] or source is None:
                continue
            try:
                _write_member(source, staging.joinpath(*parts))
            except (FileExistsError, NotADirectoryError, IsADirectoryError):  # collides with an earlier member: skip it
                continue
            kept.append(parts)
    prefix = _package_prefix(kept, engine)
    return None if prefix is None else staging.joinpath(*prefix, engine)


def extract_wheel(archive: zipfile.ZipFile, dest: Path, engine: str,
                  prefetch: Callable[[zipfile.ZipFile, list[zipfile.ZipInfo]], None] | None = None) -> int | None:
    """Write the package's .py members under `dest/<engine>/`; the number written, or None without a package."""
    members: list[tuple[zipfile.ZipInfo, list[str]]] = []
    for info in archive.infolist():
        parts = _safe_parts(info.filename)
        if parts is None or info.is_dir() or stat.S_ISLNK(info.external_attr >> 16):
            continue
        members.append((info, parts))
    prefix = _package_prefix([parts for _, parts in members], engine)
    if prefix is None:
        return None
    depth = len(prefix) + 1
    wanted = [(info, parts) for info, parts in members if parts[:depth] == [*prefix, engine] and parts[-1].endswith(".py")]
    if prefetch:
        prefetch(archive, [info for info, _ in wanted])
    for info, parts in wanted:
        with archive.open(info) as source:  # checks each member's CRC-32
            _write_member(source, dest.joinpath(engine, *parts[depth:]))
    return len(wanted)
