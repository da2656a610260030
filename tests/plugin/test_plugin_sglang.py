"""The plugin's import hook on a real SGLang release tree (no SGLang engine runs here).

The released tree (a pinned one), fetched by compat into the user cache, is put on a new venv's path by a `.pth`
(as a checkout would be); the plugin is installed for it with `--path` and a test-only patch
(tests/plugin/sglang_patches/nextn_alias.py: compat ships no SGLang patch on this branch). The
venv's python imports the real `sglang.srt.speculative.spec_info` (the third-party modules
SGLang's package imports on the way are stubbed: only SGLang's own code runs) and gets the
patched behaviour; the release's files are unchanged.
"""

from __future__ import annotations

import json

from compat.cli import main
import plugin_env

VERSION = "0.5.9"
SPEC_INFO = "sglang/srt/speculative/spec_info.py"

STUB_THIRD_PARTY = """
import importlib.abc, importlib.machinery, sys
from unittest import mock

class Stub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # Last on sys.meta_path: only what no other finder has (numpy, torch, ...), never sglang.
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in ("sglang", "compat_plugin_sglang"):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        module = mock.MagicMock(name=spec.name)
        module.__path__, module.__spec__ = [], spec
        return module
    def exec_module(self, module):
        pass

sys.meta_path.append(Stub())
"""

CHECK = STUB_THIRD_PARTY + """
import json
from sglang.srt.speculative import spec_info
try:
    nextn = spec_info.SpeculativeAlgorithm.from_string("nextn").name
except ValueError as err:
    nextn = str(err)
print(json.dumps({"nextn": nextn, "eagle3": spec_info.SpeculativeAlgorithm.from_string("eagle3").name,
                  "file": spec_info.__file__, "mark": getattr(spec_info, "__compat_plugin__", None)}))
"""


def _check(python) -> tuple[dict, str]:
    proc = plugin_env.run_python(python, CHECK)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_import_hook_patches_a_real_sglang_release(tmp_path, capsys, test_sglang_patch, pinned_release):
    root = pinned_release("sglang", VERSION).root
    python = plugin_env.make_venv(tmp_path / "venv")
    site = plugin_env.site_packages(python)
    (site / "sglang-release.pth").write_text(f"{root}\n")
    engine_files = sorted(p.relative_to(root).as_posix() for p in (root / "sglang").rglob("*.py"))
    before = plugin_env.hashes(root, engine_files)

    unpatched, _ = _check(python)
    assert unpatched["nextn"] == "Unknown speculative algorithm name: nextn" and unpatched["mark"] is None
    assert unpatched["file"] == str(root / SPEC_INFO)

    capsys.readouterr()
    code = main(["plugin", "install", "--engine", "sglang", "--python", str(python), "--path", str(root),
                 "--select", test_sglang_patch, "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result
    assert result["engine_version"] == VERSION and list(result["modules"]) == ["sglang.srt.speculative.spec_info"]
    assert result["guard"]["version_file"]["says"] == VERSION
    try:
        patched, log = _check(python)
        assert patched["nextn"] == "EAGLE" and patched["eagle3"] == "EAGLE3"
        assert patched["mark"]["patches"] == [test_sglang_patch]
        assert patched["file"] == str(root / SPEC_INFO)  # the release's file, compiled from the stored source
        assert "compat plugin" not in log

        code = main(["plugin", "status", "--engine", "sglang", "--python", str(python), "--json"])
        status = json.loads(capsys.readouterr().out)
        assert code == 0 and status["live"]["hook_active"] is True
        assert status["modules"]["sglang.srt.speculative.spec_info"]["hash"] == "matches"
    finally:
        assert main(["plugin", "remove", "--engine", "sglang", "--python", str(python)]) == 0
    assert _check(python)[0]["nextn"] == "Unknown speculative algorithm name: nextn"
    assert plugin_env.hashes(root, engine_files) == before
    assert sorted(p.relative_to(root).as_posix() for p in (root / "sglang").rglob("*.py")) == engine_files
    assert not [p for p in site.iterdir() if p.name.startswith("compat_plugin")]
