"""SGLang: Kimi-K2.5 (`KimiK25ForConditionalGeneration`) as an EAGLE-3 target, 0.5.9.

`kimi_k25.py` appears in 0.5.9 without the EAGLE-3 hooks: the runner calls
`set_eagle3_layers_to_capture` on the target and the EAGLE worker calls `get_embed_and_head`
/ `set_embed_and_head` to share the embedding and LM head with the drafter, so a K2.5 target
dies with AttributeError. 0.5.10 added the three methods to the multimodal wrapper, each
delegating to `self.language_model` (a `DeepseekV3ForCausalLM`, which has them all in 0.5.9:
capture since 0.5.4.post2, embed/head in every release). This patch adds exactly those.

The layer ids therefore follow DeepseekV2ForCausalLM's rule of the release (+1 in 0.5.9), and
the default ids come from `text_config.num_hidden_layers`.
"""

from __future__ import annotations

import libcst as cst
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._cst import find_class, find_method, insert_before_method, parse, parse_methods, replace_class

ID = "sglang-kimi-k25-eagle3"
DESCRIPTION = "KimiK25ForConditionalGeneration delegates the EAGLE-3 hooks (capture, embed and head) to its language model"
WHY = (
    "sglang 0.5.10 kimi_k25.py: KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture / get_embed_and_head / "
    "set_embed_and_head, each delegating to self.language_model",
    "research: shared/research/sglang-eagle3.md sections 2.3, 2.4 and 7.1 (0.5.9: the file exists without the hooks)",
)
ENGINE = "sglang"
VERSIONS = SpecifierSet("==0.5.9")
FIXES_ERRORS = ("set_eagle3_layers_to_capture",)  # AttributeError: 'X' object has no attribute ...
TARGET_CLASSES = ("KimiK25ForConditionalGeneration",)
OPTIONS: dict = {}
ORDER = 30

WRAPPER = "KimiK25ForConditionalGeneration"
METHODS = ("set_eagle3_layers_to_capture", "get_embed_and_head", "set_embed_and_head")
MARK = f"# compat patch {ID}"

_DELEGATES = f'''
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


def find_files(tree) -> dict[str, str]:
    for relpath in tree.grep_re(rf"(?m)^class {WRAPPER}\b", under="sglang/srt/models"):
        return {"wrapper": relpath}
    raise FileNotFoundError(f"no module under sglang/srt/models defines {WRAPPER} (kimi_k25.py exists from SGLang 0.5.9)")


def _wrapper(role: str, module: cst.Module) -> cst.ClassDef:
    cls = find_class(module, WRAPPER)
    if cls is None:
        raise FileNotAsExpected(role, f"no top-level class {WRAPPER}")
    if "self.language_model" not in module.code_for_node(cls):
        raise FileNotAsExpected(role, f"{WRAPPER} has no self.language_model to delegate to")
    return cls


def has_fix(role: str, source: str, options) -> bool:
    cls = _wrapper(role, parse(role, source))
    have = [name for name in METHODS if find_method(cls, name) is not None]
    if len(have) in (0, len(METHODS)):
        return bool(have)
    lack = [name for name in METHODS if name not in have]
    raise FileNotAsExpected(role, f"{WRAPPER} has {', '.join(have)} but not {', '.join(lack)}")


def transform(role: str, source: str, options) -> str:
    if has_fix(role, source, options):
        return source
    module = parse(role, source)
    cls = _wrapper(role, module)
    return replace_class(module, cls, insert_before_method(cls, "", parse_methods(_DELEGATES))).code
