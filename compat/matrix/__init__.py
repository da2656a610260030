"""`compat matrix`'s engine: every release x target family x drafter kind, doctor's verdict in each cell.

No argparse here (compat/commands/matrix.py is the command line). The parts, in the order data flows:
    templates.py  the columns: target families (their config.json) and drafter kinds (config + sparse safetensors)
    build.py      the rows: doctor's release_trees and release_row (compat.doctor) per release and column,
                  the template cells kept in the facts cache beside each release
    evidence.py   a check's location -> the upstream file and line at the release's tag
    labels.py     the words a cell shows for each verdict
    page.py       matrix.html (assets.py: its inline CSS and JS) and the markdown table
"""

from compat.doctor.diagnose import SOURCE_UNAVAILABLE  # noqa: F401
from compat.matrix.build import USER, build, default_releases  # noqa: F401
from compat.matrix.page import render_html, render_markdown  # noqa: F401
from compat.matrix.templates import DRAFTER_KINDS, FAMILIES, Column, write_templates  # noqa: F401
