"""Known issues for this release and target family: the curated list in compat/known_issues.py (what
code cannot tell: upstream bugs with links), shown as warnings."""

from __future__ import annotations

from compat.checks import PASS, WARN, Ctx, Result, check
from compat.known_issues import matching


@check("known-issues", "known issues for this release and target family", order=80)
def known_issues(ctx: Ctx) -> Result:
    issues = matching(ctx.engine, str(ctx.version) if ctx.version else None, ctx.target.names)
    if not issues:
        return Result(PASS, "none recorded", "compat/known_issues.py", evidence={"issues": []})
    detail = "; ".join(f"{i['title']} ({i['link']})" for i in issues)
    return Result(WARN, detail, "compat/known_issues.py", evidence={"issues": issues})
