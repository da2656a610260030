"""The release's own configuration build, run from a launch line in the serving interpreter: the preflight.

doctor (with `--python PY`, or an installed engine) runs compat/verify/engine_side/config_build.py there in a
child process with a timeout: the engine's own parser reads the line, and its own code builds the configuration
up to and excluding loading the model (no GPU asked for, no network: HF_HUB_OFFLINE=1, no weight read). What it
raises, and where, is the release's answer; it decides the release-validation check where it ran on the release and
the platform doctor diagnoses (checks/release_validation.py), and where the static reading says otherwise both are
shown. A preflight that cannot run (the engine does not import, the child crashes or hangs) says why in one line,
and doctor keeps its static reading.

    run(python, line) -> Preflight        run_lines(python, engine, lines) -> (about, results): many lines, one import
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.core.errors import CompatError
from compat.core.interpreter import Interpreter
from compat.launch_line import LaunchLine

SCRIPT = "config_build.py"
DEFAULT_TIMEOUT_S = 180.0  # importing vLLM and its first configuration build on 2 busy cores take ~40 s


@dataclass
class Preflight:
    ran: bool
    why: str | None = None  # when it did not run (or did not finish): why, in one line
    python: str | None = None
    engine: str | None = None
    release: str | None = None  # the engine version the interpreter imported
    platform: str | None = None  # the platform the engine found there (vLLM's device type)
    ok: bool | None = None  # the build went through
    error: dict[str, Any] | None = None  # {"type", "message", "site", "function", "frames"}
    speculative: dict[str, Any] | None = None  # what the build made of the speculative settings
    seconds: float | None = None
    log: str | None = None
    line: str | None = None  # the line it built (a check run again on a changed line is not answered by it)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v is not None}
        out["ran"] = self.ran
        return out

    def decides(self, version: str | None, platform: str, line: LaunchLine | None = None) -> str | None:
        """None when this preflight answers for `line` on `version` and `platform`, else why it does not."""
        if not self.ran:
            return self.why or "it did not run"
        if line is not None and self.line is not None and line.text != self.line:
            return "it built another line"
        if version is not None and self.release is not None and _public(self.release) != _public(version):
            return f"it ran {self.engine} {self.release}, not {version}"
        if self.platform is not None and self.platform != platform:
            return f"it ran on {self.platform}, doctor reads the release for --platform {platform}"
        return None

    @property
    def site(self) -> str | None:
        return (self.error or {}).get("site")


def _public(version: str) -> str:
    """0.32.0+cpu -> 0.32.0: a build of the release is the release."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version).public
    except InvalidVersion:
        return version


@dataclass
class Line:
    """One line of a batch (the corpus tests build many in one engine process)."""

    label: str
    words: list[str]
    form: str = "serve"  # "serve" (`vllm serve`'s parser) | "module" (the api_server module's)
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, line: LaunchLine, label: str = "line") -> Line:
        return cls(label, list(line.args), "serve" if line.entry[-1:] == ("serve",) else "module", dict(line.env))


def run(python: Interpreter | str, line: LaunchLine, *, timeout: float = DEFAULT_TIMEOUT_S) -> Preflight:
    """The release's own build of `line` in `python`: a Preflight that ran, or one saying why not (never raises)."""
    interpreter = Interpreter.of(python)
    about, results = run_lines(interpreter, line.engine, [Line.of(line)], timeout=timeout)
    about.line = line.text
    if not about.ran:
        return about
    result = results.get("line")
    if result is None:
        about.ran, about.why = False, "the build printed no result (the engine crashed: see its log)"
        return about
    about.ok, about.error, about.speculative = bool(result.get("ok")), result.get("error"), result.get("speculative")
    about.seconds = (about.seconds or 0.0)
    return about


def run_lines(python: Interpreter | str, engine: str, lines: list[Line], *,
              timeout: float = DEFAULT_TIMEOUT_S) -> tuple[Preflight, dict[str, dict[str, Any]]]:
    """Build every line in one engine process: (what ran, label -> its result event)."""
    from compat.verify.engine import new_log_path, run_script

    from compat import engines

    interpreter = Interpreter.of(python)
    about = Preflight(False, python=interpreter.path, engine=engine)
    unit = engines.get(engine)
    if not unit.config_build:  # the unit names no build of its configuration (CONFIG_BUILD): nothing to run
        about.why = f"compat has no configuration build for {unit.display_name} (its unit's CONFIG_BUILD is empty)"
        return about, {}
    job = {"engine": unit.import_name, "build": unit.config_build, "lines": [{"label": ln.label, "words": ln.words, "form": ln.form, "env": ln.env} for ln in lines]}
    work = Path(tempfile.mkdtemp(prefix="compat-preflight-"))
    try:
        log = new_log_path("preflight")
        about.log = str(log)
        done = run_script(interpreter, SCRIPT, job, work=work, log=log, timeout=timeout, cwd=Path.cwd())
    except CompatError as err:  # it could not start, crashed or hung: one line, and doctor reads the code alone
        about.why = err.message.split("\n")[0]
        return about, {}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed = done.of("import_failed")
    if failed:
        about.why = f"{engine} does not import in {interpreter.path}: {failed[0].get('type')}: {failed[0].get('message', '')[:200]}"
        return about, {}
    imported = (done.of("imported") or [{}])[0]
    about.ran, about.release, about.platform = True, imported.get("version"), imported.get("platform")
    about.seconds = done.seconds
    return about, {str(e.get("label")): e for e in done.of("result")}
