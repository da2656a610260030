"""The findings in the order a reader needs them: what the engine died of first, warnings last.

The failure is the first traceback of an error the log shows: when one process fails, the others report it after
it, each in its own words (vLLM's engine core: "WorkerProc initialization failed ... See stack trace for root cause";
its API server: "Engine core initialization failed. See root cause above"). A later traceback with no cause of its
own is said to follow from the failure. A warning is something the engine logged and went on after: one compat has
no cause for is said to be harmless there, and not what stopped the engine.
"""

from __future__ import annotations

from compat.explain.causes import ERROR, UNRELATED, WARNING
from compat.fix import NoFix

ACCEPTANCE = "acceptance"
_ORDER = {ERROR: 0, UNRELATED: 1, ACCEPTANCE: 2, WARNING: 3}


def rank(findings: list[dict]) -> list[dict]:
    """The findings ordered (the failure first, then other errors, unrelated failures, acceptance, warnings), each
    with its `role`: "failure", "after the failure", "error", "unrelated", "acceptance" or "warning"."""
    ordered = sorted(findings, key=lambda f: (_ORDER.get(f["kind"], 9), not f.get("traceback"), f["line"]))
    failure = next((f for f in ordered if f["kind"] == ERROR), None)
    number = ordered.index(failure) + 1 if failure is not None else 0
    for finding in ordered:
        finding["role"] = finding["kind"]
        if finding is failure:
            finding["role"] = "failure"
        elif failure is not None and finding["kind"] == ERROR and finding.get("traceback") \
                and finding["line"] > failure["line"]:
            finding["role"] = "after the failure"
            if finding.get("cause_id") is None:
                finding["cause"] = (f"raised after the failure (finding {number}, line {failure['line']})"
                                    + (f", in {finding['process']}" if finding.get("process") else "")
                                    + ": how the failure reached this process, not a cause of its own")
                finding["fix"] = NoFix(f"the fix of finding {number}").to_json()
        elif finding["kind"] == WARNING and finding.get("cause_id") is None:
            finding["harmless"] = True
            stopped = f"; the engine stopped on finding {number}" if failure is not None else ""
            finding["cause"] = f"harmless here: a warning the engine logged and went on after{stopped}. {finding['cause']}"
    return ordered
