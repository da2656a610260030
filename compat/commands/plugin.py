"""`compat plugin install|status|remove`: compat's patches applied in memory, no engine file changed.

The work is compat/plugin/; this file is the command line and what it prints.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Callable

from compat.core.output import EXAMPLES_HERE, EXIT_CODES, examples_yours, plural, print_json

if TYPE_CHECKING:
    from rich.console import Console

NAME = "plugin"
ORDER = 25
FLEET = True  # --host/--hosts/--ray (compat/fleet/)
SUMMARY = "apply the patches in memory at import time (a plugin in the serving venv; no engine file changed)"
DESCRIPTION = (
    "Install into the serving environment a small distribution of compat's own that applies the patches selected "
    "for the installed engine release in memory, when each engine process imports the module: for deployments "
    "whose engine files must not change (read-only images, shared venvs, pip-checked hashes). The patched source "
    "is computed now, by the same transforms as compat patch; the serving venv needs neither compat nor libcst. "
    "A module whose file is not byte for byte the one the plugin was built on, or another release, is left alone "
    "with one log line."
)

EPILOG = EXAMPLES_HERE + """
  compat plugin manifest --engine vllm --image vllm/vllm-openai:v0.11.0 --name qwen-eagle3 > compat-plugin.yaml
                                            Kubernetes: an init container that installs the plugin at every pod
                                            start (a Kustomize patch: init container, emptyDir, PYTHONPATH); the
                                            plugin is built here on vLLM 0.11.0 and carried in it (no index needed)

""" + examples_yours("the serving venv's python, PY: /opt/venv/bin/python") + """
  compat plugin install --engine vllm --python /opt/venv/bin/python
                                            every patch offered for that venv's vLLM, applied in memory
  compat plugin install --engine vllm --python PY --select vllm-cpu-attn-block16
  compat plugin install --engine vllm --select vllm-eagle3-whitelist --model-type glm4_moe
  compat plugin status --engine vllm --python PY     what is installed, and does each file still match
  compat plugin remove --engine vllm --python PY     remove it (pip uninstall compat-plugin-vllm does too)
  compat plugin install --engine vllm --target DIR   into DIR, not site-packages (what that init container runs;
                                            the serving processes get PYTHONPATH=DIR)

What is installed in the venv's site-packages: compat_plugin_<engine>/ (the hook and plugin.json,
the patched sources with the sha256 of the originals), compat_plugin_<engine>.pth (turns the import
hook on at start-up), compat_plugin_<engine>-<v>.dist-info (RECORD; for vLLM the vllm.general_plugins
entry point). Upgrade the engine, then run install again: the old plugin leaves the new release alone.
COMPAT_PLUGIN_DISABLE=1 turns the hook off for one process; COMPAT_PLUGIN_VERBOSE=1 logs each patched module.
""" + "\n" + EXIT_CODES

ACTIONS = ("install", "status", "remove", "manifest")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from compat import engines
    from compat.commands._source import absolute_path, add_python_argument
    from compat.patching import add_patch_options

    parser.add_argument("action", choices=ACTIONS, help="install the plugin, show its status, remove it, or print the "
                        "Kubernetes init container that installs it at every start (manifest)")
    where = parser.add_argument_group("where")
    where.add_argument("--engine", metavar="ENGINE", required=True, choices=engines.names(), help=engines.choices_text())
    add_python_argument(where, help="the serving environment's interpreter (default: this one); the plugin goes into "
                        "its site-packages")
    where.add_argument("--path", metavar="DIR", type=absolute_path,
                       help="install: the engine tree that interpreter imports, when it is not an installed distribution "
                       "(a checkout on its path); default: the engine installed in --python. manifest: a copy of the "
                       "image's engine tree; default: the release the image's tag names, from the package index")
    where.add_argument("--target", metavar="DIR", type=absolute_path, help="install: into DIR instead of site-packages, "
                       "with a sitecustomize.py that turns the plugin on for every python started with PYTHONPATH=DIR")
    kube = parser.add_argument_group("manifest (Kubernetes; docs/manifests.md)")
    kube.add_argument("--image", metavar="IMAGE", help="the serving image (its tag names the release the plugin is for); "
                      "the init container runs it, so the plugin is built on the very engine files it patches")
    kube.add_argument("--container", metavar="NAME", help="the serving container's name (default: the engine's name)")
    kube.add_argument("--name", metavar="NAME", default="SERVING-WORKLOAD", help="the workload the patch targets")
    kube.add_argument("--kind", default="Deployment", choices=("Deployment", "StatefulSet", "DaemonSet"),
                      help="the workload's kind (default Deployment)")
    kube.add_argument("--mount", metavar="DIR", default="/compat-plugin", help="where the shared volume is mounted")
    kube.add_argument("--image-python", metavar="PY", default="python3", help="the image's python (default python3): "
                      "it runs the init container")
    kube.add_argument("--compat-requirement", metavar="REQ", help="build the plugin in the pod instead: the init "
                      "container pip-installs REQ (a compat wheel's URL or path in the image; its dependencies from the "
                      "image's pip index) and runs compat plugin install there; default: the plugin is built here, on "
                      "the image's release, and carried in the manifest (the pod needs no index)")
    choice = parser.add_argument_group("which patches (install; as for compat patch)")
    choice.add_argument("--select", metavar="ID", action="append", default=[], help="only this patch (repeatable)")
    choice.add_argument("--skip", metavar="ID", action="append", default=[], help="not this patch (repeatable)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (for CI)")
    add_patch_options(parser)  # each patch's own options (e.g. --model-type), as for compat patch


def run(args: argparse.Namespace, console: Console) -> int:
    from compat import plugin
    from compat.patching import given_options

    options = given_options(args)
    if args.action == "manifest":
        return _manifest(args, console, options)
    if args.action != "install" and (args.select or args.skip or options or args.path):
        from compat.core.errors import UsageError

        raise UsageError(f"--select/--skip/--model-type/--path are for install, not {args.action}")
    show: Callable[[dict[str, Any], Console, argparse.Namespace], None]
    if args.action == "install":
        from compat.sources import open_tree

        plugin.check_target(args.target)  # a --target that cannot be one is said before the engine is looked for
        tree = open_tree(args.engine, path=args.path, python=args.python, progress=not args.json)
        result = plugin.install(tree, python=args.python, select=args.select, skip=args.skip, options=options,
                                target=args.target)
        show = _show_install
    elif args.action == "status":
        result = plugin.status(args.engine, args.python)
        show = _show_status
    else:
        result = plugin.remove(args.engine, args.python)
        show = _show_remove
    if args.json:
        print_json({**result, "exit_code": 0}, "plugin")
    else:
        show(result, console, args)
    return 0


def _where(args: argparse.Namespace) -> str:
    return f" --python {args.python}" if args.python else ""


def _show_install(r: dict[str, Any], console: Console, args: argparse.Namespace) -> None:
    console.print(f"[bold]{r['distribution'] or r['engine']} {r['engine_version']}[/]  at {r['root']}")
    for p in r["patches"]:
        console.print(f"  [bold green]in memory[/]  [bold]{p['id']}[/]  [dim]({p['versions']})[/]  {', '.join(p['files'])}")
    verb = "Replaced the plugin" if r["replaced"] else "Installed the plugin"
    console.print(f"{verb} compat-plugin-{r['engine']} in {r['site_packages']} ({plural(len(r['files']), 'file')}, no engine file changed)")
    for name in r["modules"]:
        module = r["modules"][name]
        console.print(f"  {name}: patched at import time while its file matches sha256 {module['sha256_original'][:12]}...")
        for key, value in module.get("env", {}).items():
            console.print(f"      [dim]sets {key}={value} where it is imported (unless set): the engine keys its compile cache by the file on disk[/]")
    for note in r.get("notes", []):
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"Check with: compat plugin status --engine {r['engine']}{_where(args)}")
    console.print(f"Undo with:  compat plugin remove --engine {r['engine']}{_where(args)}  (or pip uninstall compat-plugin-{r['engine']})")


_HASH_TEXT = {
    "matches": "[green]file matches: patched at import[/]",
    "changed": "[red]file changed since install: left alone[/]",
    "patched-on-disk": "[yellow]already patched on disk: left alone[/]",
    "missing": "[red]file missing[/]",
}


def _show_status(r: dict[str, Any], console: Console, args: argparse.Namespace) -> None:
    if not r["installed"]:
        console.print(f"No compat plugin for {r['engine']} in {r['site_packages']}")
        return
    if r.get("damaged"):
        console.print(f"[red]compat-plugin-{r['engine']} in {r['site_packages']} is damaged[/]: {r['damaged']}")
        console.print(f"Fix with: compat plugin remove --engine {r['engine']}{_where(args)}, then install again")
        return
    console.print(f"[bold]compat-plugin-{r['engine']}[/] {r['compat_version']} in {r['site_packages']}")
    console.print(f"  built {r['installed_at']} for {r['distribution'] or r['engine']} {r['engine_version']} at {r['root']}")
    live = r.get("live", {})
    if "error" in live:
        console.print(f"  [red]hook: {live['error']}[/]")
    else:
        active = "[green]on[/] (installed by its .pth at start-up)" if live.get("hook_active") else "[red]off[/] (the .pth did not run)"
        console.print(f"  import hook in {r['python']}: {active}" + ("  [yellow]COMPAT_PLUGIN_DISABLE is set[/]" if live.get("disabled") else ""))
    for p in r["patches"]:
        console.print(f"  patch [bold]{p['id']}[/]  ({p['versions']})  {p['description']}")
    for name, m in r["modules"].items():
        why = (live.get("modules", {}).get(name) or {}).get("why")
        console.print(f"  {name}  {m['file']}  {_HASH_TEXT.get(m['hash'], m['hash'])}" + (f"\n      [dim]{why}[/]" if why and m["hash"] == "matches" else ""))


def _show_remove(r: dict[str, Any], console: Console, args: argparse.Namespace) -> None:
    if not r["removed"]:
        console.print(f"Nothing to remove: no compat plugin for {r['engine']} in {r['site_packages']}")
        return
    console.print(f"Removed compat-plugin-{r['engine']} from {r['site_packages']} ({plural(len(r['removed']), 'file')})")


def _manifest(args: argparse.Namespace, console: Console, options: dict[str, Any]) -> int:
    """The init container, volume and environment that install the plugin at every start of the serving container."""
    from compat.core.errors import UsageError
    from compat.manifests.images import read_image
    from compat.manifests.model import Where
    from compat.plugin import bake, kubernetes

    if not args.image:
        raise UsageError("compat plugin manifest needs --image: the serving image",
                         hint="compat plugin manifest --engine vllm --image vllm/vllm-openai:v0.11.0")
    image = read_image(args.image, Where("--image", 1))
    if image.engine is not None and image.engine != args.engine:
        raise UsageError(f"--image {args.image} is {image.engine}'s, --engine says {args.engine}")
    mount = args.mount.rstrip("/") or "/compat-plugin"
    files, built = None, None
    if not args.compat_requirement:  # built here, on the image's release, and carried in the manifest
        from compat.sources import open_tree

        if image.version is None and not args.path:
            raise UsageError(f"--image {args.image} names no {args.engine} release, and the plugin is built on one",
                             hint=f"give the image's tag with its release (e.g. {args.engine}==X is in image:vX), or "
                             "--path to a copy of the image's engine tree")
        tree = open_tree(args.engine if args.path else f"{args.engine}=={image.version}", path=args.path,
                         progress=not args.json)
        files, built = bake(tree, python=args.image_python, site=f"{mount}/site", select=args.select, skip=args.skip,
                            options=options)
    parts = kubernetes.parts(engine=args.engine, version=image.version or (built or {}).get("engine_version"),
                             image=args.image, container=args.container or args.engine, mount=mount, files=files,
                             requirement=args.compat_requirement, python=args.image_python, select=args.select,
                             skip=args.skip)
    patch = kubernetes.strategic_patch(parts, kind=args.kind, name=args.name)
    if args.json:
        print_json({**parts, "plugin": built, "patch": patch, "exit_code": 0}, "plugin-manifest")
        return 0
    print(kubernetes.header(parts) + kubernetes.dump(patch), end="")
    return 0
