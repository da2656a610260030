"""A real local Ray cluster for the fleet tests: a head and a worker node (each its own gcs/raylet processes,
Ray's own binaries) on 127.0.0.1, each node's workers with their own HOME (two machines, as far as compat
can tell). Stopped by its own processes' pids (Cluster.shutdown).

Why not `ray start`: Ray 2.60 turns a loopback address into the machine's outward IP for a node that joins
(ray-project/ray#59110: the worker then listens on, and dials, 192.0.2.x), and RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0,
which keeps every address on 127.0.0.1, makes `ray start --address` refuse a second node. ray.cluster_utils
starts the same gcs_server and raylet binaries, one node at a time, with that setting honoured.
"""

from __future__ import annotations

import os
from pathlib import Path


def start_cluster(temp_dir: Path, homes: dict[str, Path]):
    """Head then worker, one per entry of `homes` (node name -> its HOME); returns (cluster, {node_id: name}).
    `temp_dir` must be short (/tmp/...): Ray's unix sockets live under it (108 bytes at most)."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # every address 127.0.0.1 (see above)
    os.environ["RAY_TMPDIR"] = str(temp_dir)  # its address file and sessions there, not in the shared /tmp/ray
    from ray.cluster_utils import Cluster

    temp_dir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster()
    names = {}
    for i, (name, home) in enumerate(homes.items()):
        args = {"num_cpus": 1, "env_vars": {"HOME": str(home)}, "node_name": name, "include_dashboard": False}
        node = cluster.add_node(**args)
        names[node.node_id] = name
    cluster.wait_for_nodes()
    return cluster, names
