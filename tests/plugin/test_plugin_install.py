"""`compat plugin install|status|remove` on a real venv holding a tiny fake vLLM (no engine runs).

The patch is the real vllm-cpu-attn-block16; the engine's module is imported by the venv's own
python in a subprocess, so what is tested is what an engine process sees: the patched behaviour,
the engine's own file name in tracebacks and inspect, files on disk untouched, a changed file or
another release left alone with one log line, a broken plugin never breaking the import, and
nothing left behind by `remove` or `pip uninstall`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from compat.cli import main
from plugin_env import CPU_ATTN, CPU_ATTN_MODULE, FAKE_VLLM, hashes, listing, run_python

BLOCK16 = "vllm-cpu-attn-block16"
ENGINE_FILES = [*FAKE_VLLM, "vllm/_version.py"]

SHOW = f"""
import json, sys
import {CPU_ATTN_MODULE} as m
print(json.dumps({{"sizes": repr(m.CPUAttentionBackend.get_supported_kernel_block_sizes()),
                  "mark": getattr(m, "__compat_plugin__", None), "file": m.__file__}}))
"""
PATCHED, ORIGINAL = "[16, MultipleOf(32)]", "[MultipleOf(32)]"


def compat(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def install(capsys, python, *extra: str) -> tuple[int, dict]:
    return compat(capsys, "plugin", "install", "--engine", "vllm", "--python", str(python), *extra)


def show(python, env: dict | None = None) -> tuple[dict, list[str]]:
    proc = run_python(python, SHOW, env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), [line for line in proc.stderr.splitlines() if line.strip()]


def test_install_patches_in_memory_and_changes_no_engine_file(fake_venv, capsys):
    python, site = fake_venv
    before_files, before_hashes = listing(site), hashes(site, ENGINE_FILES)
    assert show(python)[0]["sizes"] == ORIGINAL

    code, result = install(capsys, python, "--select", BLOCK16)
    assert code == 0, result
    assert result["schema"] == "compat.plugin/1" and [p["id"] for p in result["patches"]] == [BLOCK16]
    assert list(result["modules"]) == [CPU_ATTN_MODULE] and result["notes"] == []
    added = listing(site) - before_files
    assert added and all(f.startswith("compat_plugin_vllm") for f in added), added
    assert before_files <= listing(site)

    seen, log = show(python)
    assert seen["sizes"] == PATCHED and seen["mark"]["patches"] == [BLOCK16]
    assert seen["file"] == str(site / CPU_ATTN)  # the module is the engine's file, not a copy
    assert log == [], log  # a patched module is silent unless COMPAT_PLUGIN_VERBOSE is set
    assert hashes(site, ENGINE_FILES) == before_hashes

    _, verbose = show(python, {"COMPAT_PLUGIN_VERBOSE": "1"})
    assert len(verbose) == 1 and CPU_ATTN_MODULE in verbose[0] and "patched in memory" in verbose[0], verbose
    assert show(python, {"COMPAT_PLUGIN_DISABLE": "1"})[0]["sizes"] == ORIGINAL


def test_tracebacks_and_inspect_point_at_the_engine_file(fake_venv, capsys):
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    proc = run_python(python, f"""
        import inspect, json, traceback
        import {CPU_ATTN_MODULE} as m
        try:
            m.fail()
        except RuntimeError:
            frame = traceback.extract_tb(__import__("sys").exc_info()[2])[-1]
        print(json.dumps({{"file": frame.filename, "line": frame.line, "lineno": frame.lineno,
                          "source": inspect.getsource(m.CPUAttentionBackend), "where": inspect.getsourcefile(m.fail)}}))
    """)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["file"] == seen["where"] == str(site / CPU_ATTN)
    assert seen["line"] == 'raise RuntimeError("raised from the engine\'s file")'
    assert f"# compat patch {BLOCK16}" in seen["source"] and "return [16, MultipleOf(32)]" in seen["source"]
    original_line = (site / CPU_ATTN).read_text().splitlines().index('    raise RuntimeError("raised from the engine\'s file")') + 1
    assert seen["lineno"] == original_line + 1  # the patched text has one more line (the comment) above it


def test_no_bytecode_of_the_patched_source_is_written(fake_venv, capsys):
    """A pyc beside the original would serve the patched code to a process without the plugin."""
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    assert show(python, {"PYTHONDONTWRITEBYTECODE": ""})[0]["sizes"] == PATCHED  # bytecode writing on
    cache = (site / CPU_ATTN).parent / "__pycache__"
    assert not list(cache.glob("cpu_attn.*.pyc"))
    assert show(python, {"PYTHONDONTWRITEBYTECODE": "", "COMPAT_PLUGIN_DISABLE": "1"})[0]["sizes"] == ORIGINAL
    assert show(python, {"PYTHONDONTWRITEBYTECODE": ""})[0]["sizes"] == PATCHED  # the original's pyc does not shadow it


def test_a_changed_file_is_left_alone_with_one_log_line(fake_venv, capsys):
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    with (site / CPU_ATTN).open("a") as fh:
        fh.write("# a hand edit\n")
    proc = run_python(python, f"""
        import importlib, sys
        import {CPU_ATTN_MODULE} as m
        print(m.CPUAttentionBackend.get_supported_kernel_block_sizes())
        del sys.modules["{CPU_ATTN_MODULE}"]
        import {CPU_ATTN_MODULE} as m
        importlib.reload(m)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ORIGINAL
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines  # once per module, though imported three times
    assert CPU_ATTN_MODULE in lines[0] and "left alone" in lines[0] and CPU_ATTN in lines[0], lines

    code, status = compat(capsys, "plugin", "status", "--engine", "vllm", "--python", str(python))
    assert code == 0 and status["modules"][CPU_ATTN_MODULE]["hash"] == "changed"
    assert status["live"]["modules"][CPU_ATTN_MODULE]["patch"] is False


def test_another_release_is_left_alone(fake_venv, capsys):
    """Same module bytes, other release (the version file changed): the plugin was not built for it."""
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    (site / "vllm/_version.py").write_text("__version__ = version = '0.34.0'\n")
    seen, log = show(python)
    assert seen["sizes"] == ORIGINAL
    assert len(log) == 1 and "vllm/_version.py changed" in log[0] and "0.30.0" in log[0], log


def test_a_file_already_patched_on_disk_is_not_patched_twice(fake_venv, capsys):
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    assert main(["patch", "--engine", "vllm", "--python", str(python), "--select", BLOCK16]) == 0
    seen, log = show(python)
    assert seen["sizes"] == PATCHED and seen["mark"] is None  # the file's own patch, not the plugin's
    assert len(log) == 1 and "already patched on disk" in log[0], log
    assert main(["patch", "--engine", "vllm", "--python", str(python), "--revert"]) == 0


DAMAGES = ["garbage", "truncated", "wrong-format", "tampered-source", "missing", "broken-runtime", "missing-runtime",
           "exiting-runtime", "hook-raises", "data-not-an-object"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_broken_plugin_never_breaks_the_import(fake_venv, capsys, damage):
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    data_file = site / "compat_plugin_vllm/plugin.json"
    text = data_file.read_text()
    if damage == "garbage":
        data_file.write_bytes(b"\xff\x00 not json")
    elif damage == "truncated":
        data_file.write_text(text[: len(text) // 2])
    elif damage == "wrong-format":
        data_file.write_text(json.dumps({**json.loads(text), "format": 99}))
    elif damage == "tampered-source":
        data = json.loads(text)
        data["modules"][CPU_ATTN_MODULE]["source"] += "\nimport os; os._exit(3)\n"
        data_file.write_text(json.dumps(data))
    elif damage == "missing":
        data_file.unlink()
    elif damage == "broken-runtime":
        (site / "compat_plugin_vllm/__init__.py").write_text("raise RuntimeError('a broken plugin')\n")
    elif damage == "missing-runtime":  # the package deleted by hand, its .pth left
        shutil.rmtree(site / "compat_plugin_vllm")
    elif damage == "exiting-runtime":
        (site / "compat_plugin_vllm/__init__.py").write_text("import sys; sys.exit(3)\n")
    elif damage == "hook-raises":  # an exception inside the finder itself
        data = json.loads(text)
        data["modules"][CPU_ATTN_MODULE] = 5
        data_file.write_text(json.dumps(data))
    else:
        data_file.write_text("[1, 2]")
    seen, log = show(python)
    assert seen["sizes"] == ORIGINAL
    assert len(log) == 1 and log[0].startswith("compat plugin (vllm): "), log  # one line, then the engine stock
    if "runtime" in damage:
        assert "cannot load compat_plugin_vllm" in log[0] and str(site / "compat_plugin_vllm.pth") in log[0], log
    unrelated = run_python(python, "import json; print(1)")  # a script that never imports the engine: not a word
    assert unrelated.returncode == 0 and unrelated.stdout == "1\n" and unrelated.stderr == "", unrelated.stderr
    assert compat(capsys, "plugin", "remove", "--engine", "vllm", "--python", str(python))[0] == 0


def test_the_vllm_entry_point_installs_the_hook_when_the_pth_did_not_run(fake_venv, capsys):
    python, _ = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    load_plugins = """
        import sys
        from importlib.metadata import entry_points
        sys.meta_path[:] = [f for f in sys.meta_path if not hasattr(f, "compat_plugin_hook")]  # no .pth
        def load_general_plugins():  # what vllm.plugins.load_general_plugins does
            for plugin in entry_points(group="vllm.general_plugins"):
                plugin.load()()
    """
    proc = run_python(python, load_plugins + f"""
        load_general_plugins()
        load_general_plugins()  # vLLM may load plugins more than once per process
        import {CPU_ATTN_MODULE} as m
        print(m.CPUAttentionBackend.get_supported_kernel_block_sizes())
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == PATCHED, proc.stderr
    assert proc.stderr.strip() == ""

    proc = run_python(python, load_plugins + f"""
        import {CPU_ATTN_MODULE} as m
        load_general_plugins()
        print(m.CPUAttentionBackend.get_supported_kernel_block_sizes())
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == ORIGINAL, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "imported before the plugin could patch it" in lines[0], lines


def test_remove_leaves_nothing_behind(fake_venv, capsys):
    python, site = fake_venv
    before = listing(site)
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    assert install(capsys, python, "--select", BLOCK16)[1]["replaced"] is True  # installing again replaces it
    assert show(python)[0]["sizes"] == PATCHED  # its __pycache__ now exists too
    code, result = compat(capsys, "plugin", "remove", "--engine", "vllm", "--python", str(python))
    assert code == 0 and any(f.endswith("plugin.json") for f in result["removed"])
    assert {p.relative_to(site).as_posix() for p in site.rglob("*") if "compat_plugin" in str(p)} == set()
    assert listing(site) == before
    assert show(python)[0]["sizes"] == ORIGINAL
    code, again = compat(capsys, "plugin", "remove", "--engine", "vllm", "--python", str(python))
    assert code == 0 and again["removed"] == []
    code, status = compat(capsys, "plugin", "status", "--engine", "vllm", "--python", str(python))
    assert code == 0 and status["installed"] is False


def test_pip_uninstall_removes_it_too(fake_venv, capsys):
    python, site = fake_venv
    before = listing(site)
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    listed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "list"], capture_output=True, text=True)
    assert "compat-plugin-vllm" in listed.stdout, listed.stdout + listed.stderr
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "uninstall", "-y", "compat-plugin-vllm"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert listing(site) == before
    assert not [p for p in site.iterdir() if p.name.startswith("compat_plugin")]
    assert show(python)[0]["sizes"] == ORIGINAL


def test_status_reports_what_is_installed_and_whether_it_applies(fake_venv, capsys):
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    code, status = compat(capsys, "plugin", "status", "--engine", "vllm", "--python", str(python))
    assert code == 0 and status["installed"] is True
    assert status["engine_version"] == "0.30.0" and status["distribution"] == "vllm"
    assert [p["id"] for p in status["patches"]] == [BLOCK16]
    assert status["modules"][CPU_ATTN_MODULE] == {"file": CPU_ATTN, "patches": [BLOCK16], "hash": "matches"}
    assert status["live"]["hook_active"] is True  # the .pth ran in that python
    assert status["live"]["modules"][CPU_ATTN_MODULE]["patch"] is True
    assert status["guard"]["version_file"]["file"] == "vllm/_version.py"
    assert main(["plugin", "status", "--engine", "vllm", "--python", str(python)]) == 0
    human = capsys.readouterr().out
    assert "import hook" in human and "on" in human and CPU_ATTN_MODULE in human


def test_probe_shows_the_plugin(fake_venv, capsys):
    python, site = fake_venv
    code, report = compat(capsys, "probe", "--engine", "vllm", "--python", str(python))
    assert report["compat_plugin"] is None
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    code, report = compat(capsys, "probe", "--engine", "vllm", "--python", str(python))
    plugin = report["compat_plugin"]
    assert plugin["installed"] and plugin["applies"] and plugin["site_packages"] == str(site)
    assert plugin["modules"][CPU_ATTN_MODULE]["hash"] == "matches"


def test_refused_selections_install_nothing(fake_venv, capsys):
    python, site = fake_venv
    before = listing(site)
    code, result = install(capsys, python, "--select", "vllm-eagle3-whitelist")  # for <=0.21.0; this is 0.30.0
    assert code == 4 and "not offered" in result["error"], result
    code, result = install(capsys, python, "--select", "no-such-patch")
    assert code == 2 and "unknown patch id" in result["error"], result
    assert listing(site) == before


def test_nothing_to_apply_installs_nothing(fake_venv, capsys):
    python, site = fake_venv
    before = listing(site)
    path = site / CPU_ATTN
    path.write_text(path.read_text().replace("return [MultipleOf(32)]", "return [16, MultipleOf(32)]"))  # fixed upstream
    code, result = install(capsys, python)
    assert code == 4 and "nothing to apply" in result["error"] and "already in this release" in result["error"], result
    assert listing(site) == before


def test_a_missing_tree_is_a_usage_error_naming_path(capsys):
    code, result = compat(capsys, "plugin", "install", "--engine", "vllm", "--path", "/nonexistent")
    assert code == 2 and result["exit_code"] == 2, result  # a missing path is bad input (2), before any engine is read
    assert result["error"] == "--path /nonexistent: no such directory", result
    assert result["fix"] == "point --path at a source tree: the folder that holds vllm/ or sglang/", result


def test_groups_apply_all_or_nothing_and_patch_options_reach_the_transform(tmp_path, capsys):
    """Two independent patches on the tiny vLLM 0.11.0 tree (whitelist with --model-type, DeepSeek capture):
    a hand edit of one module leaves that patch alone and the other still applies."""
    from patch_trees import write_mini_vllm
    import plugin_env

    python = plugin_env.make_venv(tmp_path / "venv")
    site = plugin_env.site_packages(python)
    write_mini_vllm(site)
    code, result = install(capsys, python, "--path", str(site), "--model-type", "glm4_moe")
    assert code == 0, result
    assert {p["id"] for p in result["patches"]} == {"vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"}
    check = """
        import json
        from vllm.config.speculative import SpeculativeConfig
        from vllm.model_executor.models import deepseek_v2
        class Cfg(SpeculativeConfig):
            method = "eagle3"
            class target_model_config:
                class hf_text_config:
                    model_type = "glm4_moe"
        try:
            Cfg()._verify_args(); whitelisted = True
        except ValueError:
            whitelisted = False
        print(json.dumps({"whitelisted": whitelisted,
                          "capture": hasattr(deepseek_v2.DeepseekV2ForCausalLM, "set_aux_hidden_state_layers")}))
    """
    proc = run_python(python, check)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"whitelisted": True, "capture": True}
    deepseek = site / "vllm/model_executor/models/deepseek_v2.py"
    deepseek.write_text(deepseek.read_text() + "\n# edited\n")
    proc = run_python(python, check)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"whitelisted": True, "capture": False}
    assert "deepseek_v2" in proc.stderr and "left alone" in proc.stderr


def test_a_tree_the_python_does_not_import_is_named_in_a_note(fake_venv, tmp_path, capsys):
    from patch_trees import write_mini_vllm

    python, site = fake_venv
    elsewhere = write_mini_vllm(tmp_path / "checkout")
    code, result = install(capsys, python, "--path", str(elsewhere), "--select", "vllm-eagle3-whitelist")
    assert code == 0, result
    assert len(result["notes"]) == 1 and f"imports vllm from {site / 'vllm/__init__.py'}" in result["notes"][0], result["notes"]
    assert show(python)[0]["sizes"] == ORIGINAL  # the venv's own vllm: not what the plugin was built for


def test_a_venv_directory_names_its_python(fake_venv, capsys):
    """`--python VENV_DIR` is the venv's bin/python everywhere: the plugin is built for it, the check of where it
    imports the engine from runs it (no "imports vllm from nowhere"), and status asks it about its hook."""
    python, site = fake_venv
    venv = python.parent.parent
    code, result = install(capsys, venv, "--select", BLOCK16)
    assert code == 0, result
    assert result["python"] == str(python) and result["site_packages"] == str(site)
    assert result["notes"] == [], result["notes"]
    code, status = compat(capsys, "plugin", "status", "--engine", "vllm", "--python", str(venv))
    assert code == 0 and status["python"] == str(python)
    assert status["live"].get("hook_active") is True, status["live"]
    assert show(python)[0]["sizes"] == PATCHED
    code, removed = compat(capsys, "plugin", "remove", "--engine", "vllm", "--python", str(venv))
    assert code == 0 and removed["site_packages"] == str(site) and removed["removed"]


def test_the_api_for_compat_env_and_doctor(fake_venv, capsys):
    import shlex

    from compat.cli import parse
    from compat.plugin import installed_plugins, plugin_command

    python, site = fake_venv
    assert installed_plugins(str(python)) == []
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    [found] = installed_plugins(str(python))
    assert found["engine"] == "vllm" and found["site_packages"] == str(site)
    assert found["modules"][CPU_ATTN_MODULE]["hash"] == "matches"

    line = plugin_command("vllm", [BLOCK16, "vllm-eagle3-whitelist"], ["glm4_moe"], python=str(python))
    args = parse(shlex.split(line)[1:])
    assert (args.command, args.action, args.engine, str(args.python)) == ("plugin", "install", "vllm", str(python))
    assert args.select == [BLOCK16, "vllm-eagle3-whitelist"] and args.model_types == ["glm4_moe"]


def test_a_patched_model_module_turns_vllms_file_keyed_compile_cache_off(tmp_path, capsys):
    """vLLM hashes the traced files as they are on disk for its torch.compile cache; a model module
    patched in memory must not share cache entries with the unpatched file."""
    from patch_trees import write_mini_vllm
    import plugin_env

    python = plugin_env.make_venv(tmp_path / "venv")
    site = plugin_env.site_packages(python)
    write_mini_vllm(site)
    (site / "vllm/envs.py").write_text('environment_variables = {"VLLM_DISABLE_COMPILE_CACHE": lambda: False}\n')
    (site / "vllm/compilation").mkdir()
    (site / "vllm/compilation/__init__.py").write_text("")
    (site / "vllm/compilation/backends.py").write_text(
        "def code_hash(config):\n    for path in sorted(config.traced_files):\n        with open(path) as f:\n            yield f.read()\n")
    code, result = install(capsys, python, "--path", str(site))
    assert code == 0, result
    check = """
        import json, os
        import vllm.config.speculative
        before = os.environ.get("VLLM_DISABLE_COMPILE_CACHE")
        from vllm.model_executor.models import deepseek_v2
        print(json.dumps([before, os.environ.get("VLLM_DISABLE_COMPILE_CACHE")]))
    """
    proc = run_python(python, check)
    assert proc.returncode == 0 and json.loads(proc.stdout) == [None, "1"], proc.stderr
    assert "VLLM_DISABLE_COMPILE_CACHE=1" in proc.stderr and "deepseek_v2" in proc.stderr
    proc = run_python(python, check, {"VLLM_DISABLE_COMPILE_CACHE": "0"})  # the user's setting wins
    assert proc.returncode == 0 and json.loads(proc.stdout) == ["0", "0"] and proc.stderr == "", proc.stderr


def test_the_pth_hook_loads_nothing_until_the_engine_is_imported(fake_venv, capsys):
    """At start-up the .pth only puts a name-comparing finder on sys.meta_path: the runtime (and plugin.json)
    are loaded at the engine's first import, in that process only."""
    python, site = fake_venv
    assert install(capsys, python, "--select", BLOCK16)[0] == 0
    pth = (site / "compat_plugin_vllm.pth").read_text()
    assert pth.count("\n") == 1 and pth.startswith("import sys; exec(")
    proc = run_python(python, f"""
        import json, sys
        before = {{"runtime": "compat_plugin_vllm" in sys.modules,
                  "hook": [type(f).__name__ for f in sys.meta_path if getattr(f, "compat_plugin_hook", None) == "vllm"]}}
        import {CPU_ATTN_MODULE} as m
        after = {{"runtime": "compat_plugin_vllm" in sys.modules,
                 "hook": [type(f).__name__ for f in sys.meta_path if getattr(f, "compat_plugin_hook", None) == "vllm"],
                 "finder": [type(f).__name__ for f in sys.meta_path if getattr(f, "compat_plugin_engine", None) == "vllm"]}}
        print(json.dumps([before, after, m.CPUAttentionBackend.get_supported_kernel_block_sizes().__repr__()]))
    """)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    before, after, sizes = json.loads(proc.stdout)
    assert before == {"runtime": False, "hook": ["CompatPluginHook"]}
    assert after == {"runtime": True, "hook": [], "finder": ["PatchFinder"]} and sizes == PATCHED
