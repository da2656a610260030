"""The patches' catalog (patches/__init__.py `catalog`): what a warm doctor needs of the patches (their fields, their
options' spellings, what options_for_target answers) read from the facts cache, so libcst is not imported; each answer
is the one the imported patches give, and a catalog patch's code is imported when first used (issue 42)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_RUN = """
import json, sys
from compat.patches import catalog
from compat.patching import option_flags
targets = [("mimo_v9", "MimoV9ForCausalLM"), ("glm4_moe", "Glm4MoeForCausalLM"), (None, None)]
out = {}
for engine in ("vllm", "sglang"):
    patches = catalog(engine)
    out[engine] = [{"id": p.id, "versions": str(p.versions), "options": repr(p.options), "requires": p.requires,
                    "order": p.order, "why": p.why, "fixes_errors": p.fixes_errors, "target_classes": p.target_classes,
                    "description": p.description, "spellings": repr(p.option_spellings()),
                    "for_targets": [repr(p.options_for_target(*t)) for t in targets],
                    "flags": [option_flags(p, p.options_for_target(*t)) for t in targets]} for p in patches]
out["libcst"] = "libcst" in sys.modules
if sys.argv[1] == "use":
    patch = catalog("vllm")[0]
    out["module"] = patch.module.__name__
    out["has_fix"] = callable(patch.module.has_fix)
    out["libcst_after_use"] = "libcst" in sys.modules
print(json.dumps(out))
"""


def run(mode: str, env: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", _RUN, mode], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


@pytest.fixture
def env(tmp_path) -> dict:
    return {**os.environ, "COMPAT_FACTS_DIR": str(tmp_path / "facts")}


def test_the_catalog_says_what_the_imported_patches_say_without_importing_them(env):
    first = run("read", env)  # the catalog is made: the patches are imported
    warm = run("read", env)  # read from the facts cache
    assert first["libcst"] is True and warm["libcst"] is False
    assert {k: v for k, v in warm.items() if k != "libcst"} == {k: v for k, v in first.items() if k != "libcst"}
    whitelist = next(p for p in warm["vllm"] if p["id"] == "vllm-eagle3-whitelist")
    assert "mimo_v9" in whitelist["flags"][0] and whitelist["flags"][2] == []  # a target's options, spelled


def test_a_catalog_patch_imports_its_code_when_it_is_used(env):
    run("read", env)
    used = run("use", env)
    assert used["libcst"] is False and used["has_fix"] is True and used["libcst_after_use"] is True
    assert used["module"].startswith("compat.patches.vllm.")


def test_a_catalog_patch_is_equal_to_the_imported_one():
    from compat.patches import all_patches, catalog

    assert catalog("vllm") == all_patches("vllm") and catalog("sglang") == all_patches("sglang")
