"""`compat doctor`'s engine: will this target + drafter work on this release, and how to launch it.

No argparse and no rich here (compat/commands/doctor.py is the command line). The parts:
    inputs.py    the target and the drafter, read from config.json and safetensors headers, its layer ids settled
    fixes.py     patch / convert / release fixes, each verified before it is offered
    diagnose.py  one release (diagnose) or a range of them (diagnose_range: release_trees, then a release_row each;
                 the matrix calls both too), and the overall verdict words
    releases.py  the first later release that has a fact (for "it arrives in 0.15.0")
The checks themselves are one per file under checks/ (installed as compat.checks), with the API they are
written against (Ctx, Options, Result, the verdict words) and the launch command; doctor imports them
from there (doctor -> checks, never back).
"""

from compat.checks import (  # noqa: F401
    DEFAULT_SPEC_TOKENS, DEFAULT_TOPK, FAIL, PASS, PLATFORMS, WARN, Ctx, Drafter, Options, Result,
)
from compat.checks import suggested_launch as launch_command  # noqa: F401  (the launch doctor prints)
from compat.doctor.diagnose import (  # noqa: F401
    CANNOT_TELL, DEPENDS, DEPENDS_LAYERS, DEPENDS_VENV, DOES_NOT_WORK, NEEDS_CONVERT, SOURCE_UNAVAILABLE, WORKS,
    WORKS_COMMAND_FIXED, WORKS_LINE_FIXED, WORKS_PATCHED, WORKS_PATCHED_CONVERTED,
    classify,
    diagnose, diagnose_range, fix_summary, release_row, release_trees, run_checks,
)
from compat.doctor.inputs import Target, no_drafter, read_drafter, read_target  # noqa: F401
