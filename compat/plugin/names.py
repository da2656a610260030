"""The names plugin mode writes into a serving environment (shared by the probe's cheap check and the writer)."""


def package_name(engine: str) -> str:
    """The import name of the plugin's own package in the serving environment."""
    return f"compat_plugin_{engine}"
