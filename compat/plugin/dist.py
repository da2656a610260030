"""The plugin as a distribution of its own in the serving environment's site-packages.

    compat_plugin_<engine>/__init__.py          the runtime (runtime.py, copied verbatim)
    compat_plugin_<engine>/plugin.json          the patched sources and hashes (build.py)
    compat_plugin_<engine>.pth                  `install()` at interpreter start-up: the import hook
    compat_plugin_<engine>-<v>.dist-info/       METADATA, INSTALLER, RECORD (every file, sha256),
                                                entry_points.txt (vLLM: vllm.general_plugins)

A real dist-info, so `pip uninstall compat-plugin-<engine>` removes it as well as `compat plugin
remove`. Writing is in an order that is safe to kill at any instant: the package and the dist-info
go in under temporary names and are renamed into place, the `.pth` (which turns the hook on) is
written last and removed first. Only these names are ever written or removed.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from compat import __version__, engines
from compat.core import atomic
from compat.core.errors import RefusedError
from compat.core.interpreter import Interpreter
from compat.core.locking import directory_lock

RUNTIME = Path(__file__).with_name("runtime.py")
DATA_NAME = "plugin.json"
LOCK_TIMEOUT = 60.0


from compat.plugin.names import package_name  # noqa: E402,F401  (one spelling of the name)


def distribution_name(engine: str) -> str:
    return f"compat-plugin-{engine}"


# What the .pth runs at every interpreter start of the serving venv (pip, engine workers, any script): a
# finder that only compares a module name until the engine itself is imported; then it steps aside and
# hands that import to the runtime (runtime.py's `hook_spec`), imported only then. Anything going wrong
# (the runtime missing or broken, an exception inside it) is one line on stderr and the engine stock;
# nothing of it can stop the interpreter (site.py would print a traceback for a failing .pth line).
HOOK = """
import sys
class CompatPluginHook:
    compat_plugin_hook = ENGINE
    def find_spec(self, name, path=None, target=None):
        if name != ENGINE and not name.startswith(ENGINE + "."):
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            import os
            if os.environ.get("COMPAT_PLUGIN_DISABLE"):
                return None
            import PACKAGE as runtime
            return runtime.hook_spec(name, path, target)
        except (Exception, SystemExit) as err:
            try:
                sys.stderr.write("compat plugin (%s): cannot load PACKAGE (%s: %s): %s runs stock; run compat plugin "
                                 "install again, or remove %s\\n" % (ENGINE, type(err).__name__, err, ENGINE, PTH))
            except Exception:
                pass
            return None
try:
    if not any(getattr(f, "compat_plugin_hook", None) == ENGINE for f in sys.meta_path):
        sys.meta_path.insert(0, CompatPluginHook())
except Exception:
    pass
"""


def pth_line(engine: str, pth: Path | None = None) -> str:
    """The .pth's one line (site.py executes a line that starts with `import`): the hook above, compiled in a
    namespace of its own."""
    code = HOOK.replace("PACKAGE", package_name(engine)).strip() + "\n"
    names = {"__name__": f"{package_name(engine)}_hook", "ENGINE": engine, "PTH": str(pth or f"{package_name(engine)}.pth")}
    return f"import sys; exec({code!r}, {names!r})\n"


def site_packages(python: Interpreter | str | None) -> Path:
    """The purelib directory of `python` (a python or a venv directory; default: this interpreter): where its
    .pth files are read. Asked of it, so a venv of another Python version answers for itself."""
    return Interpreter.of(python).purelib


def _dist_infos(site: Path, engine: str) -> list[Path]:
    return sorted(site.glob(f"{package_name(engine)}-*.dist-info"))


def _our_paths(site: Path, engine: str) -> list[Path]:
    """Every top-level name of ours in `site`, including leftovers of an interrupted run and any other
    top-level name our RECORD lists (never a name that is not ours: each starts with the package name)."""
    name = package_name(engine)
    found = [site / f"{name}.pth", site / name]
    for info in _dist_infos(site, engine):
        found += [site / top for top in _record_tops(info) if top.startswith(name)]
        found.append(info)
    found += sorted(site.glob(f".{name}*.compat-tmp"))
    return [p for p in dict.fromkeys(found) if p.exists() or p.is_symlink()]


def _record_tops(info: Path) -> list[str]:
    try:
        rows = (info / "RECORD").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    tops = []
    for row in rows:
        rel = row.rsplit(",", 2)[0] if row.count(",") >= 2 else row
        top = rel.replace("\\", "/").split("/")[0]
        if top and top not in (".", "..") and not os.path.isabs(rel):
            tops.append(top)
    return tops


def is_installed(site: Path, engine: str) -> bool:
    return (site / package_name(engine) / DATA_NAME).is_file() or bool(_dist_infos(site, engine))


def read_data(site: Path, engine: str) -> dict | None:
    """plugin.json as installed, or None; a damaged file is reported as such, not raised."""
    path = site / package_name(engine) / DATA_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        return {"damaged": f"{path}: {err}"}
    return data if isinstance(data, dict) else {"damaged": f"{path}: not a JSON object"}


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _files(site: Path, engine: str, data: dict) -> dict[str, bytes]:
    """relpath (under site-packages) -> bytes, every file of the distribution but RECORD."""
    name, dist = package_name(engine), f"{package_name(engine)}-{__version__}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        f"Name: {distribution_name(engine)}\n"
        f"Version: {__version__}\n"
        f"Summary: compat's patches for {data.get('distribution') or engine} {data.get('engine_version')}, applied in memory at import time\n"
        "Requires-Python: >=3.8\n"
    )
    files = {
        f"{name}/__init__.py": RUNTIME.read_bytes(),
        f"{name}/{DATA_NAME}": (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"),
        f"{dist}/METADATA": metadata.encode(),
        f"{dist}/INSTALLER": b"compat\n",
        f"{dist}/top_level.txt": f"{name}\n".encode(),
        f"{name}.pth": pth_line(engine, site / f"{name}.pth").encode(),
    }
    group = engines.get(engine).plugin_entry_point  # vLLM: vllm.general_plugins; SGLang: none (the .pth hook only)
    if group:
        files[f"{dist}/entry_points.txt"] = f"[{group}]\ncompat = {name}:register\n".encode()
    return files


def _record(files: dict[str, bytes], dist: str) -> bytes:
    rows = [f"{rel},{_hash(data)},{len(data)}" for rel, data in sorted(files.items())]
    rows.append(f"{dist}/RECORD,,")
    return ("\n".join(rows) + "\n").encode()


@contextlib.contextmanager
def site_lock(site: Path, timeout: float | None = None, notify=None):
    """An exclusive flock on the site-packages directory: one plugin install/remove at a time (another is
    waited for up to LOCK_TIMEOUT seconds, then refused naming its pid: compat/core/locking.py)."""
    with directory_lock(site, what="compat plugin", timeout=LOCK_TIMEOUT if timeout is None else timeout, notify=notify):
        yield


def check_writable(site: Path) -> None:
    if not site.is_dir():
        raise RefusedError(f"{site} does not exist", hint="pass the serving venv's python with --python")
    if not os.access(site, os.W_OK):
        raise RefusedError(f"{site} is not writable; nothing was changed",
                           hint="run compat plugin as the user that owns the environment (or with sudo for a system-wide one)")


def files_of(site: Path, engine: str, data: dict) -> dict[str, bytes]:
    """Every file of the plugin in a directory of its own (`site`, where it will be: --target, or a pod's volume):
    the distribution with its RECORD, and the sitecustomize that turns it on from PYTHONPATH."""
    files = _files(site, engine, data)
    dist = f"{package_name(engine)}-{__version__}.dist-info"
    files[f"{dist}/RECORD"] = _record(files, dist)
    files["sitecustomize.py"] = SITECUSTOMIZE.encode()
    return files


def write(site: Path, engine: str, data: dict) -> list[str]:
    """Install the distribution (replacing an earlier one of ours); returns the files written."""
    files = _files(site, engine, data)
    dist = f"{package_name(engine)}-{__version__}.dist-info"
    files[f"{dist}/RECORD"] = _record(files, dist)
    remove(site, engine)
    staged = {}
    try:
        for top in (package_name(engine), dist):
            tmp = Path(tempfile.mkdtemp(prefix=f".{top}.", suffix=".compat-tmp", dir=site))
            staged[top] = tmp
            for rel, content in files.items():
                if rel.startswith(top + "/"):
                    (tmp / rel[len(top) + 1:]).write_bytes(content)
            os.chmod(tmp, 0o755)
        for top, tmp in staged.items():
            _place(tmp, site / top)
        _write_atomic(site / f"{package_name(engine)}.pth", files[f"{package_name(engine)}.pth"])
    except BaseException:
        remove(site, engine)
        raise
    return sorted(files)


# A starting interpreter can re-create the package directory after remove() moved it aside: CPython's
# SourceFileLoader.set_data makes every missing parent of the __pycache__ file it writes. It holds no lock
# of ours (any python of the venv runs the .pth), so the directory found in the way is that cache only.
PLACE_ATTEMPTS = 5


def _place(tmp: Path, dest: Path) -> None:
    """Rename the staged directory `tmp` to `dest`, clearing a bytecode cache written into `dest` meanwhile."""
    for _ in range(PLACE_ATTEMPTS - 1):
        try:
            os.replace(tmp, dest)
            return
        except OSError as err:
            if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        _remove_tree(dest)
    os.replace(tmp, dest)


def _write_atomic(path: Path, content: bytes) -> None:
    atomic.write_bytes(path, content, keep_mode=False, mode=0o644, suffix=".compat-tmp")


def remove(site: Path, engine: str) -> list[str]:
    """Remove every file of ours (the .pth first: the hook is off before anything else goes)."""
    removed = []
    for path in _our_paths(site, engine):
        if path.is_dir() and not path.is_symlink():
            removed += sorted(str(p.relative_to(site)) for p in path.rglob("*") if p.is_file())
            _remove_tree(path)
        else:
            removed.append(str(path.relative_to(site)))
            path.unlink()
    return removed


# In a directory of its own (compat plugin install --target) the plugin is on PYTHONPATH, where site.py reads no
# .pth file: this sitecustomize (imported by site.py at every start, from the first sys.path entry that has one)
# reads the directory's .pth files with site.addsitedir, then runs the sitecustomize the image has of its own, if any.
# The vllm.general_plugins entry point needs nothing of it: importlib.metadata reads dist-infos on sys.path.
SITECUSTOMIZE = '''"""compat plugin (compat plugin install --target): turns on the compat plugins of this directory in every
interpreter started with it on PYTHONPATH, then runs the environment's own sitecustomize, if there is one."""
import os
import site
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
try:
    site.addsitedir(_HERE)  # the compat_plugin_<engine>.pth files: the import hook
except Exception as err:  # never in the way of the interpreter
    sys.stderr.write("compat plugin: cannot read the .pth files of %s: %s\\n" % (_HERE, err))
try:
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    _spec = PathFinder.find_spec("sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _HERE])
    if _spec is not None and _spec.loader is not None:
        _module = module_from_spec(_spec)
        _spec.loader.exec_module(_module)
except Exception as err:
    sys.stderr.write("compat plugin: the environment's own sitecustomize failed: %s\\n" % (err,))
'''


def write_sitecustomize(directory: Path) -> str:
    _write_atomic(directory / "sitecustomize.py", SITECUSTOMIZE.encode())
    return "sitecustomize.py"


def _remove_tree(path: Path) -> None:
    """Renamed out of the way first (one atomic step), then deleted: an interpreter starting meanwhile finds
    the package whole or not at all, never half deleted; a kill mid-way leaves a `.compat-tmp` name that
    the next install or remove clears."""
    if not path.name.endswith(".compat-tmp"):
        aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".compat-tmp", dir=path.parent))
        os.replace(path, aside / path.name)
        path = aside
    shutil.rmtree(path)


def listing(site: Path, engine: str) -> list[str]:
    """The files of ours that are there now (for status)."""
    out = []
    for path in _our_paths(site, engine):
        out += [str(p.relative_to(site)) for p in path.rglob("*") if p.is_file()] if path.is_dir() else [str(path.relative_to(site))]
    return sorted(out)
