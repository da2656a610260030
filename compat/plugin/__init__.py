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

__all__ = ["bake", "check_target", "install", "installed_plugins", "plugin_command", "remove", "state", "status", "package_name"]


from compat.plugin.names import package_name


def state(tree, site_dirs=()) -> dict | None:
    """The plugin beside this tree (compat probe): a directory check first, so a probe without a plugin
    imports nothing of plugin mode."""
    from pathlib import Path

    if not any((Path(site) / package_name(tree.engine)).is_dir() for site in [tree.root, *site_dirs]):
        return None
    from compat.plugin.manage import state as read_state

    return read_state(tree, site_dirs)


def __getattr__(name: str):
    if name in ("bake", "check_target", "install", "installed_plugins", "plugin_command", "remove", "status"):
        from compat.plugin import manage

        return getattr(manage, name)
    raise AttributeError(name)
