"""vllm-eagle3-layer-ids on vLLM's real model runners: the exact code after (a reader where the release
has none, the nested `eagle_config` ids where it reads only the top level), the convention option,
the upstream reading of 0.22.0 recognised, refusals, and the patched readers run on drafter configs."""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from compat.patches import FileNotAsExpected
from compat.patches.vllm import eagle3_layer_ids as patch
from patch_testing import patched_by
from patch_trees import release_source

pytestmark = pytest.mark.network

V1 = "vllm/v1/worker/gpu_model_runner.py"
V2 = "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"
MARK = "# compat patch vllm-eagle3-layer-ids"
OUTPUT_OF = {"nested_ids_convention": "output-of"}
CAPTURE_BEFORE = {"nested_ids_convention": "capture-before"}


def text(version: str, relpath: str = V1) -> str:
    return (release_source("vllm", version) / relpath).read_text()


def nested(indent: str, options=OUTPUT_OF) -> str:
    ids = ("[i + 1 for i in (eagle_config.get(\"eagle_aux_hidden_state_layer_ids\") or [])]"
           if options is OUTPUT_OF else "list((eagle_config.get(\"eagle_aux_hidden_state_layer_ids\") or []))")
    meaning = "output-of ids: + 1 is the layer vLLM captures before" if options is OUTPUT_OF else "capture-before ids: used as written"
    block = f"""if not layer_ids:
    {MARK}: ids nested in eagle_config (the eagle/SpecForge layout), {meaning}
    eagle_config = getattr(hf_config, "eagle_config", None)
    if eagle_config and isinstance(eagle_config, dict):
        layer_ids = {ids}
"""
    return textwrap.indent(block, indent)


assert_patched = patched_by(patch, options=OUTPUT_OF)  # the drafter's convention (output-of ids) unless given


def replace_once(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


# -- the exact code after -------------------------------------------------------------------------
def test_0_11_0_gets_a_reader_and_load_model_asks_it_first():
    before = text("0.11.0")
    reader = f'''    def _get_eagle3_aux_layers_from_config(self):
        """The drafter's aux layer ids, or None for the target's default."""
        {MARK}: this release reads no ids from the drafter's config
        if not (self.speculative_config and self.speculative_config.draft_model_config):
            return None

        hf_config = self.speculative_config.draft_model_config.hf_config
        layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
{nested("        ")}
        if layer_ids and isinstance(layer_ids, (list, tuple)):
            return tuple(layer_ids)

        return None

    def load_model(self, eep_scale_up: bool = False) -> None:
'''
    after = replace_once(before, "    def load_model(self, eep_scale_up: bool = False) -> None:\n", reader)
    after = replace_once(after, """                    self.model.set_aux_hidden_state_layers(
                        self.model.get_eagle3_aux_hidden_state_layers())""", """                    self.model.set_aux_hidden_state_layers(
                        self._get_eagle3_aux_layers_from_config() or self.model.get_eagle3_aux_hidden_state_layers())""")
    assert patch.find_files(_tree("0.11.0")) == {"v1": V1}
    assert_patched("v1", before, after)


TOP_LEVEL_ONLY = """        hf_config = self.speculative_config.draft_model_config.hf_config
        if not hasattr(hf_config, "eagle_aux_hidden_state_layer_ids"):
            return None

        layer_ids = hf_config.eagle_aux_hidden_state_layer_ids
        if layer_ids and isinstance(layer_ids, (list, tuple)):
            return tuple(layer_ids)
"""


@pytest.mark.parametrize("options", [OUTPUT_OF, CAPTURE_BEFORE], ids=["output-of", "capture-before"])
def test_0_16_0_reads_the_top_level_key_with_getattr_then_the_nested_one(options):
    before = text("0.16.0")
    after = replace_once(before, TOP_LEVEL_ONLY, f"""        hf_config = self.speculative_config.draft_model_config.hf_config
        layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
{nested("        ", options)}
        if layer_ids and isinstance(layer_ids, (list, tuple)):
            return tuple(layer_ids)
""")
    assert_patched("v1", before, after, options=options)


def test_0_20_0_keeps_its_dflash_reading_and_adds_the_nested_one_after_it():
    before = text("0.20.0")
    anchor = """                layer_ids = dflash_config.get("target_layer_ids")

        if layer_ids and isinstance(layer_ids, (list, tuple)):
"""
    after = replace_once(before, anchor, f"""                layer_ids = dflash_config.get("target_layer_ids")

{nested("        ")}
        if layer_ids and isinstance(layer_ids, (list, tuple)):
""")
    assert_patched("v1", before, after)


def test_the_v2_runner_of_0_17_0_is_patched_too():
    before = text("0.17.0", V2)
    after = replace_once(before, """    hf_config = spec_config.draft_model_config.hf_config
    if not hasattr(hf_config, "eagle_aux_hidden_state_layer_ids"):
        return None
    layer_ids = hf_config.eagle_aux_hidden_state_layer_ids
    if layer_ids""", f"""    hf_config = spec_config.draft_model_config.hf_config
    layer_ids = getattr(hf_config, "eagle_aux_hidden_state_layer_ids", None)
{nested("    ")}
    if layer_ids""")
    assert patch.find_files(_tree("0.17.0")) == {"v1": V1, "v2": V2}
    assert_patched("v2", before, after)


def _tree(version: str):
    from compat.sources import open_path

    return open_path(release_source("vllm", version))


# -- conventions, upstream, refusals ------------------------------------------------------------------
def test_changing_the_convention_replaces_compat_s_own_reading():
    once = patch.transform("v1", text("0.16.0"), OUTPUT_OF)
    assert not patch.has_fix("v1", once, CAPTURE_BEFORE)
    again = patch.transform("v1", once, CAPTURE_BEFORE)
    assert again == patch.transform("v1", text("0.16.0"), CAPTURE_BEFORE)
    assert again.count(MARK) == 1


def test_0_22_0_reads_nested_ids_as_capture_before_upstream():
    source = text("0.22.0")
    assert patch.has_fix("v1", source, CAPTURE_BEFORE)  # the upstream reading, recognised
    assert not patch.has_fix("v1", source, OUTPUT_OF)
    with pytest.raises(FileNotAsExpected, match="reads eagle_config.eagle_aux_hidden_state_layer_ids already"):
        patch.transform("v1", source, OUTPUT_OF)  # not offered there anyway (VERSIONS); never rewrites upstream code


def test_an_unknown_convention_is_refused():
    with pytest.raises(FileNotAsExpected, match="nested_ids_convention 'input-of'"):
        patch.transform("v1", text("0.16.0"), {"nested_ids_convention": "input-of"})


def test_a_reader_without_the_final_check_is_refused():
    source = text("0.16.0").replace("        if layer_ids and isinstance(layer_ids, (list, tuple)):\n            return tuple(layer_ids)\n",
                                    "        return layer_ids\n")
    with pytest.raises(FileNotAsExpected, match="does not end in"):
        patch.transform("v1", source, OUTPUT_OF)


def test_a_load_model_without_the_default_getter_call_is_refused():
    source = text("0.11.0").replace("self.model.get_eagle3_aux_hidden_state_layers())", "(2, 3, 4))")
    with pytest.raises(FileNotAsExpected, match="has 0 `self.model.get_eagle3_aux_hidden_state_layers"):
        patch.transform("v1", source, OUTPUT_OF)


# -- the patched readers on drafter configs ---------------------------------------------------------
def reader(source: str, name: str):
    tree = ast.parse(source)
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    namespace: dict = {}
    exec(compile("from __future__ import annotations\n" + textwrap.dedent(ast.get_source_segment(source, nodes[0])), name, "exec"), namespace)
    return namespace[name]


CASES = [
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}, OUTPUT_OF, (3, 31, 59)),
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}, CAPTURE_BEFORE, (2, 30, 58)),
    ({"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [9, 9, 9]}}, OUTPUT_OF, (1, 29, 57)),
    ({"eagle_config": {"use_aux_hidden_state": True}}, OUTPUT_OF, None),
    ({}, OUTPUT_OF, None),
]


@pytest.mark.parametrize("version", ["0.10.0", "0.11.0", "0.16.0", "0.20.0"])
@pytest.mark.parametrize("config, options, expected", CASES)
def test_v1_reader_returns_the_layers_vllm_then_captures_before(version, config, options, expected):
    fn = reader(patch.transform("v1", text(version), options), patch.V1_READER)
    runner = SimpleNamespace(speculative_config=SimpleNamespace(draft_model_config=SimpleNamespace(hf_config=SimpleNamespace(**config))))
    assert fn(runner) == expected


@pytest.mark.parametrize("config, options, expected", CASES)
def test_v2_reader_returns_the_same(config, options, expected):
    fn = reader(patch.transform("v2", text("0.19.1", V2), options), patch.V2_READER)
    spec = SimpleNamespace(draft_model_config=SimpleNamespace(hf_config=SimpleNamespace(**config)))
    assert fn(spec) == expected


def test_the_option_is_a_command_line_flag(capsys):
    import argparse

    parser = argparse.ArgumentParser()
    patch.add_args(parser.add_argument_group("patch options"))
    assert parser.parse_args(["--nested-ids-convention", "capture-before"]).nested_ids_convention == "capture-before"
    assert parser.parse_args([]).nested_ids_convention is None
    with pytest.raises(SystemExit, match="^2$"):  # argparse's refusal, its message on stderr
        parser.parse_args(["--nested-ids-convention", "other"])
    assert "argument --nested-ids-convention: invalid choice: 'other'" in capsys.readouterr().err
