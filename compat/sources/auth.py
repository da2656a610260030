"""Credentials and trust for the package index: pip's `network/auth.py` in miniature.

Credentials written into an index URL (`https://user:token@host/simple/`) are taken out of the URL and
kept here, by host, for the requests network.py makes to that host only; they are never stored in the
cache or shown. The CA bundle pip is told to use (`cert` in pip.conf, PIP_CERT) is kept here too. State
is per process; index.py fills it when it reads pip's configuration.
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["remember_credentials", "credentials_for", "forget_credentials", "use_ca_bundle", "ca_bundle"]

_CREDENTIALS: dict[str, str] = {}  # host -> Authorization header value
_CAFILE: list[str | None] = [None]


def remember_credentials(url: str) -> str:
    """The URL without `user:password@`; the credentials are kept for requests to that host."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
    _CREDENTIALS[host] = f"Basic {token}"
    return urlunsplit(parts._replace(netloc=host))


def credentials_for(url: str) -> str | None:
    """The Authorization header for the host of `url`, if its index URL carried credentials."""
    return _CREDENTIALS.get(urlsplit(url).netloc)


def forget_credentials() -> None:
    _CREDENTIALS.clear()


def use_ca_bundle(cafile: str | None) -> None:
    """Trust this CA bundle for https (None: the system's)."""
    _CAFILE[0] = cafile


def ca_bundle() -> str | None:
    return _CAFILE[0]
