"""compat/core/identity_memo.py: a value is handed back only for the very object it was made from."""

from __future__ import annotations

from compat.core.identity_memo import IdentityMemo


class Report(dict):
    pass


def test_an_equal_object_or_a_reused_id_gets_its_own_value():
    memo: IdentityMemo[Report, str] = IdentityMemo(keep=2)
    made: list[str] = []

    def make(report: Report) -> str:
        made.append(report["engine"])
        return report["engine"]

    first = Report(engine="vllm")
    assert memo.get(first, make) == "vllm" and memo.get(first, make) == "vllm" and made == ["vllm"]
    assert memo.get(Report(engine="vllm"), make) == "vllm" and made == ["vllm", "vllm"]  # equal, not the same: made
    assert memo.get(Report(engine="sglang"), make) == "sglang"
    assert memo.get(first, make) == "vllm" and made == ["vllm", "vllm", "sglang", "vllm"]  # kept only the last 2
