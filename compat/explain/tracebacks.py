"""Python tracebacks in a log: their frames (file, line, function, the code line shown) and the exception.

Read line by line as the log streams by (`Readers.feed`), from lines whose prefixes compat/explain/logline.py
removed: each process's lines go to a reader of their own, so that tracebacks of several processes written at once
are read apart. A traceback is found whatever precedes its header on the line (SGLang's `Scheduler hit an
exception: Traceback (most recent call last):`); one whose header was cut off starts at its first frame; one whose
end was cut off (no exception line) is kept with its frames, which still say where the engine was. A frame inside the
engine is named by its path inside the package (`.../site-packages/vllm/v1/worker/gpu_model_runner.py` ->
`vllm/v1/worker/gpu_model_runner.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from compat.explain.logline import LogLine

_START = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+?)\s*$')
_FRAME_INSIDE = re.compile(r'(?<=\s)File "([^"]+)", line (\d+), in (.+?)\s*$')  # after a prefix compat does not know
_GROUP = re.compile(r"^(\s*)\+ Exception Group $")  # Python 3.11+: a group's tracebacks are drawn inside `| `
_EXCEPTION = re.compile(r"^((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Exit|Interrupt|Failure|Warning|Error\w+))"
                        r"(?::\s?(.*))?$")
MAX_FRAMES = 200  # a recursion's thousand frames say nothing the last ones do not
MAX_MESSAGE_LINES = 8  # lines after the exception's that continue its message (pydantic lists its errors so)


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    code: str | None

    def in_package(self, package: str) -> str | None:
        """The frame's file inside `package` (`vllm/...`), or None when the file is not the package's."""
        path = self.path.replace("\\", "/")
        marker = f"/{package}/"
        pos = path.rfind("site-packages/" + package + "/")
        if pos >= 0:
            return path[pos + len("site-packages/"):]
        pos = path.rfind(marker)
        if pos < 0:
            return path if path.startswith(package + "/") else None
        return path[pos + 1:]


@dataclass
class Traceback:
    first_line: int
    frames: list[Frame] = field(default_factory=list)
    exception: str | None = None
    message: str = ""
    more: list[str] = field(default_factory=list)  # the message's continuation lines
    last_line: int = 0
    error_line: int = 0  # the line of the exception itself
    process: str = ""  # who wrote it (the lines' prefixes: "EngineCore_DP0 pid=42", "rank0", "TP0")
    header: str = ""  # what the line of `Traceback (most recent call last):` said before it ("Scheduler hit ...:")
    cut: str = ""  # "" whole; "head" (began at a frame), "end" (no exception line), "head and end"
    chained: bool = False  # it follows another one in the same block ("The above exception was the direct cause")
    context: Traceback | None = None  # that other one, the exception being handled when this one was raised

    def innermost(self, package: str) -> tuple[Frame, str] | None:
        for frame in reversed(self.frames):
            relpath = frame.in_package(package)
            if relpath is not None:
                return frame, relpath
        return None

    def engine_frames(self, package: str) -> list[tuple[Frame, str]]:
        return [(f, rel) for f in self.frames if (rel := f.in_package(package)) is not None]




_LIBRARY = re.compile(r"(?:^|[/\\])(?:site|dist)-packages[/\\]|[/\\]lib(?:64)?[/\\]python\d[\d.]*[/\\]|^<frozen ")


def is_library(frame: Frame) -> bool:
    """A frame of an installed package or of Python's own library (not the user's code, not an engine checkout)."""
    return bool(_LIBRARY.search(frame.path))


def raising_frame(tb: Traceback, package: str, has_file=None, checkout: str = "") -> tuple[Frame, str] | None:
    """The frame whose code raised, as far as code can be owned: the innermost frame that is not a library's (a
    library called by it raised on its behalf), and whose it is: "engine" (the engine's package) or "user" (a file
    outside it: the user's script, their client, a notebook). A path outside site-packages that only looks like the
    engine's (`~/vllm/client.py`, a checkout's `examples/`) is the user's when the release has no such file
    (`has_file(relpath)`) and it is not inside a checkout of the engine's package (`checkout`: `vllm/vllm/`,
    `sglang/python/sglang/`: another release's file may be gone from this one). None: every frame is a library's."""
    generated = bool(tb.engine_frames(package))  # `<string>`: a dataclass's generated __init__ when the engine's there
    for frame in reversed(tb.frames):
        if generated and frame.path == "<string>":
            continue
        relpath = frame.in_package(package)
        if relpath is not None:
            outside = (has_file is not None and not is_library(frame) and not has_file(relpath)
                       and not (checkout and checkout in frame.path.replace("\\", "/")))
            return frame, "user" if outside else "engine"
        if not is_library(frame):
            return frame, "user"
    return None


def exception_line(text: str) -> tuple[str, str] | None:
    """(exception class, message) of a line like `ValueError: msg`."""
    match = _EXCEPTION.match(text.strip())
    if match is None:
        return None
    return match.group(1), match.group(2) or ""


class Reader:
    """One process's lines; hands back each traceback when its exception line (and continuation) has passed."""

    def __init__(self) -> None:
        self.current: Traceback | None = None
        self.took_line = False  # the last line fed was a frame or its code (the code quotes messages: not a match)
        self._expect_code = False
        self._collecting = False  # after the exception line: message continuation
        self._record = ""  # the log head of the exception line (its record's further lines repeat it)
        self._chain = False  # the last block said the next traceback is chained to the one before
        self._lead: re.Pattern | None = None  # what the traceback's lines start with that no known prefix is

    @property
    def open(self) -> bool:
        """In the middle of a traceback (its frames, or its message): a bare line that follows is probably its."""
        return self.current is not None

    def feed(self, line: LogLine) -> Traceback | None:
        """A finished traceback, if this line ended one (the line itself is then not part of it)."""
        if self.current is not None and self._lead is not None and (lead := self._lead.match(line.text)):
            line = replace(line, text=line.text[lead.end():])
        text = line.text
        self.took_line = False
        if self.current is None and not self._chain and 'File "' not in text and "Traceback" not in text \
                and "exception" not in text:
            return None  # nothing being read, and nothing starts here: most of a log's lines
        stripped = text.strip()
        done = None
        if self._collecting:
            assert self.current is not None
            if stripped and len(self.current.more) < MAX_MESSAGE_LINES and not self._new(line, stripped):
                self.current.more.append(stripped)
                self.current.last_line = line.number
                self.took_line = True
                return None
            done, self.current, self._collecting = self.current, None, False
        at = text.find(_START)
        if at >= 0:
            done = self._cut_short(done)
            self.current = Traceback(first_line=line.number, process=line.process, header=text[:at].strip(),
                                     chained=self._chain)
            self._lead = lead_of(text[:at])
            self._chain, self._expect_code, self.took_line = False, False, True
            return done
        if stripped.startswith(_CHAINS):
            self._chain = True
        frame = _FRAME.match(text)
        if frame is None and self.current is None and 'File "' in text:
            frame = _FRAME_INSIDE.search(text)  # a cut traceback's first frame behind a prefix compat does not know
        if frame is not None:
            if self.current is None:  # the header was cut off: the traceback starts at its first frame shown
                self.current = Traceback(first_line=line.number, process=line.process, cut="head", chained=self._chain)
                self._chain = False
                self._lead = lead_of(text[:frame.start()]) if frame.re is _FRAME_INSIDE else None
            if len(self.current.frames) >= MAX_FRAMES:
                del self.current.frames[0]
            self.current.frames.append(Frame(frame.group(1), int(frame.group(2)), frame.group(3), None))
            self._expect_code = self.took_line = True
            return done
        if self.current is None:
            return done
        if self._expect_code and text.startswith((" ", "\t")):
            self.took_line = True
            last = self.current.frames[-1]
            if last.code is None and stripped and not set(stripped) <= set("^~ "):
                self.current.frames[-1] = Frame(last.path, last.line, last.function, stripped)
            return done
        self._expect_code = False
        exc = exception_line(text)
        if exc is not None:
            self.current.exception, self.current.message = exc
            self.current.last_line = self.current.error_line = line.number
            self._collecting, self._record, self.took_line = True, line.record, True
            return done
        if stripped and not text.startswith((" ", "\t")):
            done = self._cut_short(done)  # a traceback whose end was cut (or not a traceback after all)
        return done

    def close(self) -> Traceback | None:
        if self.current is not None and self.current.exception:
            done, self.current = self.current, None
            return done
        return self._cut_short(None)

    def _cut_short(self, done: Traceback | None) -> Traceback | None:
        """The traceback being read ends here without its exception line: kept when it has frames to go by."""
        current, self.current = self.current, None
        self._expect_code = False
        if done is not None or current is None or current.exception or not current.frames:
            return done
        current.cut = "head and end" if current.cut else "end"
        current.last_line = current.last_line or current.first_line
        return current

    def _new(self, line: LogLine, stripped: str) -> bool:
        """A line that starts something else: another log record, another traceback, the chained-exception notes."""
        if stripped.startswith(_CHAINS) or _START in stripped:
            return True
        if line.record:
            return line.record != self._record
        return bool(self._record) or bool(_NEW_RECORD.match(stripped))


class Readers:
    """A reader per process: each line goes to its process's reader; a bare line (no prefix names a process) to the
    reader in the middle of a traceback that was fed last (SGLang logs a traceback's further lines bare)."""

    def __init__(self) -> None:
        self.readers: dict[str, Reader] = {}
        self.took_line = False
        self._last = ""

    def feed(self, line: LogLine) -> Traceback | None:
        key = line.process
        if not key and self._last and not self._reader("").open and self._reader(self._last).open:
            key = self._last
        reader = self._reader(key)
        done = reader.feed(line)
        self.took_line = reader.took_line
        if reader.open:
            self._last = key
        return done

    def close(self) -> list[Traceback]:
        return [tb for reader in self.readers.values() if (tb := reader.close()) is not None]

    def _reader(self, key: str) -> Reader:
        reader = self.readers.get(key)
        if reader is None:
            reader = self.readers[key] = Reader()
        return reader


def lead_of(text: str) -> re.Pattern | None:
    """What the lines of a traceback start with when its header line starts so (`text`, what preceded the header)
    and no known prefix was it: a prefix of a logger or a tool compat does not know (vLLM's VLLM_LOGGING_PREFIX, a
    shipper's time stamp), or the `| ` a Python exception group draws its tracebacks in. Its shape is kept (a run of
    digits is any digits: a time, a pid), with one space after it at most; a message before the header on the same
    line (SGLang's `Scheduler hit an exception: `) is no line's start, so it never matches."""
    group = _GROUP.match(text)
    if group is not None:
        return re.compile(re.escape(group.group(1)) + r"\| ?")
    body = text.rstrip()
    if not body.strip():
        return None
    shape = "".join(r"\d+" if part.isdigit() else re.escape(part) for part in re.split(r"(\d+)", body) if part)
    return re.compile(shape + " ?")


_CHAINS = ("During handling of the above exception", "The above exception was the direct cause")
_NEW_RECORD = re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|^\[|^\d{4}-\d\d-\d\d")
