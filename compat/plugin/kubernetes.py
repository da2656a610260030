"""`compat plugin manifest`: the init container, shared volume and environment that install compat's in-memory
plugin into a serving container at every start (patches applied inside a running container are lost at restart;
llm-d-modelservice#148 asks for exactly this: setup "before vllm is started").

    initContainers: compat-plugin     the serving image itself (so the plugin is built on the very engine files it
                                      patches: the runtime refuses any other file), which pip-installs compat into the
                                      volume and runs `compat plugin install --target <volume>/site` with the image's
                                      python and engine
    volumes: compat-plugin            an emptyDir, new at every pod start: the plugin is rebuilt each time, never stale
    containers[<serving>]             the volume mounted read-only, PYTHONPATH=<volume>/site: its sitecustomize.py turns
                                      the import hook on in every engine process (workers included: they inherit the
                                      environment), and vLLM's `vllm.general_plugins` entry point is found there too

The result is a Kustomize strategic-merge patch for the workload (a Deployment by default; `--kind` for a
StatefulSet or LeaderWorkerSet's pod template path is the user's), and the same parts under --json.
"""

from __future__ import annotations

import shlex
from typing import Any

from compat import __version__

VOLUME = "compat-plugin"


def parts(*, engine: str, version: str | None, image: str, container: str, mount: str = "/compat-plugin",
          requirement: str | None = None, python: str = "python3", select: list[str] = (), skip: list[str] = (),  # type: ignore[assignment]
          extra_index: str | None = None) -> dict[str, Any]:
    """The init container, the volume, and what the serving container gets (env, volumeMounts)."""
    requirement = requirement or f"compat=={__version__}"
    site = f"{mount}/site"
    tool = f"{mount}/tool"
    install = ["compat", "plugin", "install", "--engine", engine, "--target", site]
    for patch in select:
        install += ["--select", patch]
    for patch in skip:
        install += ["--skip", patch]
    pip = [python, "-m", "pip", "install", "--quiet", "--no-cache-dir", "--target", tool, requirement]
    if extra_index:
        pip += ["--extra-index-url", extra_index]
    script = "\n".join([
        "set -e",
        f"rm -rf {shlex.quote(site)}",
        shlex.join(pip),
        f"PYTHONPATH={shlex.quote(tool)} {shlex.join([python, '-m', *install])}",
    ])
    init = {"name": "compat-plugin", "image": image, "command": ["sh", "-c", script],
            "volumeMounts": [{"name": VOLUME, "mountPath": mount}]}
    return {
        "engine": engine, "version": version, "image": image, "site": site,
        "init_container": init,
        "volume": {"name": VOLUME, "emptyDir": {}},
        "env": [{"name": "PYTHONPATH", "value": site}],
        "volume_mount": {"name": VOLUME, "mountPath": mount, "readOnly": True},
        "container": container,
    }


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
    return (f"# compat plugin for {release} ({p['image']}): applied in memory at every start of the serving container\n"
            f"# a Kustomize patch (patches: [{{path: compat-plugin.yaml}}]); the init container builds the plugin with the\n"
            f"# serving image's own engine into {p['site']}; PYTHONPATH there turns it on (docs/manifests.md)\n")


def dump(patch: dict[str, Any]) -> str:
    """The patch as YAML, the init container's script as a literal block (read as it runs)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return yaml.dump(patch, Dumper=Dumper, sort_keys=False, width=4096)
