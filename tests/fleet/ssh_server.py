"""A real OpenSSH server on 127.0.0.1 for the fleet tests: generated host and client keys, one sshd listening
on two ports (two hosts), a private HOME for the client side (its ~/.ssh/config, key and known_hosts), never
the user's ~/.ssh. Stopped by its own pid."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "compat-fleet-test", "-f", str(path)], check=True)
    return path


@dataclass
class Sshd:
    root: Path  # sshd's own files
    home: Path  # the client's HOME: .ssh/config, .ssh/id_ed25519, .ssh/known_hosts
    ports: tuple[int, ...]
    process: subprocess.Popen
    host_key_line: str  # "ssh-ed25519 AAAA..." of the server

    def remote_home(self, host: str) -> Path:
        """The login's home on host alpha or beta (`~` there)."""
        return self.root / host

    names: tuple[str, ...]

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts, as ~/.ssh/config names them (alpha, beta, then host3, host4, ...)."""
        return self.names

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK",)}
        return {**env, "HOME": str(self.home), **extra}

    def trust(self, port: int) -> None:
        with open(self.home / ".ssh" / "known_hosts", "a") as f:
            f.write(f"[127.0.0.1]:{port} {self.host_key_line}\n")

    def forget_all(self) -> None:
        (self.home / ".ssh" / "known_hosts").write_text("")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()


def host_names(count: int) -> tuple[str, ...]:
    return (("alpha", "beta") + tuple(f"host{i}" for i in range(3, count + 1)))[:count]


def start_sshd(root: Path, count: int = 2) -> Sshd:
    """One sshd listening on `count` ports of 127.0.0.1: each port a host with its own login home."""
    if not os.path.exists(SSHD):
        raise FileNotFoundError("sshd is not installed (apt-get install openssh-server)")
    root.mkdir(parents=True, exist_ok=True)
    host_key = keygen(root / "ssh_host_ed25519_key")
    home = root / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    client_key = keygen(home / ".ssh" / "id_ed25519")
    authorized = root / "authorized_keys"
    authorized.write_text(Path(f"{client_key}.pub").read_text())
    authorized.chmod(0o600)
    names = host_names(count)
    ports = tuple(free_port() for _ in names)
    config = root / "sshd_config"
    config.write_text("\n".join([
        *(f"ListenAddress 127.0.0.1:{p}" for p in ports),
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized}",
        f"PidFile {root / 'sshd.pid'}",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password", "StrictModes no", "UsePAM no", "PrintMotd no",
        "Subsystem sftp internal-sftp", "LogLevel ERROR", "MaxStartups 50:30:100", "MaxSessions 50",
        # each host its own login home (its ~/venv, its ~/.cache/compat): two machines, as far as compat can tell
        *(f"Match LocalPort {p}\n  SetEnv HOME={root / name}" for p, name in zip(ports, names)), "",
    ]))
    for name in names:
        (root / name).mkdir()
    (home / ".ssh" / "config").write_text(
        "".join(f"Host {name}\n  HostName 127.0.0.1\n  Port {port}\n" for name, port in zip(names, ports))
        + f"Host *\n  User {os.environ.get('USER', 'root')}\n  IdentityFile {client_key}\n")
    (home / ".ssh" / "known_hosts").write_text("")
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation directory
    process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL,
                               stderr=open(root / "sshd.log", "w"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sshd exited: {(root / 'sshd.log').read_text()}")
        try:
            for p in ports:
                socket.create_connection(("127.0.0.1", p), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    line = " ".join(Path(f"{host_key}.pub").read_text().split()[:2])
    return Sshd(root, home, ports, process, line, names)
