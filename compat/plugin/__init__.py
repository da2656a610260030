"""Plugin mode: compat's patches applied in memory, at import time, in every engine process.

`compat plugin install` writes a small distribution of its own into the serving environment
(dist.py) carrying the patched source of each module, computed here by the patches' own
transforms (build.py); the runtime there (runtime.py, stdlib only) checks each file's hash and
compiles the stored source under the module's real file name. No engine file is changed, and the
serving venv needs neither compat nor libcst.

What other parts call:
    state(tree) -> dict | None                  the plugin beside an engine tree (compat probe)
    installed_plugins(python=None) -> list      every plugin in an environment (compat env)
    plugin_command(engine, ids, model_types, python=..., path=...) -> str   the fix line (doctor)
"""

from compat.plugin.manage import install, installed_plugins, plugin_command, remove, state, status

__all__ = ["install", "installed_plugins", "plugin_command", "remove", "state", "status"]
