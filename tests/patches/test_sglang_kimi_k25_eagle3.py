"""sglang-kimi-k25-eagle3 on SGLang 0.5.9's real kimi_k25.py: the exact code after (0.5.10's three
delegating methods), the fix recognised upstream, refusals, and the delegation run on stubs."""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from compat.patches import FileNotAsExpected
from compat.patches.sglang import kimi_k25_eagle3 as patch
from patch_trees import release_source

pytestmark = pytest.mark.network

RELPATH = "sglang/srt/models/kimi_k25.py"
MARK = "# compat patch sglang-kimi-k25-eagle3"

ADDED = f'''
    def set_eagle3_layers_to_capture(self, layer_ids=None) -> None:
        """Set the layers to capture for EAGLE3 speculative decoding."""
        {MARK}: as 0.5.10 does
        if not hasattr(self.language_model, "set_eagle3_layers_to_capture"):
            raise AttributeError(
                "language_model does not support EAGLE3 speculative decoding."
            )

        self.language_model.set_eagle3_layers_to_capture(layer_ids)

    def get_embed_and_head(self):
        """Get embedding and LM head weights for speculative decoding."""
        {MARK}: as 0.5.10 does
        if not hasattr(self.language_model, "get_embed_and_head"):
            raise AttributeError(
                "language_model does not support get_embed_and_head()."
            )

        return self.language_model.get_embed_and_head()

    def set_embed_and_head(self, embed, head) -> None:
        """Set embedding and LM head weights for speculative decoding."""
        {MARK}: as 0.5.10 does
        if not hasattr(self.language_model, "set_embed_and_head"):
            raise AttributeError(
                "language_model does not support set_embed_and_head()."
            )

        self.language_model.set_embed_and_head(embed, head)
'''


def release_text(version: str) -> str:
    return (release_source("sglang", version) / RELPATH).read_text()


def test_0_5_9_wrapper_gains_the_three_delegating_methods_at_the_end_of_the_class():
    before = release_text("0.5.9")
    anchor = "            self.language_model.load_weights(language_weights)\n"
    assert before.count(anchor) == 1
    after = before.replace(anchor, anchor + ADDED)
    assert not patch.has_fix("wrapper", before, {})
    out = patch.transform("wrapper", before, {})
    assert out == after
    compile(out, RELPATH, "exec")
    assert patch.has_fix("wrapper", out, {})
    assert patch.transform("wrapper", out, {}) == out


@pytest.mark.parametrize("version", ["0.5.10", "0.5.11", "0.5.23"])
def test_upstream_methods_are_recognised(version):
    assert patch.has_fix("wrapper", release_text(version), {})


def test_a_wrapper_with_some_of_the_methods_is_refused():
    half = release_text("0.5.9").replace(
        "    def load_weights(self, weights", "    def get_embed_and_head(self):\n        return None\n\n    def load_weights(self, weights", 1)
    with pytest.raises(FileNotAsExpected, match="has get_embed_and_head but not set_eagle3_layers_to_capture, set_embed_and_head"):
        patch.has_fix("wrapper", half, {})


def test_a_wrapper_without_a_language_model_is_refused():
    with pytest.raises(FileNotAsExpected, match="no self.language_model"):
        patch.transform("wrapper", "class KimiK25ForConditionalGeneration:\n    def __init__(self):\n        self.lm = 1\n", {})


def methods(source: str) -> dict:
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == patch.WRAPPER)
    out = {}
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in patch.METHODS:
            namespace: dict = {}
            exec(compile(textwrap.dedent(ast.get_source_segment(source, fn)), fn.name, "exec"), namespace)
            out[fn.name] = namespace[fn.name]
    return out


def test_the_methods_reach_the_language_model():
    added = methods(patch.transform("wrapper", release_text("0.5.9"), {}))
    seen = []
    language_model = SimpleNamespace(
        set_eagle3_layers_to_capture=lambda ids: seen.append(("capture", ids)),
        get_embed_and_head=lambda: ("embed", "head"),
        set_embed_and_head=lambda e, h: seen.append(("shared", e, h)),
    )
    wrapper = SimpleNamespace(language_model=language_model)
    added["set_eagle3_layers_to_capture"](wrapper, [1, 29, 57])
    added["set_eagle3_layers_to_capture"](wrapper)
    assert added["get_embed_and_head"](wrapper) == ("embed", "head")
    added["set_embed_and_head"](wrapper, "e", "h")
    assert seen == [("capture", [1, 29, 57]), ("capture", None), ("shared", "e", "h")]
    with pytest.raises(AttributeError, match="does not support EAGLE3"):
        added["set_eagle3_layers_to_capture"](SimpleNamespace(language_model=object()), None)
