"""Known issues for this release and target family: the curated list in compat/known_issues.py (what
code cannot tell: upstream bugs with links), shown as warnings."""

from __future__ import annotations

from compat.checks import check
from compat.doctor.context import PASS, WARN, result
from compat.known_issues import matching


@check("known-issues", "known issues for this release and target family", order=80)
def known_issues(ctx) -> dict:
    issues = matching(ctx.engine, str(ctx.version) if ctx.version else None, ctx.target.names)
    if not issues:
        return result(PASS, "none recorded", "compat/known_issues.py", issues=[])
    detail = "; ".join(f"{i['title']} ({i['link']})" for i in issues)
    return result(WARN, detail, "compat/known_issues.py", issues=issues)
