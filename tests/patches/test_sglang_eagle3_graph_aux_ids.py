"""sglang-eagle3-graph-aux-ids on SGLang's real model_runner.py and cuda_graph_runner.py: the exact code
after (the drafter's ids applied before the graphs, the no-argument resets gone), the order of the
calls read back from the patched files, the fix of 0.5.11 recognised, and refusals."""

from __future__ import annotations

import ast

import pytest

from compat.patches import FileNotAsExpected
from compat.patches.sglang import eagle3_graph_aux_ids as patch
from patch_testing import patched_by
from patch_trees import release_source

pytestmark = pytest.mark.network

RUNNER = "sglang/srt/model_executor/model_runner.py"
GRAPHS = "sglang/srt/model_executor/cuda_graph_runner.py"
MARK = "# compat patch sglang-eagle3-graph-aux-ids"


def text(version: str, relpath: str) -> str:
    return (release_source("sglang", version) / relpath).read_text()


assert_patched = patched_by(patch, options={})


def move(source: str, block: str, before: str, note: str) -> str:
    """`block` (with its leading blank line) cut from where it is and put right before `before`."""
    assert source.count(block) == 1 and source.count(before) == 1
    source = source.replace(block, "")
    first, rest = block.lstrip("\n").split("\n", 1) if block.lstrip("\n").startswith("        #") else ("", block.lstrip("\n"))
    at = source.index(before)
    lead = "" if source[:at].endswith("\n\n") else "\n"  # one blank line before the moved block, one after
    moved = lead + (first + "\n" if first else "") + note + "\n" + rest + "\n"
    return source[:at] + moved + source[at:]


BLOCK_0_5_10 = """
        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture(
                self.eagle_aux_hidden_state_layer_ids
            )
"""
NOTE = f"        {MARK}: applied before the graphs are built, so they capture the drafter's ids (as 0.5.11)"


def test_0_5_10_runner_applies_the_ids_before_the_graphs_and_the_warm_up_no_longer_resets_them():
    before = text("0.5.10", RUNNER)
    after = move(before, BLOCK_0_5_10, '        if self.device == "cuda" or self.device == "musa":\n', NOTE)
    reset = """        if self.eagle_use_aux_hidden_state:
            self.model.set_eagle3_layers_to_capture()
"""
    assert after.count(reset) == 1
    after = after.replace(reset, f"        {MARK}: initialize() applied the drafter's ids already\n")
    assert_patched("runner", before, after)


def test_0_5_10_graph_runner_no_longer_resets_the_ids():
    before = text("0.5.10", GRAPHS)
    reset = """        if (
            model_runner.spec_algorithm.is_eagle3()
            and model_runner.eagle_use_aux_hidden_state
        ):
            self.model_runner.model.set_eagle3_layers_to_capture()
"""
    assert before.count(reset) == 1
    after = before.replace(reset, f"        {MARK}: ModelRunner.initialize applied the drafter's ids before the graphs\n")
    assert_patched("graph_runner", before, after)


def test_0_4_9_runner_moves_the_whole_draft_config_block():
    before = text("0.4.9", RUNNER)
    start = before.index("        # auxiliary hidden capture mode. TODO: expose this to server args?\n")
    end = before.index("            self.model.set_eagle3_layers_to_capture(eagle_aux_hidden_state_layer_ids)\n")
    end = before.index("\n", end) + 1
    block = "\n" + before[start:end]
    after = move(before, block, '        if self.device == "cuda":\n            self.init_cublas()\n', NOTE)
    assert_patched("runner", before, after)


def order_of_calls(source: str) -> list[str]:
    """In ModelRunner.initialize: the hook calls with ids, and the graph builders, in the order they run."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelRunner")
    init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "initialize")
    out = []
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == patch.HOOK and node.args:
                out.append((node.lineno, "ids"))
            elif node.func.attr in patch.GRAPH_BUILDERS:
                out.append((node.lineno, "graphs"))
    return [what for _, what in sorted(out)]


def resets(source: str, cls_name: str) -> int:
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    return sum(1 for n in ast.walk(cls) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == patch.HOOK and not n.args)


@pytest.mark.parametrize("version", ["0.4.9", "0.4.10.post2", "0.5.3", "0.5.6", "0.5.7", "0.5.8", "0.5.10.post1"])
def test_after_the_patch_the_ids_are_set_before_any_graph_and_nothing_resets_them(version):
    runner, graphs = text(version, RUNNER), text(version, GRAPHS)
    assert order_of_calls(runner)[0] == "graphs" and resets(graphs, "CudaGraphRunner") == 1  # the quirk, as released
    runner, graphs = patch.transform("runner", runner, {}), patch.transform("graph_runner", graphs, {})
    assert order_of_calls(runner)[0] == "ids" and "graphs" in order_of_calls(runner)
    assert resets(runner, "ModelRunner") == 0 and resets(graphs, "CudaGraphRunner") == 0


def test_the_fix_of_0_5_11_is_recognised():
    assert patch.has_fix("runner", text("0.5.11", RUNNER), {})
    assert patch.has_fix("graph_runner", text("0.5.11", GRAPHS), {})


def test_ids_applied_early_but_still_reset_by_the_warm_up_is_refused():
    runner = patch.transform("runner", text("0.5.10", RUNNER), {})
    half = runner.replace(f"        {MARK}: initialize() applied the drafter's ids already\n",
                          "        if self.eagle_use_aux_hidden_state:\n            self.model.set_eagle3_layers_to_capture()\n")
    with pytest.raises(FileNotAsExpected, match="_dummy_run still resets them"):
        patch.has_fix("runner", half, {})


def test_an_initialize_without_the_ids_is_refused():
    # 0.4.8 reads no drafter ids: there is nothing to move
    with pytest.raises(FileNotAsExpected, match="0 applying the drafter's ids"):
        patch.transform("runner", text("0.4.8", RUNNER), {})


def test_a_reset_that_is_the_last_statement_of_its_block_leaves_a_pass():
    source = (
        "class CudaGraphRunner:\n    def __init__(self, model_runner):\n        if model_runner.spec_algorithm.is_eagle3():\n"
        "            if True:\n                self.model_runner.model.set_eagle3_layers_to_capture()\n"
    )
    out = patch.transform("graph_runner", source, {})
    assert out == (
        "class CudaGraphRunner:\n    def __init__(self, model_runner):\n        if model_runner.spec_algorithm.is_eagle3():\n"
        f"            {MARK}: ModelRunner.initialize applied the drafter's ids before the graphs\n            pass\n"
    )
    compile(out, "g", "exec")
