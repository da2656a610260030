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


def show_progress(args) -> bool:
    """Progress bars and waiting messages on stderr: not under --json, not with -q."""
    return not getattr(args, "json", False) and not (getattr(args, "quiet", 0) or 0)


def progress_bar(command: str):
    """`bar(items, what)` for `command`: yields the items with a transient bar on stderr (a terminal only: into a
    file or a pipe it would leave a stray line), e.g. over the releases of doctor --releases or compat matrix."""

    def bar(items: list[str], what: str):
        if not sys.stderr.isatty():
            yield from progress_lines(command, items, what)
            return
        from rich.console import Console
        from rich.progress import Progress

        with Progress(console=Console(stderr=True, no_color=color_choice(None) == "never"), transient=True) as shown:
            task = shown.add_task(f"{command}: {what}", total=len(items))
            for item in items:
                shown.update(task, description=f"{command}: {what} ({item})")
                yield item
                shown.advance(task)

    return bar


PROGRESS_EVERY_S = 5.0  # into a file or a pipe (a CI log): a line this often, so a long cold run never looks hung


def progress_lines(command: str, items: list[str], what: str, every: float = PROGRESS_EVERY_S, stream=None):
    """The items, with plain progress lines on stderr where no bar can be drawn: one when the work starts, then one
    at most every `every` seconds (`compat matrix: releases 12/39 (0.18.0), 41 s`), and one when it is done."""
    import time

    out = stream or sys.stderr
    started = last = time.monotonic()
    print(f"{command}: {what}: {len(items)} to do", file=out, flush=True)
    for done, item in enumerate(items):
        now = time.monotonic()
        if now - last >= every:
            print(f"{command}: {what} {done}/{len(items)} ({item}), {now - started:.0f} s", file=out, flush=True)
            last = now
        yield item
    if time.monotonic() - started >= every:
        print(f"{command}: {what} done, {len(items)} in {time.monotonic() - started:.0f} s", file=out, flush=True)


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
