"""doctor's preflight: the release's own configuration build (compat/preflight.py) of the line doctor diagnoses,
in the serving interpreter, before the checks run (checks/release_validation.py lets it decide where it ran on the
release and the platform diagnosed). The line is the user's (`--launch`), else the launch command doctor prints
(before its fixes): doctor then knows whether the release takes its own advice.
"""

from __future__ import annotations

from compat.checks import Ctx, Drafter, Options, suggested_launch
from compat.core.interpreter import Interpreter
from compat.core.tree import EngineTree
from compat.launch_line import read_line
from compat.preflight import Preflight, run
from compat.target import Target


def preflight_for(tree: EngineTree, target: Target, drafter: Drafter, options: Options,
                  python: Interpreter | None) -> Preflight:
    """The preflight of the line doctor diagnoses (never raises: what kept it from running is its `why`)."""
    from compat.report import build_report

    if python is None:
        return Preflight(False, why="no serving interpreter is known: give --python with the serving venv's python")
    line = options.launch
    if line is None:
        ctx = Ctx(build_report(tree), target, drafter, options)
        try:
            line = read_line(list(suggested_launch(ctx, None)["argv"]))
        except Exception as exc:  # doctor's own command that does not read back is no preflight: say so
            return Preflight(False, why=f"doctor's launch command could not be read back ({exc})", python=python.path)
    return run(python, line)
