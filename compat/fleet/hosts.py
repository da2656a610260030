"""The hosts a fleet run reaches: `--host [user@]HOST[:PORT]` (repeatable) and `--hosts FILE`.

A host is kept as the user wrote it (that is how the table and the JSON name it) and split into the
user, the host and the port; what is not given comes from ~/.ssh/config (HostName, User, Port,
IdentityFile, UserKnownHostsFile), as ssh itself would take it. A hosts file holds one host per line,
`#` starts a comment, blank lines are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from compat.core.errors import RefusedError, UsageError


@dataclass(frozen=True)
class Host:
    """One remote host: `spec` as given; `user` and `port` None when ~/.ssh/config (or ssh's defaults) decide."""

    spec: str
    hostname: str
    user: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        return self.spec


def parse_host(spec: str, *, where: str = "--host") -> Host:
    """`alice@gpu1:2222` -> Host(user alice, gpu1, port 2222); `[::1]:22` for an IPv6 address with a port."""
    text = spec.strip()
    user, at, rest = text.rpartition("@")
    if not at:
        user, rest = "", text
    port: str | None = None
    if rest.startswith("["):
        host, close, tail = rest[1:].partition("]")
        if not close or (tail and not tail.startswith(":")):
            raise UsageError(f"{where} {spec!r}: expected [ADDRESS]:PORT", hint="e.g. --host '[::1]:2222'")
        port = tail[1:] or None
    elif rest.count(":") == 1:
        host, _, port = rest.partition(":")
    else:
        host = rest
    if not host or (at and not user) or any(c.isspace() for c in text):
        raise UsageError(f"{where} {spec!r}: expected [user@]HOST[:PORT]", hint="e.g. --host gpu1 --host alice@gpu2:2222")
    if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
        raise UsageError(f"{where} {spec!r}: the port must be a number from 1 to 65535")
    return Host(text, host, user or None, int(port) if port else None)


def read_hosts_file(path: str) -> list[Host]:
    """The hosts of FILE, one per line; an unreadable file or a bad line is a usage error naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise UsageError(f"--hosts {path}: no such file, cannot read it", hint="a text file with one [user@]HOST[:PORT] per line") from None
    except (OSError, UnicodeDecodeError) as err:  # there, but not a text file to read: 4
        raise RefusedError(f"--hosts {path}: cannot read it ({getattr(err, 'strerror', None) or err})",
                         hint="a text file with one [user@]HOST[:PORT] per line") from None
    hosts = []
    for number, line in enumerate(lines, 1):
        word = line.split("#", 1)[0].strip()
        if word:
            hosts.append(parse_host(word, where=f"--hosts {path} line {number}:"))
    if not hosts:
        raise UsageError(f"--hosts {path}: no host in it", hint="one [user@]HOST[:PORT] per line")
    return hosts


def hosts_of(given: list[str], files: list[str]) -> list[Host]:
    """Every host of --host and --hosts, each once, in the order given."""
    hosts = [parse_host(spec) for spec in given] + [h for path in files for h in read_hosts_file(path)]
    return list({h.spec: h for h in hosts}.values())
