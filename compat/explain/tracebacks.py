"""Python tracebacks in a log: their frames (file, line, function, the code line shown) and the exception.

Read line by line as the log streams by (`Reader.feed`), whatever prefixes a process adds to its lines
(vLLM's `(EngineCore_DP0 pid=42) `). A frame inside the engine is named by its path inside the package
(`.../site-packages/vllm/v1/worker/gpu_model_runner.py` -> `vllm/v1/worker/gpu_model_runner.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PREFIX = re.compile(r"^\([^()]*pid=\d+\)\s?")
_START = "Traceback (most recent call last):"
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+?)\s*$')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning|Error\w+)|AssertionError)"
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

    def innermost(self, package: str) -> tuple[Frame, str] | None:
        for frame in reversed(self.frames):
            relpath = frame.in_package(package)
            if relpath is not None:
                return frame, relpath
        return None

    def engine_frames(self, package: str) -> list[tuple[Frame, str]]:
        return [(f, rel) for f in self.frames if (rel := f.in_package(package)) is not None]


def strip_prefix(text: str) -> str:
    return _PREFIX.sub("", text, count=1)


def exception_line(text: str) -> tuple[str, str] | None:
    """(exception class, message) of a line like `ValueError: msg`."""
    match = _EXCEPTION.match(text.strip())
    if match is None:
        return None
    return match.group(1), match.group(2) or ""


class Reader:
    """Feed it lines; it hands back each traceback when its exception line (and continuation) has passed."""

    def __init__(self) -> None:
        self.current: Traceback | None = None
        self.took_line = False  # the last line fed was a frame or its code (the code quotes messages: not a match)
        self._expect_code = False
        self._collecting = False  # after the exception line: message continuation

    def feed(self, number: int, text: str) -> Traceback | None:
        """A finished traceback, if this line ended one (the line itself is then not part of it)."""
        text = strip_prefix(text)
        done = None
        self.took_line = False
        if self._collecting:
            assert self.current is not None
            if text.strip() and len(self.current.more) < MAX_MESSAGE_LINES and not _looks_new(text):
                self.current.more.append(text.strip())
                self.current.last_line = number
                return None
            done, self.current, self._collecting = self.current, None, False
        if text.strip() == _START:
            if self.current is not None and self.current.exception is None:
                pass  # a traceback cut short: start again
            self.current = Traceback(first_line=number)
            self._expect_code = False
            return done
        if self.current is None:
            return done
        frame = _FRAME.match(text)
        if frame is not None:
            if len(self.current.frames) >= MAX_FRAMES:
                del self.current.frames[0]
            self.current.frames.append(Frame(frame.group(1), int(frame.group(2)), frame.group(3), None))
            self._expect_code = self.took_line = True
            return done
        if self._expect_code and text.startswith((" ", "\t")):
            self.took_line = True
            last = self.current.frames[-1]
            if last.code is None and text.strip() and not set(text.strip()) <= set("^~ "):
                self.current.frames[-1] = Frame(last.path, last.line, last.function, text.strip())
            return done
        self._expect_code = False
        exc = exception_line(text)
        if exc is not None:
            self.current.exception, self.current.message = exc
            self.current.last_line = self.current.error_line = number
            self._collecting = True
            return done
        if text.strip() and not text.startswith((" ", "\t")):
            self.current = None  # not a traceback after all (or one whose end was cut)
        return done

    def close(self) -> Traceback | None:
        done = self.current if self.current is not None and self.current.exception else None
        self.current = None
        return done


def _looks_new(text: str) -> bool:
    """A line that starts something else: a log record, another traceback, the chained-exception notes."""
    stripped = text.strip()
    return (stripped == _START or stripped.startswith(("During handling", "The above exception"))
            or bool(re.match(r"^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|^\[|^\d{4}-\d\d-\d\d", stripped)))
