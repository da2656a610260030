"""The check registry: ids are unique and stable, and a failed probe makes a check say "cannot tell"."""

import pytest

from compat.checks import all_checks, check, get_check

EXPECTED = ["launch-arguments", "speculative-backend", "speculative-tree", "draft-attention-backend", "draft-tensor-parallel",
            "draft-dtype", "draft-quantization", "target-whitelist", "target-architecture", "target-interface", "drafter-architecture",
            "method-target", "drafter-tensors", "method-tensors", "drafter-translation", "drafter-config", "vocab-maps", "tokenizer", "method-vocab",
            "layer-ids", "method-layer-ids", "method-block", "aux-inputs", "final-layer", "method-path", "method-name", "method-drafter", "method",
            "method-venv", "known-issues", "launch-command"]


def test_every_check_is_registered_in_its_order():
    assert [c.id for c in all_checks()] == EXPECTED


@pytest.mark.parametrize("check_id", [c for c in EXPECTED if get_check(c).needed_facts("vllm")])
def test_a_failed_probe_gives_a_warning_not_a_guess(ctx, check_id):
    needed = get_check(check_id).needed_facts("vllm")
    broken = {key: {"present": False, "error": f"probe {key} failed: SyntaxError"} for key in needed}
    result = get_check(check_id)(ctx(report_changes=broken))
    assert result.verdict == "warn" and result.detail.startswith("cannot tell: probe") and result.check == check_id


def test_a_second_check_with_the_same_id_is_refused():
    with pytest.raises(RuntimeError, match="two checks claim"):
        check("layer-ids", "again", order=1)(lambda ctx: None)


def test_unknown_fix_kinds_are_refused():
    with pytest.raises(ValueError, match=r"^check x: unknown fix kinds \['prayer'\] \(known: "):
        check("x", "x", order=1, fixes=("prayer",))


def test_every_check_file_has_its_own_offline_test_file():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    modules = {p.stem for p in (root / "checks").glob("*.py") if not p.stem.startswith("_")}
    tests = {p.stem.removeprefix("test_") for p in Path(__file__).parent.glob("test_*.py")}
    assert modules <= tests, sorted(modules - tests)
