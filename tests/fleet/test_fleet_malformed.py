"""A host whose port answers with an SSH banner and then a malformed key-exchange packet (another service, a
broken proxy): one error line for that host, exit 3, never a traceback. asyncssh raises PacketDecodeError, a
ValueError outside asyncssh.Error (found by the hostile campaign, tests/hostile/surfaces_fleet.py)."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_malformed_packet_after_the_banner_is_one_error_line(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    done = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n")
            conn.recv(4096)
            conn.sendall(struct.pack(">IB", 12, 4) + b"\x14" + os.urandom(10))  # KEXINIT cut before its cookie
            done.wait(30)

    def serve() -> None:  # every connection (the host key is fetched on one, the session tried on another)
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    try:
        proc = subprocess.run([sys.executable, "-m", "compat", "probe", "--engine", "vllm==0.32.0", "--offline", "--json",
                               "--connect-timeout", "5", "--accept-new-host-keys", "--host", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=120, cwd=REPO,
                              env={**os.environ, "HOME": str(home), "SSH_AUTH_SOCK": ""})
    finally:
        done.set()
        listener.close()
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 3
    (host,) = json.loads(proc.stdout)["hosts"]
    assert "malformed packet" in host["error"]["error"] and "\n" not in host["error"]["error"]
