"""docs/failure-modes.md: every EAGLE-3 serving failure reported upstream that doctor answers, tested here.

- the table: each row names a registered check with its own offline test, and a test below (or, for a mode a
  check of the launch line answers, that check on branch `launch`); at least 15 modes, both engines;
- each mode, on the thread's shapes: at a release it holds in, doctor's check says so in the words the table
  quotes and the verdict is not "works"; at a release it does not hold in, the check does not say it;
- pairs that work are said to work (no failure on a pair that works);
- the "holds in" column is what the releases say (the check run on every release: tools/failure_modes.py).
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

import pytest

from compat.checks import all_checks
from compat.doctor import WORKS
from doctor_helpers import check
from failure_modes import LAUNCH_MODES, MODES, by_key, check_on, inputs

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "failure-modes.md"
ROW = re.compile(r"^\| *`(?P<key>[a-z0-9-]+)` *\|")
# The checks of the launch line (branch `launch`): the modes only they answer are tested there.
LAUNCH_CHECKS = ("method", "speculative-tree", "draft-attention-backend", "draft-tensor-parallel", "draft-quantization",
                 "draft-dtype", "launch-arguments", "launch-speculative-config")


def table() -> dict[str, dict[str, str]]:
    """key -> the row's cells by column name."""
    lines = DOC.read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| key "))
    names = [c.strip() for c in lines[header].strip("|").split("|")]
    rows = {}
    for line in lines[header + 2:]:
        match = ROW.match(line)
        if not match:
            break
        rows[match.group("key")] = dict(zip(names, (c.strip() for c in line.strip().strip("|").split("|"))))
    return rows


def _check_id(cell: str) -> str:
    found = re.search(r"`([a-z0-9-]+)`", cell)
    assert found, f"no check id in {cell!r}"
    return found.group(1)


def test_every_row_names_a_check_with_its_test_and_every_mode_has_a_row():
    rows, registered = table(), {c.id: c for c in all_checks()}
    assert set(rows) == {m.key for m in MODES} | set(LAUNCH_MODES)
    for mode in MODES:
        row = rows[mode.key]
        assert _check_id(row["check"]) == mode.check and mode.check in registered, mode.key
        module = registered[mode.check].func.__module__.rsplit(".", 1)[-1]
        assert (ROOT / "tests" / "checks" / f"test_{module}.py").is_file(), f"{mode.check} has no offline test"
        assert row["test"] == f"`test_mode[{mode.key}]`", mode.key
        assert mode.says in row["doctor says"], f"{mode.key}: the table does not quote doctor's words {mode.says!r}"
        assert row["thread"] == f"<{mode.thread}>" and set(row["engine"].split(", ")) == set(mode.engines)
    for key in LAUNCH_MODES:
        check_id = _check_id(rows[key]["check"])
        assert check_id in LAUNCH_CHECKS, key
        if check_id in registered and check_id != "method":  # merged: its own offline test is there
            module = registered[check_id].func.__module__.rsplit(".", 1)[-1]
            assert (ROOT / "tests" / "checks" / f"test_{module}.py").is_file()
    assert len(MODES) >= 15 and {e for m in MODES for e in m.engines} == {"vllm", "sglang"}
    assert sum("sglang" in m.engines for m in MODES) >= 5 and sum("vllm" in m.engines for m in MODES) >= 5


def test_tests_are_collected_for_every_mode():
    this = sys.modules[__name__]
    ids = {p.id for p in getattr(this, "test_mode").pytestmark[0].args[1]}
    assert ids == {m.key for m in MODES}


# -- each mode on the thread's shapes, at a release it holds in and one it does not -----------------------------
@pytest.mark.network
@pytest.mark.parametrize("mode", [pytest.param(m, id=m.key) for m in MODES])
def test_mode(mode, tmp_path, release):
    import pinned
    from compat.doctor import diagnose
    from compat.doctor.releases import ReleaseFinder
    from compat.report import build_report

    pair = mode.build(tmp_path)
    tgt, drft = inputs(pair)
    for engine, version in mode.sample.items():
        later = ReleaseFinder(engine, versions=pinned.versions(engine), open_release=functools.partial(release, engine))
        d = diagnose(release(engine, version), tgt, drft, pair.options, releases=later)
        result = check(d, mode.check)
        assert mode.holds(result), f"{engine} {version}: {result['verdict']}: {result['detail']}"
        assert mode.says in result["detail"]
        if result["verdict"] == "fail":
            assert d["verdict"] != WORKS and result["fix"] is not None
    for engine, version in mode.clear.items():
        result = check_on(mode, build_report(release(engine, version)), tgt, drft, pair.options)
        assert result is not None and not mode.holds(result), f"{engine} {version}: {result}"


# -- pairs that work ---------------------------------------------------------------------------------------------
WORKING = [("vllm", "0.32.0"), ("vllm", "0.25.0"), ("sglang", "0.5.23"), ("sglang", "0.5.17")]


@pytest.mark.network
@pytest.mark.parametrize("engine,version", WORKING)
def test_pairs_that_work_are_said_to_work(engine, version, tmp_path, release):
    """A Llama-3.1-8B drafter that records how it was trained (its ids, d2t/t2d, the target's tokenizer), and the
    final-layer drafter of vllm#46788 on a release that captures id n: doctor says they work."""
    from compat.doctor import diagnose
    from failure_modes import Pair, drafter, nested, target, tokenizer_files, top_level

    base = target(tmp_path / "Llama-3.1-8B-Instruct", "llama", "LlamaForCausalLM", 32)
    files = tokenizer_files(1024, {"<|eot_id|>": 1009}, "<|eot_id|>")
    for name, text in files.items():
        (base / name).write_text(text)
    if engine == "vllm":
        pairs = [Pair(base, drafter(tmp_path / "llama-eagle3", top_level([2, 16, 29]), files=files), "capture-before"),
                 by_key("final-layer-deepseek").build(tmp_path / "final")]
        pairs[1].convention = "capture-before"
    else:  # SpecForge's own export for SGLang: output-of ids, which SGLang's +1 reads as the layers trained on
        pairs = [Pair(base, drafter(tmp_path / "llama-eagle3", nested([1, 15, 28]), files=files), "output-of")]
    for pair in pairs:
        tgt, drft = inputs(pair)
        d = diagnose(release(engine, version), tgt, drft, pair.options)
        failing = [(c["check"], c["detail"]) for c in d["checks"] if c["verdict"] == "fail"]
        assert d["verdict"] == WORKS, failing


# -- the "holds in" column -----------------------------------------------------------------------------------
@pytest.mark.network
@pytest.mark.matrix
def test_holds_in_column_is_what_every_release_says():
    import os

    import pinned

    tool = _load_tool()
    up_to = tool.read_up_to(tool.DOC.read_text())
    assert up_to is not None, "docs/failure-modes.md must say which releases its table was computed on"
    computed = tool.computed(offline=os.environ.get("COMPAT_OFFLINE") == "1", up_to=up_to,
                             listed={engine: pinned.versions(engine) for engine in up_to})
    rows = table()
    wrong = {key: (rows[key]["holds in"], where) for key, where in computed.items() if rows[key]["holds in"] != where}
    assert not wrong, f"run python tools/failure_modes.py --write: {wrong}"


def _load_tool():
    import importlib.util

    spec = importlib.util.spec_from_file_location("compat_tool_failure_modes", ROOT / "tools" / "failure_modes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
