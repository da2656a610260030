"""`compat doctor`'s engine: will this target + drafter work on this release, and how to launch it.

No argparse and no rich here (compat/commands/doctor.py is the command line). The parts:
    context.py   Ctx (what a check reads), Options, result(), the verdict words
    inputs.py    Target and Drafter, read from config.json and safetensors headers
    fixes.py     patch / convert / release fixes, each verified before it is offered
    launch.py    the launch command, with only the flags and keys the release has
    diagnose.py  one release (diagnose) or a range of them (diagnose_range)
The checks themselves are one per file under checks/ (installed as compat.checks).
"""

from compat.doctor.context import (  # noqa: F401
    DEFAULT_SPEC_TOKENS, DEFAULT_TOPK, DEPENDS, DOES_NOT_WORK, FAIL, NEEDS_CONVERT, PASS, SOURCE_UNAVAILABLE, WARN, WORKS,
    WORKS_PATCHED, WORKS_PATCHED_CONVERTED, Ctx, Options, result,
)
from compat.doctor.diagnose import classify, diagnose, diagnose_range, fix_summary, run_checks  # noqa: F401
from compat.doctor.inputs import Drafter, Target, read_drafter, read_target  # noqa: F401
from compat.doctor.launch import launch_command  # noqa: F401
