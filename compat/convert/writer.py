"""execute: write the plan into an owner-marked directory beside DST, verify it, fsync it, and swap
it into place (staging.py), so DST is complete or absent (with --force: the old or the new one).

Any failure removes the temporary directory before the error leaves; SIGINT, SIGTERM and SIGHUP do
the same (interrupts.py); a SIGKILL leaves it for the next run, which removes it (the owner is gone).
An OSError (ENOSPC, EIO, EACCES, ...) becomes one line naming the file and the fix, exit 4.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from compat.checkpoints import RECORD_FILE
from compat.core.files import refuse_os_error
from compat.safetensors_stream import CHECKSUM, OutputTensor, WrittenTensor, write_safetensors

from .interrupts import SignalGuard

TYPE_CHECKING = False  # rich is imported only when a progress bar is shown
if TYPE_CHECKING:
    from typing import Any

    from compat.core.console import Heartbeat
    from compat.core.progress import Progress
from .plan import Plan, PlannedTensor
from .record import build_record
from .source import INDEX_FILE, copy_extra_file
from .staging import commit, fsync_dir, make_staging
from .verification import verify


@dataclass
class Result:
    dst: Path
    files: list[str]
    bytes_written: int
    tensors: list[WrittenTensor] = field(default_factory=list)
    verified: bool = False
    checksum: str = CHECKSUM
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"dst": str(self.dst), "files": self.files, "bytes_written": self.bytes_written, "verified": self.verified,
                "checksum": self.checksum, "notes": self.notes,
                "tensors": {t.name: {"dtype": t.dtype, "shape": list(t.shape), "checksum": t.digest} for t in self.tensors}}


class _Step:
    """What is being done to which file, for the one-line message an OSError becomes, and for the heartbeat's lines
    into a log (`convert: writing model.safetensors: 1.2 GiB of 4.0 GiB, 35 s`)."""

    def __init__(self, dst: Path, beat: Heartbeat | None = None):
        self.dst, self.path, self.doing, self.beat = dst, dst, "preparing DST", beat

    def __call__(self, name: str | None, doing: str) -> None:
        self.path, self.doing = (self.dst / name if name else self.dst), doing
        if self.beat is not None:
            self.beat.state = doing

    def copied(self, done: int, total: int) -> None:
        if self.beat is not None:
            from compat.core.output import human_size

            self.beat.state = f"{self.doing}: {human_size(done)} of {human_size(total)}"


def execute(plan: Plan, progress: bool = True) -> Result:
    """Write into a temporary directory beside DST, verify, then swap it into place."""
    from compat.core.console import heartbeat

    total = sum(t.out_nbytes for _, items in plan.shards for t in items)
    with heartbeat("convert", progress) as beat:  # into a log: a line every few seconds, a big checkpoint or not
        return _execute(plan, progress, total, _Step(plan.dst, beat))


def _execute(plan: Plan, progress: bool, total: int, step: _Step) -> Result:
    notes: list[str] = []
    tmp = None
    committed = False
    with SignalGuard() as guard:
        try:
            step(None, "creating the temporary directory beside DST")
            tmp = make_staging(plan.dst)
            written = _write(plan, tmp, total, progress, step)
            step(None, "verifying the output")
            verify(tmp, plan, written)
            step(None, "syncing the output to disk")
            _fsync_tree(tmp)
            step(None, "moving the output into place as DST")
            with guard.deferred():
                previous = commit(tmp, plan.dst, plan.force)
                committed = True
                fsync_dir(plan.dst.parent)
            if previous is not None:
                _remove_previous(previous, notes)
        except BaseException as exc:
            guard.cleaning()
            if tmp is not None and not committed:
                shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError):
                if tmp is not None and exc.filename and str(exc.filename).startswith(str(tmp)):
                    exc.filename = None  # a file of the removed temporary directory: name the DST file it was to be
                raise refuse_os_error(exc, step.path, f"{step.doing} (nothing was changed: DST is as it was)") from None
            raise
    files = [name for name, _ in plan.shards]
    return Result(plan.dst, files, total, written, verified=True, checksum=plan.checksum, notes=notes)


def _output(t: PlannedTensor) -> OutputTensor:
    assert t.dest_name is not None and t.source is not None, "a shard holds only kept tensors, each with its bytes"
    return OutputTensor(t.dest_name, t.source, t.out_dtype)


def _write(plan: Plan, tmp: Path, total: int, progress: bool, step: _Step) -> list[WrittenTensor]:
    written: list[WrittenTensor] = []
    done = [0]

    def copied(n: int) -> None:
        done[0] += n
        step.copied(done[0], total)
        advance(n)

    bar: Progress = _BytesBar(progress)
    advance = bar.advance
    bar.start("copying tensors", total)
    completed = False
    try:
        for file_name, items in plan.shards:
            step(file_name, f"writing {file_name}")
            outputs = [_output(t) for t in items]
            written += write_safetensors(tmp / file_name, outputs, plan.metadata, on_bytes=copied, checksum=plan.checksum)
        completed = True
    finally:
        bar.end(completed)
    if len(plan.shards) > 1:
        step(INDEX_FILE, f"writing {INDEX_FILE}")
        weight_map = {t.dest_name: name for name, items in plan.shards for t in items}
        _write_json(tmp / INDEX_FILE, {"metadata": {"total_size": total}, "weight_map": weight_map})
    step("config.json", "writing config.json")
    _write_json(tmp / "config.json", plan.config_after)
    for name in plan.extra_files:
        step(name, f"copying {name} from SRC")
        copy_extra_file(plan.src, plan.source_roots or (plan.src,), name, tmp)
    step(RECORD_FILE, f"writing {RECORD_FILE}")
    _write_json(tmp / RECORD_FILE, build_record(plan, written))
    return written


def _remove_previous(path: Path, notes: list[str]) -> None:
    try:
        shutil.rmtree(path)
    except OSError as exc:  # DST is in place: a leftover for the next run, not a failure of this one
        notes.append(f"could not remove the previous DST, now {path.name}: {exc.strerror or exc}; the next run removes it")


class _BytesBar:
    """A compat.core.progress.Progress over the bytes copied: a rich bar on stderr, on a terminal only."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._bar: Any = None
        self._task: Any = None

    def start(self, label: str, total: int) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

        console = Console(stderr=True)
        if not console.is_terminal:
            return
        self._bar = Progress(TextColumn(label), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                             TimeRemainingColumn(), console=console, transient=True)
        self._bar.start()
        self._task = self._bar.add_task("copy", total=total)

    def item(self, name: str) -> None:
        pass  # the bar says what it copies in its label; the heartbeat names the file

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def status(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(f"[dim]{text}[/]")

    def end(self, completed: bool) -> None:
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.stop()


def _write_json(path: Path, data: dict) -> None:
    with open(path, "x") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def _fsync_tree(directory: Path) -> None:
    """The small files (safetensors shards were synced as written) and the directory entry itself."""
    for path in directory.iterdir():
        if path.suffix != ".safetensors":
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    fsync_dir(directory)
