"""plan() as doctor uses it: through the tree (an in-memory overlay, never the disk), patch by patch with the
options each patch asks for; and the options each patch declares, as `compat patch --help` shows them."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from compat.cli import command_parser, main
from compat.patches import all_patches
from compat.patches.vllm import deepseek_eagle3_aux
from compat.patching import APPLY, PRESENT, REFUSED, option_flags, plan
from compat.sources import open_path
from patch_trees import snapshot

CONFIG = "vllm/config/speculative.py"
MODEL = "vllm/model_executor/models/deepseek_v2.py"
ROOT = Path(__file__).resolve().parents[2]


def states(planned) -> dict[str, str]:
    return {p.patch.id: p.state for p in planned}


def test_plan_reads_the_overlay_not_the_disk(mini_vllm):
    tree = open_path(mini_vllm)
    original = tree.read_bytes(CONFIG)
    fixed = original.replace(b'["llama", "qwen"]', b'["llama", "qwen", "kimi_k2", "deepseek_v3", "deepseek_v2"]')
    assert states(plan(tree.overlay({CONFIG: fixed}), select=["vllm-eagle3-whitelist"])) == {"vllm-eagle3-whitelist": PRESENT}
    assert states(plan(tree, select=["vllm-eagle3-whitelist"])) == {"vllm-eagle3-whitelist": APPLY}
    # the disk changes after the tree read it: the plan of the overlay still sees the overlay's bytes
    (mini_vllm / CONFIG).write_text("garbage that no patch could parse (\n")
    item = plan(tree.overlay({CONFIG: original}), select=["vllm-eagle3-whitelist"])[0]
    assert item.state == APPLY and item.edits[0].before == original


def test_doctor_style_one_patch_at_a_time_equals_the_command(mini_vllm, tmp_path, capsys):
    """Each APPLY item's edits build the next overlay; the end result is what `compat patch` writes."""
    tree = open_path(mini_vllm)
    overlay, applied = tree.overlay({}), []
    for patch in all_patches("vllm"):
        options = patch.options_for_target("glm4_moe", "Glm4MoeForCausalLM")
        item = plan(overlay, select=[patch.id], options=options)[0]
        if item.state == APPLY:
            overlay = overlay.overlay({e.relpath: e.after for e in item.edits})
            applied.append((patch.id, option_flags(patch, options)))
    assert applied == [("vllm-eagle3-whitelist", ["--model-type", "glm4_moe"]), ("vllm-deepseek-eagle3-aux", [])]
    before = snapshot(mini_vllm)
    assert main(["patch", "--path", str(mini_vllm), "--model-type", "glm4_moe"]) == 0
    capsys.readouterr()
    for rel in (CONFIG, MODEL):
        assert overlay.read_bytes(rel) == (mini_vllm / rel).read_bytes()
    assert snapshot(mini_vllm) != before


def test_the_compile_check_holds_for_an_overlay_too(mini_vllm, monkeypatch):
    monkeypatch.setattr(deepseek_eagle3_aux, "transform", lambda role, source, options: source + "\ndef broken(:\n")
    item = plan(open_path(mini_vllm).overlay({}), select=["vllm-deepseek-eagle3-aux"])[0]
    assert item.state == REFUSED and "does not compile" in item.reason and "a bug in patch vllm-deepseek-eagle3-aux" in item.reason


def test_plan_takes_option_values_by_dest(mini_vllm):
    item = plan(open_path(mini_vllm), select=["vllm-eagle3-whitelist"], options={"model_types": ["glm4_moe"]})[0]
    assert item.options["model_types"][-1] == "glm4_moe"
    assert b'"deepseek_v2", "glm4_moe"]' in item.edits[0].after


# -- the options in --help --------------------------------------------------------------------------
def test_help_shows_each_patchs_options_in_a_group_named_after_it():
    text = command_parser("patch").format_help()
    group = re.search(r"(?ms)^patch vllm-eagle3-whitelist:\n(.*?)\n\n(.*?)(?:\n\n|\Z)", text)
    assert group and "--model-type TYPE" in group.group(2), text
    which = text[text.index("which patches:"):]
    assert "--model-type" not in which[:which.index("\n\n")]


def _code_without_docstrings(path: Path) -> str:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)  # comments are gone too


def test_the_command_and_patching_do_not_know_any_patch_option():
    for path in [ROOT / "compat/commands/patch.py", *sorted((ROOT / "compat/patching").glob("*.py"))]:
        code = _code_without_docstrings(path).replace("compat patch --engine vllm --select vllm-eagle3-whitelist --model-type", "")
        assert "model_type" not in code and "--model-type" not in code, path


def test_two_patches_may_declare_the_same_option(mini_vllm, monkeypatch, capsys):
    """(An SGLang and a vLLM whitelist both take --model-type.) Parsed once, it reaches both."""
    from compat.patches import Patch
    from compat.patches.vllm import eagle3_whitelist
    from compat.patching import given_options
    from compat.patching import options as patch_options

    twin = Patch.from_module(eagle3_whitelist)
    twin = Patch(**{**twin.__dict__, "id": "sglang-twin-whitelist", "engine": "sglang"})
    monkeypatch.setattr(patch_options, "every_patch", lambda: [*all_patches("vllm"), twin])
    for command in ("patch", "plugin"):  # both take the patches' options from compat/patching/options.py
        parser = command_parser(command)
        assert "(also read by sglang-twin-whitelist)" in parser.format_help()
        assert "patch sglang-twin-whitelist:" not in parser.format_help()  # no empty group
    args = command_parser("patch").parse_args(["--path", str(mini_vllm), "--model-type", "glm4_moe"])
    assert given_options(args) == {"model_types": ["glm4_moe"]}


def test_model_type_is_checked_before_it_can_reach_the_source(mini_vllm, capsys):
    code = main(["patch", "--path", str(mini_vllm), "--model-type", 'x"]; import os', "--json"])
    assert code == 2 and "not a model_type" in json.loads(capsys.readouterr().out)["error"]
