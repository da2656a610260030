"""vLLM's config-time whitelist of EAGLE-3 target model_types (renamed in 0.17.0, gone in 0.22.0).

vLLM tests `hf_text_config.model_type` against the list by substring and refuses the start-up with
"Eagle3 is only supported for [...] models". SGLang has no such list. The reading is _whitelist.py's
(target-interface asks it too).
"""

from __future__ import annotations

from compat.checks import FAIL, PASS, Ctx, Result, check
from compat.checks._whitelist import whitelist_answer


@check("target-whitelist", "target model_type is on the release's EAGLE-3 whitelist", order=10,
       needs=("target whitelist",), fixes=("patch", "release"), methods=("eagle3", "peagle"))
def target_whitelist(ctx: Ctx) -> Result:
    answer = whitelist_answer(ctx)
    return Result(PASS if answer.admits else FAIL, answer.detail, answer.location)
