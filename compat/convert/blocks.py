"""`compat convert ckpt` for a block drafter (DFlash, DSpark): its files copied byte for byte, config.json rewritten
so the release feeds the layers it was trained on and reads its block in the layout it was trained with, and why in
compat's record (compat/block_drafters.py decides the config; checkpoints/blocks/ names the source's layout).

The engines load these drafters by their own tensor names, so nothing is renamed: every regular file of SRC is copied
(symlinks out of SRC are refused, as for EAGLE-3 drafters), into an owner-marked directory beside DST, verified
(sha256 of each file against SRC, config.json read back), then swapped into place (staging.py): never a partial
output, SRC never touched. The release's readers come from its probe report.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.block_drafters import CannotRewrite, Rewrite, release_member, rewrite
from compat.checkpoints import RECORD_FILE, RECORD_SCHEMA
from compat.checkpoints.blocks import detect_block_layout
from compat.core.errors import RefusedError
from compat.methods import Recognition, recognise_drafter
from compat.target import Target

BLOCK_FAMILIES = ("dflash", "dspark")
CHUNK = 1 << 20


@dataclass
class BlockPlan:
    src: Path
    dst: Path
    family: str
    layout: str
    trainer: str
    engine: str
    engine_version: str | None
    rewrite: Rewrite
    files: list[str]
    config_before: dict[str, Any]
    force: bool = False
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"src": str(self.src), "dst": str(self.dst), "family": self.family, "from": self.layout,
                "trainer": self.trainer, "engine": self.engine, "engine_version": self.engine_version,
                "files": self.files, "config_changes": self.rewrite.written, "why": self.rewrite.why,
                "record": self.record(), "notes": self.notes}

    def record(self) -> dict[str, Any]:
        from compat import __version__

        return {"schema": RECORD_SCHEMA, "tool": "compat convert ckpt", "compat_version": __version__, "layout": self.layout,
                "family": self.family, "engine": self.engine, "engine_version": self.engine_version,
                "source": {"path": str(self.src), "layout": self.layout, "trainer": {"id": self.trainer, "from": "layout"}},
                **self.rewrite.record, "notes": self.rewrite.why, "verified": "sha256 of every file against the source"}


def block_family(config: dict[str, Any], tensor_names: set[str]) -> Recognition | None:
    """The drafter's block family when it is a block drafter (the conversion below applies), else None."""
    found = recognise_drafter(config, dict.fromkeys(tensor_names))
    return found if isinstance(found, Recognition) and found.family in BLOCK_FAMILIES else None


def plan_blocks(src: Path, dst: Path, report: dict[str, Any], target: Target, *, force: bool = False) -> BlockPlan:
    """What the conversion writes for this release (nothing written); RefusedError when it cannot make them agree."""
    config = _config(src)
    files = _files(src)
    found = block_family(config, set(_names(src, files)))
    if found is None:
        raise RefusedError(f"{src} is not a DFlash or DSpark drafter", hint="compat convert ckpt converts EAGLE-3 drafters "
                           "with --to LAYOUT")
    layout = detect_block_layout(config, set())
    member = release_member(report, found.family)
    try:
        changed = rewrite(report, config, found, target, member)
    except CannotRewrite as err:
        raise RefusedError(f"cannot convert {src} for {report.get('engine')} {report.get('version')}: {err}",
                           hint="say how the drafter was trained, or use a release that reads it (compat doctor says which)") from None
    return BlockPlan(src, dst, found.family, layout.NAME if layout else f"{found.family} ({found.trainer})", found.trainer,
                     str(report.get("engine")), report.get("version"), changed, files, config, force)


def _config(src: Path) -> dict[str, Any]:
    from compat.core.files import input_roots, read_json

    path = src / "config.json"
    try:
        data = read_json(path, input_roots(src), "a drafter config.json")
    except (OSError, ValueError) as err:
        raise RefusedError(f"{path}: {err}", hint="SRC is a drafter directory with its config.json") from None
    if not isinstance(data, dict):
        raise RefusedError(f"{path} is not a JSON object")
    return data


def _files(src: Path) -> list[str]:
    """Every regular file of SRC to copy (no symlink, nothing outside SRC), config.json and a record aside."""
    out = []
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.is_symlink():
            raise RefusedError(f"{src / entry.name} is a symbolic link: compat copies only what is inside SRC",
                               hint="copy the file in place of the link")
        if entry.is_file(follow_symlinks=False) and entry.name not in ("config.json", RECORD_FILE):
            out.append(entry.name)
        elif not entry.is_dir(follow_symlinks=False) and not entry.is_file(follow_symlinks=False):
            raise RefusedError(f"{src / entry.name} is not a regular file (a FIFO, a device or a socket): compat reads "
                               "only regular files", hint="remove it from SRC")
    return out


def _names(src: Path, files: list[str]) -> list[str]:
    from compat.safetensors_stream import read_header

    names: list[str] = []
    for name in files:
        if name.endswith(".safetensors"):
            names += list(read_header(src / name).tensors)
    return names


def execute_blocks(plan: BlockPlan) -> dict[str, Any]:
    from compat.convert.staging import commit, make_staging

    tmp = make_staging(plan.dst)
    try:
        digests = {}
        for name in plan.files:
            digests[name] = _copy(plan.src / name, tmp / name)
        (tmp / "config.json").write_text(json.dumps(plan.rewrite.config, indent=2) + "\n")
        (tmp / RECORD_FILE).write_text(json.dumps(plan.record(), indent=2) + "\n")
        for name, digest in digests.items():  # read back what was written
            if _sha256(tmp / name) != digest:
                raise RefusedError(f"{name}: the copy differs from the source", hint="check the disk, then run again")
        if json.loads((tmp / "config.json").read_text()) != plan.rewrite.config:
            raise RefusedError("config.json did not read back as written")
        commit(tmp, plan.dst, plan.force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dst": str(plan.dst), "files": [*plan.files, "config.json", RECORD_FILE], "verified": len(digests)}


def _copy(src: Path, dst: Path) -> str:
    digest = hashlib.sha256()
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(CHUNK):
            digest.update(chunk)
            fout.write(chunk)
        fout.flush()
        os.fsync(fout.fileno())
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
