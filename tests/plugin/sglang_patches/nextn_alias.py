"""A test-only SGLang patch (registered by tests/plugin while a test runs; compat ships none like it).

`SpeculativeAlgorithm.from_string("NEXTN")` raises "Unknown speculative algorithm name" before
0.5.13, which maps the NEXTN alias to EAGLE (`_RESERVED_ALIASES`). The patch adds that mapping
at the top of `from_string`: a real libcst transform on a real release file, so the plugin's
import hook can be tested on an SGLang tree without an SGLang patch of compat's own.
"""

from __future__ import annotations

import libcst as cst
from packaging.specifiers import SpecifierSet

from compat.patches import FileNotAsExpected
from compat.patches._cst import find_class, find_method, parse, replace_class, statements

ID = "sglang-test-nextn-alias"
DESCRIPTION = "(test only) SpeculativeAlgorithm.from_string accepts NEXTN as EAGLE"
WHY = ("tests/plugin: a patch for the plugin's SGLang import-hook test",)
ENGINE = "sglang"
VERSIONS = SpecifierSet(">=0.5.3,<0.5.13")
OPTIONS: dict = {}
ORDER = 99

CLASS, METHOD = "SpeculativeAlgorithm", "from_string"
MARK = f"# compat patch {ID}"
ALIAS = f'''
{MARK}: the NEXTN alias of EAGLE
if name is not None and name.upper() == "NEXTN":
    name = "EAGLE"
'''


def find_files(tree) -> dict[str, str]:
    for relpath in tree.grep_re(rf"(?m)^class {CLASS}\b", under="sglang/srt/speculative"):
        return {"spec_info": relpath}
    raise FileNotFoundError(f"no module defines {CLASS} under sglang/srt/speculative")


def _method(role: str, source: str):
    module = parse(role, source)
    cls = find_class(module, CLASS)
    method = find_method(cls, METHOD) if cls is not None else None
    if method is None:
        raise FileNotAsExpected(role, f"no {CLASS}.{METHOD}")
    return module, cls, method


def has_fix(role: str, source: str, options) -> bool:
    _method(role, source)
    return '"NEXTN"' in source


def transform(role: str, source: str, options) -> str:
    module, cls, method = _method(role, source)
    if has_fix(role, source, options):
        return source
    new_method = method.with_changes(body=method.body.with_changes(body=[*statements(ALIAS), *method.body.body]))
    new_cls = cls.with_changes(body=cls.body.with_changes(body=[new_method if s is method else s for s in cls.body.body]))
    return replace_class(module, cls, new_cls).code
