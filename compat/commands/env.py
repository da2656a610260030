"""`compat env`: the block to paste into a bug report (like `vllm collect-env`, `python -m sglang.check_env`).

What compat is and runs on, and for this interpreter and `--python PY` (the serving venv): the engines
installed there (found without importing them), what compat patched in each (its record) and the
compat plugin state, and the torch / CUDA that interpreter sees: asked of it in a subprocess, so torch
is never imported into compat. Each engine's own torch requirement is judged against that torch
(compat/torch_pin.py): a torch the engine was not built against is the usual cause of "undefined symbol". Then where the release cache is and how big.
"""

from __future__ import annotations

import argparse

import os
import platform
from typing import TYPE_CHECKING, Any

from compat.commands._source import PYTHON_HELP, absolute_path, add_python_argument
from compat.core.interpreter import Interpreter
from compat.core.output import EXAMPLES_HERE, examples_yours, exit_codes, human_size, plural, print_json
from compat.torch_pin import TorchPin, ask as ask_torch_requirements, torch_pins

if TYPE_CHECKING:
    from rich.console import Console

    from compat.sources.installed import InstalledEngine

NAME = "env"
ORDER = 70
FLEET = True  # --host/--hosts/--ray (compat/fleet/)
SUMMARY = "compat, Python, platform, the engines found (and what compat patched), torch/CUDA: for bug reports"
DESCRIPTION = (
    "Print what a bug report needs: compat's version, the Python and platform, the vLLM/SGLang installed in this "
    "interpreter and in --python PY (the serving venv) with the patches compat applied to them and its plugin, "
    "the torch and CUDA versions each interpreter sees (asked of it, never imported here), and the cache."
)
EPILOG = EXAMPLES_HERE + """
  compat env                                   this interpreter
  compat env --json                            for a CI log

""" + examples_yours("a serving venv") + """
  compat env --python ./venv-serve/bin/python  and the serving venv

""" + exit_codes()

ASK_TIMEOUT_S = 300.0  # --cuda imports torch there: seconds, more on a cold disk

# Runs inside the interpreter asked (sent as source): stdlib only, py3.8+. torch's versions are read from its
# torch/version.py without importing it (an import takes seconds); with --cuda torch is imported there to ask
# whether it sees a GPU.
_PROBE = r"""
import ast, json, os, platform, sys
from importlib import metadata, util
out = {"python_version": sys.version.split()[0], "executable": sys.executable,
       "implementation": platform.python_implementation(), "packages": {}}
for name in ("torch", "transformers", "triton", "flashinfer-python", "xformers", "safetensors", "numpy"):
    try:
        out["packages"][name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
spec = util.find_spec("torch") if "torch" in out["packages"] else None
if spec is not None and spec.origin:
    torch = {}
    try:
        with open(os.path.join(os.path.dirname(spec.origin), "version.py")) as f:
            for node in ast.parse(f.read()).body:
                target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
                if isinstance(target, ast.Name) and target.id in ("__version__", "cuda", "hip") and node.value is not None:
                    try:
                        torch[target.id.strip("_")] = ast.literal_eval(node.value)
                    except ValueError:
                        pass
    except (OSError, SyntaxError) as err:
        torch["error"] = "cannot read torch/version.py: %s" % err
    if ASK_CUDA:
        try:
            import torch as t
            torch["cuda_available"] = bool(t.cuda.is_available())
            torch["devices"] = [t.cuda.get_device_name(i) for i in range(t.cuda.device_count())] if torch["cuda_available"] else []
        except Exception as err:
            torch["error"] = "import torch: %s: %s" % (type(err).__name__, err)
    out["torch"] = torch
"""


def machine_gpus() -> dict[str, Any]:
    """The NVIDIA driver and device nodes this machine has (read from /proc and /dev, no tool run)."""
    import glob

    out: dict[str, Any] = {"devices": sorted(p for p in glob.glob("/dev/nvidia[0-9]*"))}
    try:
        with open("/proc/driver/nvidia/version") as f:
            out["driver"] = f.readline().strip()
    except OSError:
        out["driver"] = None
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_python_argument(parser, help=PYTHON_HELP + "; reported beside this one")
    parser.add_argument("--cache-dir", metavar="DIR", type=absolute_path,
                        help="the release cache (default: $XDG_CACHE_HOME/compat or ~/.cache/compat)")
    parser.add_argument("--cuda", action="store_true", help="also import torch in each interpreter to ask whether it "
                        "sees a GPU (seconds per interpreter; by default torch's versions are read from its files)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, console: Console) -> int:
    report = collect(args.python, args.cache_dir, ask_cuda=args.cuda)
    if args.json:
        print_json(report, "env")
    else:
        render(report, console)
    return _given_interpreter_code(args, report)


def _given_interpreter_code(args: argparse.Namespace, report: dict[str, Any]) -> int:
    """The report is printed whatever happens (it is for a bug report); the exit code says whether the --python
    given could be asked: 2 when nothing is at that path, 4 when what is there is not a program, 3 when it could not be
    run (the exit-code table)."""
    from compat.core.errors import EXIT_SOURCE

    failed = [i for i in report["interpreters"] if not i["this"] and i.get("error")]
    return int(failed[0].get("error_exit_code") or EXIT_SOURCE) if failed else 0


def collect(python: Interpreter | str | None, cache_dir: str | None, *, ask_cuda: bool = False) -> dict[str, Any]:
    from compat import __version__
    from compat.sources.cache import cache_size
    from compat.hub import hf_hub_cache
    from compat.sources.cache import cache_root

    import compat

    given = Interpreter.of(python) if python is not None else None
    pythons = [Interpreter.current()] + ([given] if given is not None and not given.is_current else [])
    cache = cache_root(cache_dir)
    return {
        "compat": {"version": __version__, "location": os.path.dirname(compat.__file__)},
        "python": {"version": platform.python_version(), "executable": Interpreter.current().path},
        "platform": {"system": platform.platform(), "machine": platform.machine(),
                     "libc": " ".join(platform.libc_ver()).strip() or None, "cpus": os.cpu_count()},
        "gpus": machine_gpus(),
        "interpreters": _in_parallel(pythons, ask_cuda),
        "cache": {"path": str(cache), "bytes": cache_size(cache)},
        "hf_hub_cache": str(hf_hub_cache()),
        "environment": {k: os.environ[k] for k in sorted(os.environ)
                        if k in ("PIP_INDEX_URL", "XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "COMPAT_FACTS_DIR",
                                 "COMPAT_FACTS_CACHE", "COMPAT_PLUGIN_DISABLE", "CUDA_VISIBLE_DEVICES", "VLLM_USE_V1")},
    }


def _in_parallel(pythons: list[Interpreter], ask_cuda: bool) -> list[dict[str, Any]]:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(pythons)) as pool:  # each waits on subprocesses of its interpreter
        return list(pool.map(lambda p: interpreter(p, this=p.is_current, ask_cuda=ask_cuda), pythons))


def interpreter(python: Interpreter, *, this: bool, ask_cuda: bool = False) -> dict[str, Any]:
    """What one interpreter has: its engines (with compat's patches and plugin), torch and CUDA."""
    from compat.core.errors import CompatError
    from compat.sources.installed import find_installed

    out: dict[str, Any] = {"python": python.path, "this": this}
    try:
        engines = find_installed(None if this else python)
    except CompatError as err:  # the code it means (2 nothing there, 4 not a program, 3 it failed) goes with it
        return {**out, "error": str(err).replace("\n", " "), "error_exit_code": err.exit_code}
    out["engines"] = [_engine(e) for e in engines]
    out["plugins"] = _plugins(python)
    out.update(_ask(python, ask_cuda))
    return out


def _engine(found: InstalledEngine) -> dict[str, Any]:
    from compat.patch_record import applied_patches  # read only: a bug report never changes the serving venv

    row: dict[str, Any] = {"engine": found.engine, "distribution": found.distribution, "version": found.version, "root": found.root}
    row["patches"] = [{"id": p["id"], "applied_at": p.get("applied_at"), "intact": p.get("intact"), "record": p.get("record")}
                      for p in applied_patches(found.tree()) if "id" in p]
    return row


def _plugins(python: Interpreter) -> list[dict[str, Any]] | dict[str, str]:
    from compat.core.errors import CompatError

    try:
        from compat.plugin import installed_plugins

        return [{k: p.get(k) for k in ("engine", "engine_version", "site_packages", "patches", "damaged") if k in p}
                for p in installed_plugins(python)]
    except CompatError as err:
        return {"error": str(err).replace("\n", " ")}


def _ask(python: Interpreter, ask_cuda: bool) -> dict[str, Any]:
    from compat.core.interpreter import InterpreterError, InterpreterFailed

    code = f"ASK_CUDA = {bool(ask_cuda)}\n" + _PROBE + ask_torch_requirements() + "print(json.dumps(out))\n"
    try:
        answer: dict[str, Any] = python.run_json(code, what="ask it for torch and CUDA", timeout=ASK_TIMEOUT_S)
    except InterpreterFailed as err:
        return {"error": f"could not ask {python.path}: {err.detail}"}
    except InterpreterError as err:
        return {"error": f"could not ask {python.path}: {err.message}"}
    asked = answer.pop("torch_requirements", None) or {}
    answer["torch_pins"] = [pin.to_json() for pin in torch_pins(asked, (answer.get("packages") or {}).get("torch"))]
    return answer


def render(r: dict[str, Any], console: Console) -> None:
    say = lambda text: console.out(text, highlight=False)  # noqa: E731 - plain lines to paste into an issue
    say(f"compat {r['compat']['version']}  ({r['compat']['location']})")
    say(f"python {r['python']['version']}  ({r['python']['executable']})")
    p = r["platform"]
    say(f"platform {p['system']}  ({p['machine']}, {p['cpus']} CPUs{', ' + p['libc'] if p['libc'] else ''})")
    for i in r["interpreters"]:
        say("")
        say(f"{'this interpreter' if i['this'] else '--python'}: {i['python']}" + (f"  (python {i['python_version']})" if i.get("python_version") else ""))
        if i.get("error"):
            say(f"  error: {i['error']}")
            continue
        if not i["engines"]:
            say("  engines: no vLLM or SGLang installed")
        for e in i["engines"]:
            say(f"  {e['engine']} {e['version']}  (distribution {e['distribution']}, {e['root']})")
            patches = ", ".join(f"{p['id']} ({'intact' if p['intact'] else 'changed since'}, {p['applied_at']})" for p in e["patches"])
            say(f"    compat patches: {patches or 'none'}")
        plugins = i.get("plugins")
        if isinstance(plugins, dict):
            say(f"  compat plugin: {plugins['error']}")
        else:
            say("  compat plugin: " + ("; ".join(f"{p['engine']} ({p.get('damaged') or 'built for ' + str(p.get('engine_version'))}: "
                                                f"{', '.join(x['id'] if isinstance(x, dict) else str(x) for x in p.get('patches') or [])})"
                                                for p in plugins) or "none"))
        packages = i.get("packages") or {}
        say("  packages: " + (", ".join(f"{k} {v}" for k, v in packages.items()) or "none of torch, transformers, triton"))
        torch = i.get("torch")
        if torch:
            build = f"built for CUDA {torch['cuda']}" if torch.get("cuda") else (
                f"built for ROCm/HIP {torch['hip']}" if torch.get("hip") else "a CPU build")
            seen = ""
            if "cuda_available" in torch:
                seen = f"; sees {', '.join(torch['devices'])}" if torch["devices"] else "; sees no GPU"
            say(f"  torch {torch.get('version', '?')}: {build}{seen}" + (f"  ({torch['error']})" if torch.get("error") else ""))
        for pin in i.get("torch_pins") or []:
            say(f"  torch pin: {TorchPin(**pin).describe()}")
    say("")
    g = r["gpus"]
    say(f"GPUs: {g['driver'] or 'no NVIDIA driver loaded'}" + (f"; {plural(len(g['devices']), 'device')} {' '.join(g['devices'])}" if g["devices"] else ""))
    say(f"release cache: {r['cache']['path']}  ({human_size(r['cache']['bytes'])}; compat cache list shows what)")
    say(f"Hugging Face cache: {r['hf_hub_cache']}")
    for key, value in r["environment"].items():
        say(f"  {key}={value}")
