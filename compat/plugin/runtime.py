"""compat plugin runtime: applies compat's patches to an engine's modules in memory, at import time.

This file is copied verbatim into the serving environment as `compat_plugin_<engine>/__init__.py`
by `compat plugin install`; it runs there, so it uses the standard library only (Python 3.8+) and
never imports compat or libcst. Beside it, `plugin.json` holds, per module, the sha256 of the
engine's original source, the patched source (computed by compat's own transforms at install
time) and its sha256.

How it runs: the `.pth` file puts a tiny finder first on `sys.meta_path` at interpreter start-up
(dist.HOOK: it compares module names and nothing else, so pip and unrelated scripts never import
this file); at the engine's first import it steps aside and calls `hook_spec`, which puts this
module's finder first on `sys.meta_path`; for vLLM the `vllm.general_plugins` entry point calls
`register()` too (it installs the finder when the `.pth` did not run, and names the modules that
were imported before it could). For a module it knows, the finder asks the other finders for the
real spec, checks that every file the module's patches touch (and the engine's version file) is
still byte for byte what compat read at install time, and then compiles the stored source under
the module's real file name (tracebacks, `inspect` and `linecache` point at the engine's file).

Never in the way: on any mismatch it leaves the module alone and logs one line saying why (once
per module, logger `compat.plugin`, which reaches stderr when nothing configured logging); any
error of its own falls back to the normal import; `COMPAT_PLUGIN_DISABLE=1` turns it off.
"""

import os
import sys
from importlib.machinery import ModuleSpec, SourceFileLoader

ENGINE = __name__.rpartition("_")[2]  # compat_plugin_vllm -> vllm
DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugin.json")
DATA_FORMAT = 1
DISABLE_ENV = "COMPAT_PLUGIN_DISABLE"
VERBOSE_ENV = "COMPAT_PLUGIN_VERBOSE"  # also log the modules that were patched
MARK = "__compat_plugin__"  # set on each patched module: {"patches": [...], "sha256_patched": ...}

STATE: dict = {"data": None, "loaded": False, "said": set(), "groups": {}}


def say(key, message, level="warning"):
    """One log line per key (a module name) and process."""
    if key in STATE["said"]:
        return
    STATE["said"].add(key)
    if level == "info" and not os.environ.get(VERBOSE_ENV) and "logging" not in sys.modules:
        return  # nothing configured logging in this process: an info line would reach no handler (and importing logging costs ms)
    try:
        import logging

        if level == "info" and os.environ.get(VERBOSE_ENV):
            level = "warning"
        getattr(logging.getLogger("compat.plugin"), level)("compat plugin (%s): %s", ENGINE, message)
    except Exception:  # logging itself broken: stay silent rather than break an import
        pass


def load_data():
    """plugin.json, read once; None (and one log line) when it is missing or damaged."""
    if STATE["loaded"]:
        return STATE["data"]
    STATE["loaded"] = True
    try:
        import json

        with open(DATA_FILE, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
        if not isinstance(data, dict) or data.get("format") != DATA_FORMAT or not isinstance(data.get("modules"), dict):
            raise ValueError("not a compat plugin data file of format %s" % DATA_FORMAT)
        STATE["data"] = data
    except Exception as err:
        say("<data>", "cannot read %s (%s): %s is imported unpatched; run compat plugin install again"
            % (DATA_FILE, type(err).__name__, ENGINE))
    return STATE["data"]


def sha256_of(path):
    import hashlib

    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def engine_root(origin, relpath):
    """The directory holding the engine package, from a module's file and its path below it."""
    origin = os.path.normpath(origin)
    tail = os.sep + os.path.normpath(relpath)
    if not origin.endswith(tail):
        return None
    return origin[: -len(tail)]


def version_problem(data, root):
    """Why the engine at `root` is not the release the plugin was built for, or None."""
    guard = data.get("guard") or {}
    built = "%s %s" % (data.get("distribution") or ENGINE, data.get("engine_version"))
    vfile = guard.get("version_file")
    if vfile and vfile.get("sha256") is None:  # built on the release from the index (compat plugin manifest): the
        says = version_said(os.path.join(root, vfile["file"]))  # image's build writes its own commit id into the file
        if says != vfile["says"]:
            return "%s says %s: this is not %s, which the plugin was built for" % (vfile["file"], says, built)
        return None
    if vfile:
        if sha256_of(os.path.join(root, vfile["file"])) != vfile["sha256"]:
            return "%s changed: this is not %s, which the plugin was built for; run compat plugin install again" % (vfile["file"], built)
        return None
    dist = guard.get("distribution")
    if dist:
        from importlib.metadata import version

        try:
            found = version(dist["name"])
        except Exception:
            found = None
        if found != dist["version"]:
            return "%s is %s here, the plugin was built for %s; run compat plugin install again" % (dist["name"], found, dist["version"])
        return None
    return "the plugin data names no version guard"


def version_said(path):
    """The version a version file assigns (`__version__ = version = '0.32.0'`), or None."""
    import ast

    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read())
    except Exception:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return node.value.value
    return None


def group_problem(data, entry, root):
    """Why the patches of this module's group must not apply (all or nothing across their files), or None."""
    key = (entry.get("group"), root)
    if key in STATE["groups"]:
        return STATE["groups"][key]
    problem = version_problem(data, root)
    if problem is None:
        for info in data["modules"].values():
            if info.get("group") != entry.get("group"):
                continue
            now = sha256_of(os.path.join(root, info["file"]))
            if now == info["sha256_original"]:
                continue
            if now == info["sha256_patched"]:
                problem = "%s is already patched on disk (compat patch?): nothing to do in memory" % info["file"]
            elif now is None:
                problem = "%s is missing" % info["file"]
            else:
                problem = "%s is not the source the patch was built for (sha256 %s..., expected %s...): edited or reinstalled?" % (
                    info["file"], now[:12], info["sha256_original"][:12])
            break
    STATE["groups"][key] = problem
    return problem


def patched_source(data, entry, root):
    """(source, None) when the module may be patched at `root`, else (None, why)."""
    problem = group_problem(data, entry, root)
    if problem:
        return None, problem
    source = entry.get("source")
    import hashlib

    if not isinstance(source, str) or hashlib.sha256(source.encode("utf-8")).hexdigest() != entry.get("sha256_patched"):
        return None, "the stored patched source is damaged (sha256 mismatch in %s); run compat plugin install again" % DATA_FILE
    return source, None


def remember_lines(path, source):
    """Tracebacks and inspect read the patched lines, not the file's (mtime None: linecache keeps them)."""
    import linecache

    linecache.cache[path] = (len(source), None, source.splitlines(True), path)


def forget_lines(path):
    import linecache

    linecache.cache.pop(path, None)


def set_env(env, name):
    """Variables the patched module needs in this process (e.g. vLLM's compile cache off: it is keyed
    by the files on disk, which the plugin does not change); never overrides what the user set."""
    for key, value in sorted(env.items()):
        if key not in os.environ:
            os.environ[key] = value
            say(key, "set %s=%s in this process: %s is patched in memory and the engine's compile cache is keyed "
                "by the file on disk" % (key, value, name))


def reset_namespace(module):
    keep = ("__name__", "__spec__", "__loader__", "__file__", "__path__", "__package__", "__cached__", "__builtins__")
    for name in list(vars(module)):
        if name not in keep:
            delattr(module, name)


class PatchedLoader(SourceFileLoader):
    """The engine's own file name and package layout; the code is compiled from the patched source."""

    def __init__(self, fullname, path, source, original, entry):
        SourceFileLoader.__init__(self, fullname, path)
        self.source = source
        self.original = original
        self.entry = entry

    def get_source(self, fullname):
        return self.source

    def get_code(self, fullname):
        return compile(self.source, self.path, "exec", dont_inherit=True)

    def set_data(self, path, data, *args, **kwargs):
        pass  # never write bytecode: a pyc beside the original would serve patched code without the plugin

    def exec_module(self, module):
        try:
            code = self.get_code(module.__name__)
        except Exception as err:
            say(module.__name__, "the patched source does not compile here (%s): imported unpatched" % err)
            return self.run_original(module)
        remember_lines(self.path, self.source)
        set_env(self.entry.get("env") or {}, module.__name__)
        setattr(module, MARK, {"patches": list(self.entry.get("patches", [])), "sha256_patched": self.entry.get("sha256_patched")})
        try:
            exec(code, module.__dict__)
        except Exception as err:
            say(module.__name__, "the patched module raised %s: %s; ran the original instead" % (type(err).__name__, err))
            forget_lines(self.path)
            reset_namespace(module)
            return self.run_original(module)
        say(module.__name__, "%s patched in memory (%s) in pid %d" % (module.__name__, ", ".join(self.entry.get("patches", [])),
                                                                        os.getpid()), level="info")

    def run_original(self, module):
        module.__loader__ = self.original
        if module.__spec__ is not None:
            module.__spec__.loader = self.original
        return self.original.exec_module(module)


class PatchFinder:
    """First on sys.meta_path: hands out patched specs for the modules in plugin.json, else steps aside."""

    compat_plugin_engine = ENGINE

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ENGINE and not fullname.startswith(ENGINE + "."):
            return None
        if os.environ.get(DISABLE_ENV):
            return None
        try:
            return self.patched_spec(fullname, path, target)
        except Exception as err:  # a failure of the plugin never breaks the engine's import
            say(fullname, "internal error (%s: %s): %s imported unpatched" % (type(err).__name__, err, fullname))
            return None

    def patched_spec(self, fullname, path, target):
        data = load_data()
        entry = data and data["modules"].get(fullname)
        if not entry:
            return None
        spec = self.original_spec(fullname, path, target)
        if spec is None or not isinstance(spec.loader, SourceFileLoader) or not spec.origin:
            if spec is not None:
                say(fullname, "%s is not loaded from a source file here: left alone" % fullname)
            return None
        root = engine_root(spec.origin, entry["file"])
        if root is None:
            say(fullname, "%s comes from %s, not a file at %s: left alone" % (fullname, spec.origin, entry["file"]))
            return None
        source, why = patched_source(data, entry, root)
        if source is None:
            say(fullname, "%s left alone: %s" % (fullname, why))
            return None
        loader = PatchedLoader(fullname, spec.origin, source, spec.loader, entry)
        new = ModuleSpec(fullname, loader, origin=spec.origin, is_package=spec.submodule_search_locations is not None)
        if spec.submodule_search_locations is not None:
            new.submodule_search_locations = list(spec.submodule_search_locations)
        new.has_location = True
        return new

    def original_spec(self, fullname, path, target):
        for finder in sys.meta_path:
            if ENGINE in (getattr(finder, "compat_plugin_engine", None), getattr(finder, "compat_plugin_hook", None)) \
                    or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self):
        STATE["groups"].clear()


def install():
    """Put the finder first on sys.meta_path (idempotent). Called by the .pth file at start-up."""
    try:
        if not any(getattr(f, "compat_plugin_engine", None) == ENGINE for f in sys.meta_path):
            sys.meta_path.insert(0, PatchFinder())
    except Exception:
        pass


def hook_spec(fullname, path=None, target=None):
    """The .pth hook's hand-over at the engine's first import: the finder goes first on sys.meta_path and
    answers this import (None: the import goes on to the other finders, stock)."""
    install()
    for finder in sys.meta_path:
        if getattr(finder, "compat_plugin_engine", None) == ENGINE:
            return finder.find_spec(fullname, path, target)
    return None


def register():
    """vLLM's `vllm.general_plugins` entry point: in every engine process, after vLLM is imported."""
    try:
        install()
        data = load_data()
        for name in sorted((data or {}).get("modules", {})):
            module = sys.modules.get(name)
            if module is not None and not hasattr(module, MARK):
                say(name, "%s was imported before the plugin could patch it (the .pth hook did not run in this process?): "
                    "left as is" % name)
    except Exception:
        pass


def diagnose(root=None):
    """What the finder would do for each module, without importing the engine (for compat plugin status)."""
    data = load_data()
    out: dict = {"engine": ENGINE, "data": DATA_FILE, "readable": data is not None, "modules": {},
           "hook_active": any(ENGINE in (getattr(f, "compat_plugin_engine", None), getattr(f, "compat_plugin_hook", None))
                              for f in sys.meta_path),
           "disabled": bool(os.environ.get(DISABLE_ENV))}
    if data is None:
        return out
    root = root or data.get("root")
    for name, entry in sorted(data["modules"].items()):
        module = sys.modules.get(name)
        source, why = patched_source(data, entry, root)
        out["modules"][name] = {"file": entry["file"], "patch": source is not None, "why": why,
                                "imported_patched": module is not None and hasattr(module, MARK)}
    return out


def check_image():
    """Run by `compat plugin manifest`'s init container with the image's own python, the plugin on PYTHONPATH: does
    each module the plugin patches hold here the very source it was built on, and is the import hook on? 0 when so
    (one line per module); else 1, with why, so the pod does not start on an engine the plugin would leave alone."""
    from importlib.util import find_spec

    data = load_data()
    spec = find_spec(ENGINE) if data is not None else None
    if data is None or spec is None or not spec.submodule_search_locations:
        print("compat plugin (%s): %s" % (ENGINE, "no readable plugin.json" if data is None else "no %s in this image" % ENGINE))
        return 1
    root = os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))
    found = diagnose(root)
    failed = 0
    for name, module in found["modules"].items():
        print("compat plugin (%s): %s %s" % (ENGINE, name, "patched at import" if module["patch"] else "NOT patched: %s" % module["why"]))
        failed += not module["patch"]
    if not found["hook_active"]:
        print("compat plugin (%s): the import hook is off (the sitecustomize of the plugin's directory did not run)" % ENGINE)
        failed += 1
    return 1 if failed else 0
