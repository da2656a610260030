"""The drafter sections of `compat probe`, rendered for people: a block per drafter class, one line
per load step and per module, the fc width rule as a small table."""

import io

from rich.console import Console

from compat.report import build_report, render
from probe_trees import write_tree
from test_vllm_drafter_loader import NEW_FOO, REGISTRY, UTILS, UTILS_SRC, _registry


def test_drafter_sections_render_one_block_per_class(tmp_path):
    tree = write_tree(tmp_path, "vllm", {
        REGISTRY: _registry({"Eagle3FooForCausalLM": ("vllm.models.foo_eagle3", "FooDrafter")}),
        "vllm/models/foo_eagle3.py": NEW_FOO, UTILS: UTILS_SRC,
    }, strip_first_newline=True)
    report = build_report(tree)
    assert report["probe_errors"] == []
    out = io.StringIO()
    render(report, Console(file=out, width=160))
    lines = out.getvalue().splitlines()
    assert "FooDrafter:" in lines  # the class heads its block
    steps = [ln for ln in lines if ln.startswith(("skip  ", "rename  ", "prefix  ", "consume  "))]
    assert any(ln.startswith("skip  match: contains=t2d  stage: drafter") for ln in steps)
    assert any(ln.startswith("prefix  stage: drafter  prefix: model.  mode: always") for ln in steps)
    assert any(ln.startswith("model.fc  kind: module") for ln in lines)
    aux = lines.index("aux_count:")
    assert lines[aux + 1].split() == ["key", "where", "use", "default"]  # a table, not one long line
    assert "(drafter_architecture_rename)" in out.getvalue() and "(method_autodetection)" in out.getvalue()
