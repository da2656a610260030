"""--ray: the same per-node work as Ray tasks pinned to each alive node of a real local cluster (a head and a
worker on 127.0.0.1, each node's workers with their own HOME: alpha's ~/venv is the shared engine venv,
beta's the writable one). Every node is reported; a plugin installed on one node only is flagged."""

from __future__ import annotations

import json
import subprocess
import sys

PATCH = "vllm-cpu-attn-block16"


def run(*words: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat", *words], capture_output=True, text=True, timeout=600)


def test_every_node_reported_and_a_plugin_on_one_node_only_flagged(ray_cluster, writable_python):
    address, names = ray_cluster
    installed = run("plugin", "install", "--engine", "vllm", "--python", writable_python, "--select", PATCH, "--json")
    assert installed.returncode == 0, installed.stderr
    try:
        done = run("plugin", "status", "--engine", "vllm", "--python", "~/venv", "--ray", address, "--json")
        doc = json.loads(done.stdout)
        assert done.returncode == 1 and doc["exit_code"] == 1 and doc["via"] == f"ray {address}"
        by_node = {names[h["node_id"]]: h for h in doc["hosts"]}
        assert set(by_node) == {"alpha", "beta"} and all(h["ok"] for h in doc["hosts"])  # every node answered
        assert by_node["alpha"]["result"]["installed"] is False and by_node["beta"]["result"]["installed"] is True
        assert set(doc["mixed"]) == {"plugin"}
        assert doc["mixed"]["plugin"]["none"] == [by_node["alpha"]["host"]]
        text = run("probe", "--engine", "vllm", "--python", "~/venv", "--ray", address)
        assert text.returncode == 0, text.stderr  # probe says it, and exits 0
        assert "compat probe on 2 Ray nodes" in text.stdout and "mixed fleet: the hosts differ in plugin" in text.stdout
        assert text.stdout.count("vllm 0.32.0") >= 2
    finally:
        assert run("plugin", "remove", "--engine", "vllm", "--python", writable_python).returncode == 0
