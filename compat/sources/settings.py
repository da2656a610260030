"""How compat talks to the package index, settled once per request the way pip settles it.

Every value comes from, highest first: the command line (`--index-url`, `--retries`, `--timeout`, kept by
`configure` for the process), pip's environment variables (`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`,
`PIP_RETRIES`, `PIP_TIMEOUT`, `PIP_CERT`, `PIP_CLIENT_CERT`, `PIP_PROXY`), pip's config files (the same keys
in `[global]`, `[install]`, `[download]`; pip itself is never run: it takes seconds to start), then pip's
defaults (PyPI, 5 retries, 15 s). Trust: `cert` (PIP_CERT), else `REQUESTS_CA_BUNDLE` / `CURL_CA_BUNDLE` (what
pip's requests honours), else the system's (OpenSSL's, which honours `SSL_CERT_FILE` / `SSL_CERT_DIR`).
Proxies: `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` (urllib reads them as requests does), or `proxy` for all.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from compat.core.errors import SourceError, UsageError

__all__ = ["DEFAULT_INDEX", "DEFAULT_RETRIES", "DEFAULT_TIMEOUT", "NetworkOptions", "configure", "pip_config"]

DEFAULT_INDEX = "https://pypi.org/simple/"
DEFAULT_RETRIES = 5  # pip's --retries
DEFAULT_TIMEOUT = 15.0  # pip's --timeout, seconds per socket operation (connect, each read)
_GIVEN: dict[str, object] = {}  # what the command line said, for this process (see configure)


def _pip_config_files() -> list[Path]:
    """pip's files, lowest priority first: global, user (skipped when PIP_CONFIG_FILE exists), site, PIP_CONFIG_FILE."""
    env_file = os.environ.get("PIP_CONFIG_FILE")
    if env_file == os.devnull:  # pip's documented way to ignore every config file
        return []
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(os.pathsep) if d]
    files.append(Path("/etc/pip.conf"))
    if not (env_file and os.path.exists(env_file)):
        config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        files += [Path.home() / ".pip" / "pip.conf", Path(config_home) / "pip" / "pip.conf"]
    files.append(Path(os.environ.get("VIRTUAL_ENV") or sys.prefix) / "pip.conf")
    if env_file:
        files.append(Path(env_file))
    return files


def pip_config() -> dict[str, str]:
    """`index-url`, `extra-index-url`, `cert`, `retries`, ... as pip would see them for `pip download`/`install`."""
    from configparser import ConfigParser
    from configparser import Error as ConfigError

    values: dict[str, str] = {}
    for path in _pip_config_files():
        if not path.is_file():
            continue
        parser = ConfigParser(interpolation=None)
        try:
            parser.read(path, encoding="utf-8")
        except (ConfigError, UnicodeDecodeError, OSError) as err:
            raise SourceError(f"{path}: cannot read this pip config file ({err})", hint="fix or remove it (pip would refuse it too)") from None
        for section in ("global", "install", "download"):  # a command's section overrides [global]
            if parser.has_section(section):
                for key, value in parser.items(section):
                    values[key.replace("_", "-")] = value
    return values


def configure(*, index_url: str | None = None, retries: int | None = None, timeout: float | None = None) -> None:
    """The command line's `--index-url/--retries/--timeout` for every fetch of this process (None: not given)."""
    _GIVEN.clear()
    _GIVEN.update({k: v for k, v in (("index-url", index_url), ("retries", retries), ("timeout", timeout)) if v is not None})


@dataclass(frozen=True)
class NetworkOptions:
    """Where the index is and how to talk to it: one value, handed to every request of a fetch."""

    index_url: str = DEFAULT_INDEX
    extra_index_urls: tuple[str, ...] = ()
    retries: int = DEFAULT_RETRIES
    timeout: float = DEFAULT_TIMEOUT
    cafile: str | None = None  # a CA bundle file, or a folder of hashed certificates (capath)
    client_cert: str | None = None
    proxy: str | None = None  # pip's --proxy: for http and https alike (else the *_PROXY variables)

    @classmethod
    def resolve(cls, *, index_url: str | None = None, retries: int | None = None, timeout: float | None = None) -> NetworkOptions:
        """Arguments, else the command line, else pip's environment variables and config files, else pip's defaults."""
        config = pip_config()

        def pick(key: str, given: object) -> tuple[str, object] | None:
            env = "PIP_" + key.upper().replace("-", "_")
            for where, value in ((f"--{key}", given), (f"--{key}", _GIVEN.get(key)), (env, os.environ.get(env)),
                                 (f"{key} in pip.conf", config.get(key))):
                if value not in (None, ""):
                    return where, value
            return None

        return cls(
            index_url=str((pick("index-url", index_url) or ("", DEFAULT_INDEX))[1]).strip(),
            extra_index_urls=tuple(str((pick("extra-index-url", None) or ("", ""))[1]).split()),
            retries=int(_number(pick("retries", retries), DEFAULT_RETRIES, int)),
            timeout=float(_number(pick("timeout", timeout), DEFAULT_TIMEOUT, float)),
            cafile=_trust(pick("cert", None)),
            client_cert=_existing(pick("client-cert", None)),
            proxy=str((pick("proxy", None) or ("", ""))[1]) or None,
        )


def _number(found: tuple[str, object] | None, default: float, kind: type) -> float:
    if found is None:
        return default
    where, value = found
    try:
        number = kind(value)
    except (TypeError, ValueError):
        number = -1
    if number < 0 or (kind is float and number == 0):
        what = "a whole number of retries, 0 or more" if kind is int else "seconds, more than 0"
        raise UsageError(f"{where}={value!r}: expected {what}", hint=f"e.g. {where.split('=')[0]} " + ("5" if kind is int else "15")
                         if where.startswith("--") else f"fix or unset it (pip's default is {default:g})")
    return number


def _existing(found: tuple[str, object] | None) -> str | None:
    if found is None:
        return None
    where, value = found
    path = os.path.expanduser(str(value))
    if not os.path.exists(path):
        raise SourceError(f"{where}={value}: no such file", hint="point it at an existing PEM file, or unset it (pip would refuse it too)")
    return path


def _trust(found: tuple[str, object] | None) -> str | None:
    """PIP_CERT / cert, else REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (as pip's requests reads them), else None (the system's)."""
    if found is None:
        for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
            if os.environ.get(name):
                found = (name, os.environ[name])
                break
    return _existing(found)
