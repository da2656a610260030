"""The two consoles a command writes to: results on stdout, errors and progress on stderr.

Both are made on first use: rich costs tens of milliseconds to import, and `compat probe --json`
(or any command that prints only JSON and no error) never needs it.

How they print, decided here once for every command:
- colour: `--color always|never|auto`; with auto, NO_COLOR (any value) turns it off and FORCE_COLOR
  (any value) on, else colour only on a terminal;
- width: on a terminal, its width, and text wraps (doctor indents what wraps); into a pipe or a file,
  text is never wrapped (a path or a command stays on one line, whole), and only tables and rules,
  which need a width, take $COLUMNS (else PIPE_WIDTH);
- `-qq` silences stdout (the exit code says it all; errors still go to stderr);
- a reader that goes away (`compat probe | head -1`) raises BrokenPipeError for compat/cli.py to
  end the run quietly with 0, instead of rich's own exit 1.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations are strings here
if TYPE_CHECKING:
    from typing import Any

PIPE_WIDTH = 100_000  # into a pipe without $COLUMNS: nothing wraps (tables size to their content; rules are plain)
COLOR_CHOICES = ("auto", "always", "never")


def color_choice(flag: str | None, environ=os.environ) -> str:
    """"always" | "never" | "auto": the flag first, then NO_COLOR, then FORCE_COLOR."""
    if flag in ("always", "never"):
        return flag
    if environ.get("NO_COLOR"):
        return "never"
    if environ.get("FORCE_COLOR"):
        return "always"
    return "auto"


def pipe_width(environ=os.environ) -> int:
    try:
        return max(40, int(environ.get("COLUMNS", "")))
    except ValueError:
        return PIPE_WIDTH


class LazyConsole:
    """A rich Console built, with these options, the first time anything of it is used."""

    def __init__(self, **options):
        self._options = options
        self._console = None

    def __getattr__(self, name):
        if self._console is None:
            self._console = _console_class()(**self._options)
        return getattr(self._console, name)


def _console_class():
    from rich.console import Console

    class CompatConsole(Console):
        def on_broken_pipe(self) -> None:  # rich exits 1 here; the reader leaving is not our failure
            self.quiet = True
            raise BrokenPipeError

    return CompatConsole


def console_options(stream, *, color: str, quiet: bool = False) -> dict:
    """The rich Console options for one stream (sys.stdout or sys.stderr)."""
    tty = _isatty(stream)
    options: dict[str, object] = {"stderr": stream is sys.stderr, "highlight": False, "quiet": quiet}
    if tty:
        options.update(soft_wrap=False)
    else:  # a pipe or a file: never wrapped (no $COLUMNS) and never padded (rich pads table cells with spaces)
        options.update(soft_wrap=True, width=pipe_width(), file=TrailingSpaceStripper(stream))
    if color == "never":
        options.update(color_system=None, no_color=True)
    elif color == "always":  # even where TERM says the terminal has no colours (rich would print none)
        dumb = os.environ.get("TERM", "").strip().lower() in ("dumb", "unknown")
        options.update(force_terminal=True, no_color=False, color_system="standard" if dumb else "auto")
    return options


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def make_consoles(args):
    color = color_choice(getattr(args, "color", None))
    quiet = (getattr(args, "quiet", 0) or 0) >= 2
    console = LazyConsole(**console_options(sys.stdout, color=color, quiet=quiet))
    err_console = LazyConsole(**{**console_options(sys.stderr, color=color), "soft_wrap": True})
    return console, err_console


def print_hanging(console, head, text) -> None:
    """`head` then `text`; on a terminal what wraps is indented under the text (a hanging indent, as doctor and
    explain print a field under its label); into a pipe the line is never wrapped, so a path or command stays whole."""
    from rich.table import Table
    from rich.text import Text

    head = head if isinstance(head, Text) else Text(head)
    text = text if isinstance(text, Text) else Text(text)
    if console.soft_wrap:
        console.print(head + text)
        return
    grid = Table.grid(padding=0)
    grid.add_column(no_wrap=True, width=head.cell_len)
    grid.add_column(overflow="fold")
    grid.add_row(head, text)
    console.print(grid)


def show_progress(args) -> bool:
    """Progress bars and waiting messages on stderr: not under --json, not with -q."""
    return not getattr(args, "json", False) and not (getattr(args, "quiet", 0) or 0)


def progress_bar(command: str) -> ConsoleProgress:
    """The compat.core.progress.Progress of `command` on stderr: a transient bar per batch on a terminal, plain lines
    into a file or a pipe (a bar there would leave a stray line), e.g. over the releases of doctor --releases or
    compat matrix."""
    return ConsoleProgress(command)


class ConsoleProgress:
    """A Progress on stderr: each batch shown by a `BarProgress` on a terminal, else by a `LineProgress`."""

    def __init__(self, command: str) -> None:
        self.command = command
        self._now: BarProgress | LineProgress | None = None

    def start(self, label: str, total: int) -> None:
        self.end(False)
        self._now = BarProgress(self.command) if sys.stderr.isatty() else LineProgress(self.command)
        self._now.start(label, total)

    def item(self, name: str) -> None:
        if self._now is not None:
            self._now.item(name)

    def advance(self, n: int = 1) -> None:
        if self._now is not None:
            self._now.advance(n)

    def status(self, text: str) -> None:
        if self._now is not None:
            self._now.status(text)

    def end(self, completed: bool) -> None:
        now, self._now = self._now, None
        if now is not None:
            now.end(completed)


class BarProgress:
    """A batch shown as a transient rich bar on stderr: `<command>: <label> (<item>)`, gone when the batch ends."""

    def __init__(self, command: str) -> None:
        self.command, self.label = command, ""
        self._shown: Any = None
        self._task: Any = None

    def start(self, label: str, total: int) -> None:
        from rich.console import Console
        from rich.progress import Progress

        self.end(False)
        self.label = label
        self._shown = Progress(console=Console(stderr=True, no_color=color_choice(None) == "never"), transient=True)
        self._shown.start()
        self._task = self._shown.add_task(f"{self.command}: {label}", total=total)

    def item(self, name: str) -> None:
        if self._shown is not None:
            self._shown.update(self._task, description=f"{self.command}: {self.label} ({name})")

    def advance(self, n: int = 1) -> None:
        if self._shown is not None:
            self._shown.advance(self._task, n)

    def status(self, text: str) -> None:
        if self._shown is not None:
            self._shown.console.print(f"[dim]{text}[/]")

    def end(self, completed: bool) -> None:
        shown, self._shown = self._shown, None
        if shown is not None:
            shown.stop()


PROGRESS_EVERY_S = 5.0  # into a file or a pipe (a CI log): a line this often, so a long cold run never looks hung
_LAST_LINE = [0.0]  # when a progress line last went to stderr, from any reporter (a fetch's lines too: note_line)
_BEATING: list[Heartbeat] = []  # the heartbeats running, innermost last: only that one speaks


def note_line() -> None:
    """A progress line just went to stderr (compat/sources/progress.py says so): no heartbeat repeats it for a while."""
    import time

    _LAST_LINE[0] = time.monotonic()


class Heartbeat:
    """Into a file or a pipe: a line on stderr at least every `every` seconds while work runs, saying what it is doing
    (`state`), however long one step takes (a release probed, a gigabyte copied): a CI log never goes quiet.

        with Heartbeat("convert") as beat:
            beat.state = "copying tensors: 1.2 GB of 4.0 GB"   # what the next line says
            beat.say("verifying")                             # a line now

    The lines come from a thread that wakes five times per `every`; the work itself never waits for it. Heartbeats
    nest (a command's around its steps'): the innermost speaks, and any progress line on stderr counts as one."""

    def __init__(self, command: str, every: float = PROGRESS_EVERY_S, stream=None, *, silent: bool = False) -> None:
        import threading
        import time

        self.command, self.every, self._out, self.silent = command, every, stream, silent
        self.state = ""
        self._started = self._last = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"{command}-heartbeat", daemon=True)

    def say(self, text: str, *, elapsed: bool = False) -> None:
        import time

        if self.silent:
            return
        now = time.monotonic()
        print(f"{self.command}: {text}" + (f", {now - self._started:.0f} s" if elapsed else ""),
              file=self._out or sys.stderr, flush=True)
        self._last = now
        if self._out is None:
            note_line()

    def due(self) -> bool:
        """True when no line was said on this stream for `every` seconds."""
        import time

        last = self._last if self._out is not None else max(self._last, _LAST_LINE[0])
        return time.monotonic() - last >= self.every

    def seconds(self) -> float:
        import time

        return time.monotonic() - self._started

    def _beat(self) -> None:
        import time

        while not self._stop.wait(self.every / 5):
            if self.state and _BEATING and _BEATING[-1] is self and self.due():
                self.say(self.state, elapsed=True)

    def __enter__(self) -> Heartbeat:
        if not self.silent:
            _BEATING.append(self)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if not self.silent:
            self._thread.join()
            _BEATING.remove(self)


def heartbeat(command: str, enabled: bool = True) -> Heartbeat:
    """A Heartbeat for a long step into a file or a pipe; a silent one on a terminal (its bars show what moves) or
    when progress is off (-q, --json)."""
    return Heartbeat(command, PROGRESS_EVERY_S, silent=not enabled or _isatty(sys.stderr))


def progress_lines(command: str, items: list[str], what: str, every: float = PROGRESS_EVERY_S, stream=None):
    """The items, with plain progress lines on stderr where no bar can be drawn (`LineProgress`)."""
    from compat.core.progress import each

    return each(LineProgress(command, every, stream), items, what)


class LineProgress:
    """A batch shown as plain lines on stderr where no bar can be drawn: one when it starts, then one at least every
    `every` seconds while it runs (`compat matrix: releases 12/39 (0.18.0), 41 s`, however long one item takes), and
    one when it is done (when it took that long)."""

    def __init__(self, command: str, every: float = PROGRESS_EVERY_S, stream=None) -> None:
        self.command, self.every, self.stream = command, every, stream
        self.label, self.total, self.done = "", 0, 0
        self._beat: Heartbeat | None = None

    def start(self, label: str, total: int) -> None:
        self.end(False)
        self.label, self.total, self.done = label, total, 0
        self._beat = Heartbeat(self.command, self.every, self.stream).__enter__()
        self._beat.say(f"{label}: {total} to do")

    def item(self, name: str) -> None:
        if self._beat is not None:
            self._beat.state = f"{self.label} {self.done}/{self.total} ({name})"
            if self._beat.due():
                self._beat.say(self._beat.state, elapsed=True)

    def advance(self, n: int = 1) -> None:
        self.done += n

    def status(self, text: str) -> None:
        if self._beat is not None:
            self._beat.say(text)

    def end(self, completed: bool) -> None:
        beat, self._beat = self._beat, None
        if beat is None:
            return
        if completed and beat.seconds() >= self.every:
            beat.say(f"{self.label} done, {self.total} in {beat.seconds():.0f} s")
        beat.__exit__(None, None, None)


class TrailingSpaceStripper:
    """A stream that writes each line without the spaces rich pads table cells with (into a pipe or a file only)."""

    def __init__(self, stream):
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", "utf-8")
