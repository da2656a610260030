"""`compat doctor --manifest`: the launch lines declared in an infrastructure repository, checked where they are written.

    files -> nodes (PyYAML's composer, bounded; nodes.py) -> formats/ (one reader per format) -> Serving (model.py)
          -> run.py (doctor's checks per container, checking.py: release from the image, models here or unchecked)
          -> consistency.py (one model, one release, one drafter) -> render.py (text, JSON), report_formats.py (SARIF,
             JUnit) -> fix.py (--fix: the file written back with ruamel.yaml, comments and order kept)

No argparse here (compat/commands/doctor.py is the command line).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compat.core.progress import Progress
from compat.manifests.checking import Checked, Settings
from compat.manifests.model import Problem
from compat.manifests.scan import Scan, scan

__all__ = ["Outcome", "Settings", "check_paths"]


@dataclass
class Outcome:
    scan: Scan
    checked: list[Checked] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # the scan's, each container's, and the disagreements

    @property
    def failed(self) -> bool:
        return any(p.level == "error" for p in self.problems) or any(
            f.verdict == "fail" for c in self.checked for f in c.findings)


def check_paths(paths: list[str], settings: Settings, progress: Progress | None = None) -> Outcome:
    from compat.manifests.consistency import disagreements
    from compat.manifests.run import check_all

    found = scan(paths)
    checked = check_all(found, settings, progress)
    problems = [*found.problems, *(p for c in checked for p in c.problems), *disagreements(checked)]
    return Outcome(found, checked, problems)
