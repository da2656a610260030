"""vLLM: Kimi-K2.5 (`KimiK25ForConditionalGeneration`) as an EAGLE-3 target, 0.15.0-0.17.1.

`kimi_k25.py` appears in 0.15.0 without the EAGLE-3 interface; 0.18.0 added it. A K2.5 target
is blocked three ways before that (research note section 7.3): the whitelist (patch
vllm-eagle3-whitelist: the text config's `kimi_k2`/`deepseek_v3`), the missing interface on
the multimodal wrapper, and `EagleProposer.load_model`, which reads
`target_model.config.image_token_index` for every multimodal target; K2.5 has
`media_placeholder_token_id` instead (0.18.0 added exactly that branch).

- `kimi_k25.py`: `SupportsEagle3` in the bases of `KimiK25ForConditionalGeneration`, and the
  setter/getter forwarded to the DeepSeek decoder inside: `self.language_model` is a
  `DeepseekV2Model` in 0.15.x and a `DeepseekV2ForCausalLM` (whose `.model` is one) from 0.16.0,
  so the decoder is `getattr(self.language_model, "model", self.language_model)`. The capture
  itself is vllm-deepseek-eagle3-aux's, hence REQUIRES.
- `vllm/v1/spec_decode/eagle.py`: an `elif` for `KimiK25ForConditionalGeneration` before the
  generic `image_token_index` fallback.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from packaging.specifiers import SpecifierSet

from .. import FileNotAsExpected
from .._cst import (
    add_base, add_import_or_refuse, base_names, find_method, insert_before_method, parse, parse_methods, replace_class,
    require_class,
)

ID = "vllm-kimi-k25-eagle3"
DESCRIPTION = "KimiK25ForConditionalGeneration forwards the EAGLE-3 interface to its text model; the proposer finds its image token"
WHY = (
    "https://github.com/vllm-project/vllm/issues/36777 (Kimi K2.5 speculative decoding)",
    "https://github.com/vllm-project/vllm/pull/36361 (Kimi-K2.5 MLA EAGLE-3, merged; in 0.18.0 with SupportsEagle3 on KimiK25ForConditionalGeneration)",
    "research: shared/research/vllm-eagle3.md sections 3.4 and 7.3 (0.15.0-0.17.1: three K2.5 gaps)",
)
ENGINE = "vllm"
VERSIONS = SpecifierSet(">=0.15.0,<=0.17.1")
FIXES_ERRORS = ("Model does not support EAGLE3 interface",)  # the V1 runner, at model load
TARGET_CLASSES = ("KimiK25ForConditionalGeneration",)
OPTIONS: dict = {}
REQUIRES = ("vllm-deepseek-eagle3-aux",)
ORDER = 30

WRAPPER = "KimiK25ForConditionalGeneration"
INTERFACE = "SupportsEagle3"
SETTER = "set_aux_hidden_state_layers"
MARK = f"# compat patch {ID}"

_METHODS = f"""
def {SETTER}(self, layers: tuple[int, ...]) -> None:
    {MARK}: the DeepSeek decoder inside records the aux hidden states.
    decoder = getattr(self.language_model, "model", self.language_model)
    decoder.aux_hidden_state_layers = layers

def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
    {MARK}: the default ids every EAGLE-3 target uses.
    decoder = getattr(self.language_model, "model", self.language_model)
    num_layers = len(decoder.layers)
    return (2, num_layers // 2, num_layers - 3)
"""

_BRANCH = f"""
if self.get_model_name(target_model) == "{WRAPPER}":
    {MARK}: Kimi-K2.5 names its image token media_placeholder_token_id
    self.model.config.image_token_index = (
        target_model.config.media_placeholder_token_id
    )
"""


def find_files(tree) -> dict[str, str]:
    found = {}
    for relpath in tree.grep_re(rf"(?m)^class {WRAPPER}\b", under="vllm"):
        found["wrapper"] = relpath
        break
    for relpath in tree.grep("target_model.config.image_token_index", under="vllm/v1"):
        found["proposer"] = relpath
        break
    if "wrapper" not in found:
        raise FileNotFoundError(f"no module defines {WRAPPER} (kimi_k25.py exists from vLLM 0.15.0)")
    if "proposer" not in found:
        raise FileNotFoundError("no EAGLE proposer reading target_model.config.image_token_index under vllm/v1")
    return found


# -- kimi_k25.py -------------------------------------------------------------------------------
def _wrapper_has_fix(role: str, source: str) -> bool:
    cls = require_class(role, parse(role, source), WRAPPER)
    facts = {"interface": INTERFACE in base_names(cls), "setter": find_method(cls, SETTER) is not None}
    if all(facts.values()) or not any(facts.values()):
        return all(facts.values())
    raise FileNotAsExpected(role, f"{WRAPPER} has part of the EAGLE-3 interface: {facts}")


def _patch_wrapper(role: str, source: str) -> str:
    module = parse(role, source)
    cls = require_class(role, module, WRAPPER)
    new = insert_before_method(add_base(cls, INTERFACE), "load_weights", parse_methods(_METHODS))
    module = replace_class(module, cls, new)
    return add_import_or_refuse(role, module, ("models.interfaces", ".interfaces"), INTERFACE).code


# -- the EAGLE proposer ------------------------------------------------------------------------
_FALLBACK = m.Assign(
    targets=[m.AssignTarget(m.Attribute(value=m.Attribute(m.Attribute(m.Name("self"), m.Name("model")), m.Name("config")), attr=m.Name("image_token_index")))],
    value=m.Attribute(value=m.Attribute(m.Name("target_model"), m.Name("config")), attr=m.Name("image_token_index")),
)


class _AddBranch(cst.CSTTransformer):
    """`if ...: ... elif ...: ... else: <fallback>` -> the same with `elif <K2.5>:` before the else."""

    def __init__(self):
        self.added = 0

    def leave_If(self, original: cst.If, updated: cst.If) -> cst.If:
        orelse = updated.orelse
        if not isinstance(orelse, cst.Else) or not _is_fallback(orelse.body):
            return updated
        self.added += 1
        template = cst.parse_module(_BRANCH.strip() + "\n").body[0]
        assert isinstance(template, cst.If)
        branch = cst.If(test=template.test, body=template.body, orelse=orelse)
        return updated.with_changes(orelse=branch)


def _is_fallback(body: cst.BaseSuite) -> bool:
    stmts = getattr(body, "body", [])
    return (
        len(stmts) == 1 and isinstance(stmts[0], cst.SimpleStatementLine) and len(stmts[0].body) == 1
        and m.matches(stmts[0].body[0], _FALLBACK)
    )


def _patch_proposer(role: str, source: str) -> str:
    module = parse(role, source)
    adder = _AddBranch()
    module = module.visit(adder)
    if adder.added != 1:
        raise FileNotAsExpected(
            role, f"expected one `else: self.model.config.image_token_index = target_model.config.image_token_index`, found {adder.added}",
        )
    return module.code


def has_fix(role: str, source: str, options) -> bool:
    if role == "wrapper":
        return _wrapper_has_fix(role, source)
    return f'"{WRAPPER}"' in source or f"'{WRAPPER}'" in source


def transform(role: str, source: str, options) -> str:
    if has_fix(role, source, options):
        return source
    return _patch_wrapper(role, source) if role == "wrapper" else _patch_proposer(role, source)
