"""Surface: `compat probe --host 127.0.0.1:PORT` against remote hosts that hang or lie, plain sockets on 127.0.0.1
in place of an sshd: one that accepts and never answers, answers a byte at a time, sends garbage (binary, an
endless line, ANSI escapes) instead of an SSH banner, sends a real banner and then nothing or garbage, drops the
connection at once or resets it. One to three such hosts per run (--jobs 2 on three hosts). The answer: within
--connect-timeout (2 s) per step plus start-up, each host's error one line naming it, exit 3 (the host could not
be read, compat/fleet/outcome.py's EXIT_UNREACHABLE) or 4 (a host key or login refused), JSON on stdout.
A real sshd is tests/fleet's; here nothing gets as far as a login.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from surfaces import Case, Outcome, surface

CONNECT_TIMEOUT = 2
BANNER = b"SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n"
Behaviour = Callable[[socket.socket, random.Random, threading.Event], None]


def _silent(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    stop.wait(60)


def _dribble(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    for byte in BANNER + os.urandom(64):
        if stop.wait(rng.choice([0.3, 0.8, 1.5])):
            return
        conn.sendall(bytes([byte]))


def _garbage(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    conn.sendall(rng.choice([os.urandom(4096), b"HTTP/1.1 400 Bad Request\r\n\r\n", b"\x1b[2J\x1b[31mhello\x1b[0m\r\n" * 50,
                             b"\x00" * 10_000, "ключ\r\n".encode() * 100, b"SSH-1.5-old\r\n", b"SSH-2.0-" + b"x" * 300 + b"\r\n"]))
    stop.wait(60)


def _endless_line(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    deadline = time.monotonic() + 60
    while not stop.is_set() and time.monotonic() < deadline:
        conn.sendall(b"A" * 65536)


def _banner_then_silence(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    conn.sendall(BANNER)
    stop.wait(60)


def _banner_then_garbage(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    conn.sendall(BANNER)
    conn.recv(4096)
    conn.sendall(rng.choice([os.urandom(2048), struct.pack(">I", 0xFFFFFFF0) + os.urandom(64),
                             struct.pack(">IB", 12, 4) + b"\x14" + os.urandom(10)]))
    stop.wait(60)


def _drop(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    conn.close()


def _reset(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _banner_then_drop(conn: socket.socket, rng: random.Random, stop: threading.Event) -> None:
    conn.sendall(BANNER)
    with contextlib.suppress(OSError):
        conn.recv(4096)
    conn.close()


BEHAVIOURS: dict[str, Behaviour] = {"silent": _silent, "dribble": _dribble, "garbage": _garbage, "endless line": _endless_line,
                                    "banner then silence": _banner_then_silence, "banner then garbage": _banner_then_garbage,
                                    "drop": _drop, "reset": _reset, "banner then drop": _banner_then_drop}


@contextlib.contextmanager
def hostile_host(name: str, rng: random.Random) -> Iterator[int]:
    """A listening socket on 127.0.0.1 answering every connection with BEHAVIOURS[name]; yields its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def serve(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            BEHAVIOURS[name](conn, rng, stop)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            thread = threading.Thread(target=serve, args=(conn,), daemon=True)
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        acceptor.join(5)
        listener.close()
        for thread in threads:
            thread.join(5)


@surface("fleet hosts")
def fleet_hosts(rng: random.Random, workdir: Path) -> Iterator[Case]:
    names = [rng.choice(sorted(BEHAVIOURS)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
    with contextlib.ExitStack() as stack:
        ports = [stack.enter_context(hostile_host(name, rng)) for name in names]
        hosts = [f"127.0.0.1:{port}" for port in ports]
        if len(hosts) > 1 and rng.random() < 0.5:
            listing = workdir / "hosts"
            listing.write_text("# hostile\n" + "\n".join(hosts) + "\n")
            where = ["--hosts", str(listing), "--jobs", "2"]
        else:
            where = [word for host in hosts for word in ("--host", host)]
        home = workdir / "home"  # an empty ~/.ssh: no keys, no known_hosts of the user's
        (home / ".ssh").mkdir(parents=True)
        yield Case(argv=["probe", "--engine", "vllm==0.32.0", "--offline", "--json", "--connect-timeout", str(CONNECT_TIMEOUT),
                         *rng.choice([[], ["--accept-new-host-keys"]]), *where],
                   what=" + ".join(names), exits={3, 4}, deadline=20.0 + 10.0 * len(hosts),
                   env={"HOME": str(home), "SSH_AUTH_SOCK": ""}, error_schema="compat.fleet/1", stderr_errors=False,
                   check=lambda outcome: every_host_one_error(outcome, hosts))


def every_host_one_error(outcome: Outcome, hosts: list[str]) -> str | None:
    """Each host is in the fleet document with one error: one line, naming the host, short, with its exit code."""
    doc = json.loads(outcome.stdout)
    listed = {h.get("host"): h for h in doc.get("hosts", [])}
    for host in hosts:
        entry = listed.get(host)
        if entry is None or not entry.get("error"):
            return f"{host}: no error in the fleet document"
        message = entry["error"].get("error") or ""
        if "\n" in message or host not in message or len(message) > 400 or not message.isprintable():
            return f"{host}: its error is not one short printable line naming it: {message[:500]!r}"
        if entry["error"].get("exit_code") not in (3, 4):
            return f"{host}: exit code {entry['error'].get('exit_code')} (3 unreachable or 4 refused expected)"
    return None
