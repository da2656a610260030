"""A small Chrome DevTools Protocol client over Chromium's debugging pipe (no port, no websocket, no dependency).

`chromium --remote-debugging-pipe` reads commands from fd 3 and writes answers and events to fd 4, each a JSON
message ended by a NUL byte. Used by the matrix page test and tools/matrix_screenshot.py: open a local file,
record console errors, exceptions and every network request, evaluate JS, click at a point, take a screenshot.
Chromium is Debian's `chromium` (.ci/run installs it when missing); nothing is downloaded.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
         "--disable-extensions", "--metrics-recording-only", "--mute-audio", "--hide-scrollbars",
         "--remote-debugging-pipe"]


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _high(fds: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved to fds >= 10, so that putting them at 3 and 4 in the child cannot close one of them."""
    import fcntl

    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return moved  # type: ignore[return-value]


class Browser:
    """One headless Chromium with one page attached (flattened session)."""

    def __init__(self, binary: str | None = None, timeout: float = 60.0) -> None:
        binary = binary or chromium_binary()
        if binary is None:
            raise RuntimeError("no chromium on PATH (Debian: apt-get install -y chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="compat-chromium-")
        to_child_r, self._to_child = _high(os.pipe())
        self._from_child, from_child_w = _high(os.pipe())
        # the child must see them as fds 3 and 4: bash renumbers them (dash takes single-digit fds only), then execs it
        script = f'exec "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", script, "bash", binary, *FLAGS, f"--user-data-dir={self.profile}",
                                      "about:blank"], pass_fds=(to_child_r, from_child_w),
                                     stdout=subprocess.DEVNULL, stderr=open(os.environ.get("CDP_LOG", os.devnull), "wb"))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=True)

    # -- the pipe --------------------------------------------------------------------------------------
    def _write(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_child, data):]

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe (exit {self.proc.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: bool = False, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        self._write(message)
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            if "method" in answer:
                self.events.append(answer)

    def wait_for(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        seen = next((e for e in self.events if e["method"] == method), None)
        deadline = time.monotonic() + (timeout or self.timeout)
        while seen is None:
            event = self._read(deadline)
            if "method" in event:
                self.events.append(event)
                if event["method"] == method:
                    seen = event
        return seen

    # -- what a test asks ------------------------------------------------------------------------------
    def open(self, path: Path, width: int = 1400, height: int = 900, mobile: bool = False) -> None:
        self.send("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=mobile)
        self.events.clear()
        self.send("Page.navigate", session=True, url=Path(path).resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        answer = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            raise RuntimeError(f"JS failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed + released) at the middle of the element, as a person's."""
        box = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView("
                            "{block: 'center', inline: 'center'}); const r = e.getBoundingClientRect(); "
                            "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", session=True, type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        Path(path).write_bytes(base64.b64decode(data))
        return Path(path)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries since the page was opened."""
        out = []
        for event in self.events:
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif event["method"] == "Runtime.exceptionThrown":
                out.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
            elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append("log: " + params["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """Every URL the page asked for since it was opened (the page itself included)."""
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self._write({"id": self._next_id + 1, "method": "Browser.close", "params": {}})
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            for fd in (self._to_child, self._from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
