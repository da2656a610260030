"""`compat plugin manifest`: the init container, shared volume and environment that install compat's in-memory
plugin into a serving container at every start (patches applied inside a running container are lost at restart;
llm-d-modelservice#148 asks for exactly this: setup "before vllm is started").

    initContainers: compat-plugin     the serving image itself, with its own python: it unpacks the plugin carried
                                      in its arguments into the volume and checks it against the image's engine
                                      files (each patched file byte for byte what the plugin was built on, the
                                      version file saying the same release, the import hook on); if not, it exits
                                      1 naming the file, and the pod does not start on an engine left unpatched
    volumes: compat-plugin            an emptyDir, new at every pod start: the plugin is unpacked each time, never stale
    containers[<serving>]             the volume mounted read-only, PYTHONPATH=<volume>/site: its sitecustomize.py turns
                                      the import hook on in every engine process (workers included: they inherit the
                                      environment), and vLLM's `vllm.general_plugins` entry point is found there too

The plugin is built here, by this compat, on the release the image's tag names (its source from the package index,
as every compat command reads it) or on the image's engine tree (--path): the pod needs no index, no pip and no
compat. The plugin is small (the patched modules' source, zipped), carried as the init container's arguments in
pieces below the kernel's limit for one argument. With --compat-requirement the user names where compat comes from
instead (a wheel, or an index of their own with compat's dependencies): the init container pip-installs it and
builds the plugin on the image's files.

The result is a Kustomize strategic-merge patch for the workload (a Deployment by default; `--kind` for a
StatefulSet or LeaderWorkerSet's pod template path is the user's), and the same parts under --json.
"""

from __future__ import annotations

import shlex
from typing import Any

VOLUME = "compat-plugin"
ARGUMENT_CHARS = 100_000  # one argument of the init container's command: Linux takes at most 128 KiB (MAX_ARG_STRLEN)

# What the init container runs with the image's python (stdlib only): argv[1] the plugin's directory, the rest the
# plugin zipped and in base64, in pieces. The check runs in a new python with the directory on PYTHONPATH, as the
# serving container's processes will (its sitecustomize turns the hook on).
UNPACK_AND_CHECK = """\
import base64, io, os, shutil, subprocess, sys, zipfile
site = sys.argv[1]
shutil.rmtree(site, ignore_errors=True)
zipfile.ZipFile(io.BytesIO(base64.b64decode("".join(sys.argv[2:])))).extractall(site)
path = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p)
check = "import sys, {package} as plugin; sys.exit(plugin.check_image())"
sys.exit(subprocess.call([sys.executable, "-c", check], env=dict(os.environ, PYTHONPATH=path)))
"""


def packed(files: dict[str, bytes]) -> list[str]:
    """The plugin's files as the init container's arguments: one zip, in base64, cut below the per-argument limit."""
    import base64
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in sorted(files.items()):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # the same plugin, the same manifest
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    text = base64.b64encode(buffer.getvalue()).decode("ascii")
    return [text[i:i + ARGUMENT_CHARS] for i in range(0, len(text), ARGUMENT_CHARS)]


def parts(*, engine: str, version: str | None, image: str, container: str, mount: str = "/compat-plugin",
          files: dict[str, bytes] | None = None, requirement: str | None = None, python: str = "python3",
          select: list[str] = (), skip: list[str] = (),  # type: ignore[assignment]
          extra_index: str | None = None) -> dict[str, Any]:
    """The init container, the volume, and what the serving container gets (env, volumeMounts): the plugin's `files`
    (compat.plugin.bake) carried in the manifest, or, with `requirement`, compat pip-installed from where the user
    names and the plugin built in the pod."""
    from compat.plugin.names import package_name

    site = f"{mount}/site"
    if requirement is None:
        assert files is not None, "the plugin's files, or a requirement to build it in the pod"
        code = UNPACK_AND_CHECK.replace("{package}", package_name(engine))
        command = [python, "-c", code, site, *packed(files)]
    else:
        command = ["sh", "-c", _pip_script(engine, site, f"{mount}/tool", requirement, python, select, skip, extra_index)]
    init = {"name": "compat-plugin", "image": image, "command": command,
            "volumeMounts": [{"name": VOLUME, "mountPath": mount}]}
    return {
        "engine": engine, "version": version, "image": image, "site": site,
        "source": "built by compat, carried in the manifest" if requirement is None else requirement,
        "init_container": init,
        "volume": {"name": VOLUME, "emptyDir": {}},
        "env": [{"name": "PYTHONPATH", "value": site}],
        "volume_mount": {"name": VOLUME, "mountPath": mount, "readOnly": True},
        "container": container,
    }


def _pip_script(engine: str, site: str, tool: str, requirement: str, python: str, select: list[str], skip: list[str],
                extra_index: str | None) -> str:
    """compat from where the user names (pip, with the image's pip settings), then the plugin built on the image."""
    install = ["compat", "plugin", "install", "--engine", engine, "--target", site]
    for patch in select:
        install += ["--select", patch]
    for patch in skip:
        install += ["--skip", patch]
    pip = [python, "-m", "pip", "install", "--quiet", "--no-cache-dir", "--target", tool, requirement]
    if extra_index:
        pip += ["--extra-index-url", extra_index]
    return "\n".join([
        "set -e",
        f"rm -rf {shlex.quote(site)}",
        shlex.join(pip),
        f"PYTHONPATH={shlex.quote(tool)} {shlex.join([python, '-m', *install])}",
    ])


def strategic_patch(p: dict[str, Any], *, kind: str = "Deployment", name: str = "SERVING-WORKLOAD") -> dict[str, Any]:
    pod = {
        "initContainers": [p["init_container"]],
        "containers": [{"name": p["container"], "env": p["env"], "volumeMounts": [p["volume_mount"]]}],
        "volumes": [p["volume"]],
    }
    api = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1"}.get(kind, "apps/v1")
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name}, "spec": {"template": {"spec": pod}}}


def header(p: dict[str, Any]) -> str:
    release = f"{p['engine']} {p['version']}" if p["version"] else p["engine"]
    if p["source"].startswith("built by compat"):
        how = (f"# the init container (the serving image's python; no index, no pip) unpacks the plugin compat built on\n"
               f"# {release} into {p['site']} and checks it against the image's files: a mismatch stops the pod start\n")
    else:
        how = (f"# the init container pip-installs {p['source']} and builds the plugin with the serving image's own\n"
               f"# engine into {p['site']}\n")
    return (f"# compat plugin for {release} ({p['image']}): applied in memory at every start of the serving container\n"
            f"# a Kustomize patch (patches: [{{path: compat-plugin.yaml}}]); PYTHONPATH={p['site']} turns it on\n"
            + how + "# (docs/manifests.md)\n")


def dump(patch: dict[str, Any]) -> str:
    """The patch as YAML, the init container's script as a literal block (read as it runs)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return yaml.dump(patch, Dumper=Dumper, sort_keys=False, width=4096)
