"""One host over SSH (asyncssh): connect as the user's ssh would, send the bundle once, run compat there.

The connection honours the user's SSH set-up, as asyncssh reads it: ~/.ssh/config (Host blocks,
HostName, User, Port, IdentityFile, ProxyJump...), the keys in ~/.ssh, the agent (SSH_AUTH_SOCK) and
~/.ssh/known_hosts (that file: a UserKnownHostsFile in the config is not read, as compat looks host keys
up itself to tell an unknown key from a changed one). An unknown host key is refused unless --accept-new-host-keys (ssh's
StrictHostKeyChecking=accept-new: the key is then added to ~/.ssh/known_hosts); a changed key is
always refused. Three commands run on the host, all through its python alone: one asks where the
bundle goes and whether it is there, one (only when it is not) unpacks it from stdin, one runs
`compat COMMAND ... --json` from it.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat.fleet.bundle import START_CODE, Bundle
from compat.fleet.host_cache import BUNDLE_MAX_AGE_S, PRUNE_SOURCE
from compat.fleet.hosts import Host
from compat.fleet.outcome import EXIT_HOST_KEY, EXIT_UNREACHABLE, Outcome, failed, from_output

MIN_PYTHON = (3, 10)

# Where the bundle is unpacked on the host, and is it there (bundles unused for long are pruned meanwhile:
# compat/fleet/host_cache.py): stdlib only, any Python 3.
_WHERE = PRUNE_SOURCE + r"""
import json, os, platform, sys
xdg = os.environ.get("XDG_CACHE_HOME", "")
root = os.path.join(xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache"), "compat", "fleet")
d = os.path.join(root, sys.argv[1])
prune_bundles(root, [sys.argv[1]], float(sys.argv[2]))
print(json.dumps({"python": sys.executable, "version": list(sys.version_info[:3]), "dir": d,
                  "have": os.path.isfile(os.path.join(d, "compat", "cli.py"))}))
"""

# Unpack the bundle read from stdin into its directory, atomically (a rename), after checking its hash.
_UNPACK = r"""
import hashlib, io, os, shutil, sys, tempfile, zipfile
d, want = sys.argv[1], sys.argv[2]
data = sys.stdin.buffer.read()
if hashlib.sha256(data).hexdigest() != want:
    sys.exit("the bundle arrived damaged (%d bytes, sha256 differs)" % len(data))
os.makedirs(os.path.dirname(d), exist_ok=True)
t = tempfile.mkdtemp(dir=os.path.dirname(d), prefix=".unpack-")
zipfile.ZipFile(io.BytesIO(data)).extractall(t)
try:
    os.rename(t, d)
except OSError:
    shutil.rmtree(t, ignore_errors=True)  # unpacked meanwhile by another run
"""

# Run compat from the unpacked bundle; the working directory (the login's home) stays, for relative paths,
# but leaves sys.path: a folder there must not shadow a package.
# The compiled dependencies shipped for this host's ABI go last: the host's own copies win.
@dataclass(frozen=True)
class SshOptions:
    accept_new_host_keys: bool = False
    connect_timeout: float = 15.0
    command_timeout: float | None = None


def asyncssh_module():
    """asyncssh, imported without the deprecation warnings a newer cryptography prints for its DSA support (they
    would land in the user's output on every --host run; compat offers no DSA key)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*DSA.*", category=UserWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="asyncssh.*")
        import asyncssh
    return asyncssh


def _python_word(python: str | None) -> str:
    """The remote interpreter as a shell word: `~/x` expands on the host, a venv directory means its bin/python."""
    if not python:
        return "python3"
    if python == "~" or python.startswith("~/"):
        return '"$HOME"' + (shlex.quote(python[1:]) if len(python) > 1 else "")
    return shlex.quote(python)


def _command(python: str | None, code: str, args: list[str]) -> str:
    return (f"p={_python_word(python)}; [ -d \"$p\" ] && p=\"$p/bin/python\"; "
            f"exec \"$p\" -E -c {shlex.quote(code)} " + " ".join(shlex.quote(a) for a in args))


def _known_hosts_file() -> Path:
    return Path("~", ".ssh", "known_hosts").expanduser()


class _KnownHosts:
    """asyncssh's known_hosts lookup (the user's ~/.ssh/known_hosts), watched: which name, address and port
    the host key was looked up under (the HostName ~/.ssh/config resolved, as ssh records it), and whether
    known_hosts holds any key for it (then a mismatch is a changed key, never accepted)."""

    def __init__(self) -> None:
        self.asked: tuple[str, str, int | None] | None = None
        self.known = False

    def __call__(self, host: str, addr: str, port: int | None):
        asyncssh = asyncssh_module()

        self.asked = (host, addr, port)
        path = _known_hosts_file()
        table = asyncssh.read_known_hosts(str(path)) if path.is_file() else asyncssh.import_known_hosts("")
        found = table.match(host, addr, port)
        self.known = bool(found[0] or found[1] or found[2])
        return found


def _remember(host: str, port: int | None, key: Any) -> None:
    """Add the host key to ~/.ssh/known_hosts, as ssh's accept-new does (`[host]:port` off port 22)."""
    path = _known_hosts_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    name = host if port in (None, 22) else f"[{host}]:{port}"
    kind, data = key.export_public_key("openssh").decode().split()[:2]
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"{name} {kind} {data}\n")


class HostKeyRefused(Exception):
    def __init__(self, host: Host, reason: str, changed: bool):
        super().__init__(reason)
        self.host, self.reason, self.changed = host, reason, changed


async def _connect(host: Host, options: SshOptions):
    asyncssh = asyncssh_module()

    kwargs: dict[str, Any] = {"connect_timeout": options.connect_timeout}
    if host.port:
        kwargs["port"] = host.port
    if host.user:
        kwargs["username"] = host.user
    watch = _KnownHosts()
    try:
        return await asyncssh.connect(host.hostname, known_hosts=watch, **kwargs)
    except asyncssh.HostKeyNotVerifiable as err:
        if watch.known or watch.asked is None or not options.accept_new_host_keys:
            raise HostKeyRefused(host, err.reason, changed=watch.known) from None
    name, _, port = watch.asked
    import asyncio

    key = await asyncio.wait_for(asyncssh.get_server_host_key(name, port or 22), options.connect_timeout)
    if key is None:
        raise HostKeyRefused(host, "the server showed no host key", changed=False)
    _remember(name, port, key)
    return await asyncssh.connect(host.hostname, known_hosts=_KnownHosts(), **kwargs)


def _connection_error(host: Host, err: BaseException) -> Outcome:
    asyncssh = asyncssh_module()

    name = host.spec
    if isinstance(err, HostKeyRefused):
        if err.changed:
            return failed(name, f"{name}: the host key differs from the one in known_hosts ({err.reason})",
                          "if the host was reinstalled, remove its old key (ssh-keygen -R HOST) and connect once", EXIT_HOST_KEY)
        return failed(name, f"{name}: unknown host key ({err.reason})",
                      "check the key and add it (ssh HOST once), or pass --accept-new-host-keys", EXIT_HOST_KEY)
    if isinstance(err, asyncssh.PermissionDenied):
        return failed(name, f"{name}: login refused ({err.reason})",
                      "check the user and the key (ssh HOST must log in without a password prompt)", EXIT_HOST_KEY)
    if isinstance(err, asyncssh.Error):
        return failed(name, f"{name}: SSH failed ({err.reason})", "check that ssh HOST works", EXIT_UNREACHABLE)
    if isinstance(err, asyncssh.packet.PacketDecodeError):  # a ValueError, not an asyncssh.Error
        return failed(name, f"{name}: SSH failed (the server sent a malformed packet: {err})",
                      "check that sshd (not another service) listens on that port", EXIT_UNREACHABLE)
    if isinstance(err, TimeoutError):
        return failed(name, f"{name}: no answer within the connect timeout", "check that the host is up and reachable", EXIT_UNREACHABLE)
    why = "connection refused" if isinstance(err, ConnectionRefusedError) else getattr(err, "strerror", None) or err
    return failed(name, f"{name}: cannot connect ({why})",
                  "check the host name and port, and that sshd runs there", EXIT_UNREACHABLE)


async def run_on_host(host: Host, words: list[str], python: str | None, bundle: Bundle, options: SshOptions) -> Outcome:
    """`compat WORDS --json` on `host` with `python` (default python3 there)."""
    asyncssh = asyncssh_module()

    started = time.monotonic()
    try:
        conn = await _connect(host, options)
    except (OSError, asyncssh.Error, asyncssh.packet.PacketDecodeError, TimeoutError, HostKeyRefused) as err:
        outcome = _connection_error(host, err)
        outcome.seconds = time.monotonic() - started
        return outcome
    try:
        async with conn:
            outcome = await _run(conn, host, words, python, bundle, options)
    except (OSError, asyncssh.Error, asyncssh.packet.PacketDecodeError) as err:
        outcome = _connection_error(host, err)
    except TimeoutError:
        outcome = failed(host.spec, f"{host.spec}: compat did not finish within {options.command_timeout} s",
                         "raise --command-timeout, or run it there with -v", EXIT_UNREACHABLE)
    outcome.seconds = time.monotonic() - started
    return outcome


async def _run(conn, host: Host, words: list[str], python: str | None, bundle: Bundle, options: SshOptions) -> Outcome:
    import json

    where = await conn.run(_command(python, _WHERE, [bundle.short, str(BUNDLE_MAX_AGE_S)]),
                           timeout=options.connect_timeout * 4)
    if where.exit_status != 0:
        return _no_python(host, python, where.exit_status, str(where.stderr))
    place = json.loads(str(where.stdout).strip().splitlines()[-1])
    if tuple(place["version"]) < MIN_PYTHON:
        version = ".".join(map(str, place["version"]))
        return failed(host.spec, f"{host.spec}: {place['python']} is Python {version}; compat needs 3.10 or newer",
                      "--python the serving venv's python (3.10+) on that host", EXIT_UNREACHABLE)
    if not place["have"]:
        sent = await conn.run(_command(python, _UNPACK, [place["dir"], bundle.sha256]), input=bundle.path.read_bytes(),
                              encoding=None, timeout=options.connect_timeout * 20)
        if sent.exit_status != 0:
            return failed(host.spec, f"{host.spec}: could not unpack compat into {place['dir']}: "
                          f"{sent.stderr.decode(errors='replace').strip()[-300:]}", "check the space and rights in that folder",
                          EXIT_UNREACHABLE)
    done = await conn.run(_command(python, START_CODE, [place["dir"], *words]), timeout=options.command_timeout)
    return from_output(host.spec, done.exit_status if done.exit_status is not None else 1, str(done.stdout), str(done.stderr))


def _no_python(host: Host, python: str | None, status: int | None, stderr: str) -> Outcome:
    said = " ".join(stderr.strip().splitlines()[-2:])[-300:]
    if status in (126, 127):
        return failed(host.spec, f"{host.spec}: no python at {python or 'python3'} ({said or 'not found'})",
                      "--python PATH naming the interpreter on that host (e.g. /opt/venv/bin/python)", EXIT_UNREACHABLE)
    return failed(host.spec, f"{host.spec}: {python or 'python3'} did not run ({said or f'exit status {status}'})",
                  "check that python runs there", EXIT_UNREACHABLE)
