"""An assert without a message that failed inside a config's pydantic validation.

pydantic reports it as `Assertion failed, ` with nothing after (an AssertionError without a message has no text),
and shows none of the validator's frames: the traceback ends at the line that built the config. What the text does
say is the model pydantic validated (`1 validation error for SpeculativeConfig`). The release's asserts without a
message in that class's methods are then the candidates: when there is one, it is the site; when there are several,
each is listed with the condition it checks, and none is presented as the site.
"""

from __future__ import annotations

import re

from compat.explain.sites import Site, SiteIndex
from compat.explain.tracebacks import Traceback

_MODEL = re.compile(r"\bvalidation errors? for (\w+)")
_BARE = re.compile(r"Assertion failed,\s*(?:\[type=assertion_error|$)")  # pydantic's words, and no message after them


def bare_assert_candidates(tb: Traceback, index: SiteIndex) -> list[Site]:
    """The asserts without a message of the model pydantic names, when its block reports one failed."""
    if (tb.exception or "").rpartition(".")[2] != "ValidationError":
        return []
    owner = model_of(tb)
    if owner is None or not any(_BARE.match(text.strip()) for text in tb.more):
        return []
    return [s for s in index.sites
            if s.kind == "assert" and not s.template and (s.function or "").partition(".")[0] == owner]


def model_of(tb: Traceback) -> str | None:
    """The model pydantic names in its block's first line (`1 validation error for SpeculativeConfig`)."""
    found = _MODEL.search(tb.message or "")
    return found.group(1) if found else None
