"""Credentials for the package index: pip's `network/auth.py` in miniature.

Credentials written into an index URL (`https://user:token@host/simple/`) are taken out of the URL and
kept here, by host, for the requests network.py makes to that host only; they are never stored in the
cache or shown. A host without them gets what `~/.netrc` (or the file `NETRC` names) says for it, as
pip's requests does. State is per process; index.py fills it when it settles the indexes.
Trust (CA bundles) and proxies are settings.py's.
"""

from __future__ import annotations

import base64
import os
from urllib.parse import unquote, urlsplit, urlunsplit

__all__ = ["remember_credentials", "credentials_for", "forget_credentials"]

_CREDENTIALS: dict[str, str] = {}  # host -> Authorization header value


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def remember_credentials(url: str) -> str:
    """The URL without `user:password@`; the credentials are kept for requests to that host."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    _CREDENTIALS[host] = _basic(unquote(user), unquote(password))
    return urlunsplit(parts._replace(netloc=host))


def credentials_for(url: str) -> str | None:
    """The Authorization header for the host of `url`: its index URL's credentials, else its netrc entry."""
    parts = urlsplit(url)
    return _CREDENTIALS.get(parts.netloc) or _netrc(parts.hostname or "")


def _netrc(host: str) -> str | None:
    """requests' `get_netrc_auth`: NETRC, else ~/.netrc; a file that does not parse is ignored."""
    import netrc

    path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
    if not host or not os.path.isfile(path):
        return None
    try:
        found = netrc.netrc(path).authenticators(host)
    except (netrc.NetrcParseError, OSError):
        return None
    if not found:
        return None
    login, account, password = found
    return _basic(login or account or "", password or "")


def forget_credentials() -> None:
    _CREDENTIALS.clear()
