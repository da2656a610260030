"""The same per-host work on every alive node of a Ray cluster (`--ray ADDRESS`): one Ray task per node, pinned
to it (NodeAffinitySchedulingStrategy, not soft), that unpacks the bundle there (once per node and compat
version, as over SSH) and runs `compat COMMAND ... --json` with `--python` (default: the Ray worker's own
python, which in a vLLM multi-node deployment is the serving venv's).

The task is sent by value (its source is compiled here in a module Ray's workers do not have), so the
nodes need neither compat nor anything but Ray and Python. Ray is imported only here, only for --ray.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from compat.core.errors import SourceError, UsageError
from compat.fleet.host_cache import BUNDLE_MAX_AGE_S, PRUNE_SOURCE
from compat.fleet.outcome import EXIT_UNREACHABLE, Outcome, failed, from_output
from compat.fleet.bundle import START_CODE as RUN_CODE  # the one way compat is started from an unpacked bundle

TASK_TIMEOUT_S = 3600.0

# Runs in a Ray worker on the node: stdlib only.
_TASK_SOURCE = r'''
def compat_on_this_node(bundle, sha, words, python, run_code, timeout, max_age_s):
    import hashlib, io, os, shutil, socket, subprocess, sys, tempfile, zipfile
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    root = os.path.join(xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache"), "compat", "fleet")
    d = os.path.join(root, sha[:16])
    prune_bundles(root, [sha[:16]], max_age_s)
    out = {"hostname": socket.gethostname()}
    if not os.path.isfile(os.path.join(d, "compat", "cli.py")):
        data = bytes(bundle)
        if hashlib.sha256(data).hexdigest() != sha:
            return dict(out, unpack_error="the bundle arrived damaged")
        os.makedirs(root, exist_ok=True)
        t = tempfile.mkdtemp(dir=root, prefix=".unpack-")
        zipfile.ZipFile(io.BytesIO(data)).extractall(t)
        try:
            os.rename(t, d)
        except OSError:
            shutil.rmtree(t, ignore_errors=True)
    py = os.path.expanduser(python) if python else sys.executable
    if os.path.isdir(py):
        py = os.path.join(py, "bin", "python")
    out["python"] = py
    try:
        done = subprocess.run([py, "-E", "-c", run_code, d] + list(words), capture_output=True, text=True,
                              timeout=timeout, cwd=os.path.expanduser("~"))
    except OSError as err:
        return dict(out, no_python=str(err))
    except subprocess.TimeoutExpired:
        return dict(out, timeout=timeout)
    return dict(out, exit=done.returncode, stdout=done.stdout, stderr=done.stderr[-4000:])
'''


def _task() -> Callable[..., dict[str, Any]]:
    namespace: dict[str, Any] = {"__name__": "compat_fleet_node_task"}  # no such module on a worker: sent by value
    exec(compile(PRUNE_SOURCE + _TASK_SOURCE, "<compat fleet node task>", "exec"), namespace)  # noqa: S102 - our own constant
    return namespace["compat_on_this_node"]


def _import_ray():
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise UsageError("--ray needs Ray, which is not installed here",
                         hint="pip install ray (the version the cluster runs), or reach the nodes with --host") from None
    return ray, NodeAffinitySchedulingStrategy


def node_label(node: dict[str, Any]) -> str:
    return f"{node.get('NodeManagerAddress', '?')} {str(node.get('NodeID', ''))[:8]}"


def run_on_nodes(address: str, words: list[str], python: str | None, *, progress: Callable[[Outcome], None]) -> list[Outcome]:
    from compat.fleet.bundle import build_bundle

    ray, Affinity = _import_ray()
    bundle = build_bundle()
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise SourceError(f"--ray {address}: cannot reach the Ray cluster ({err})",
                          hint="the address of its head (ray status shows it), e.g. --ray 10.0.0.1:6379 or --ray auto") from None
    try:
        nodes = sorted((n for n in ray.nodes() if n.get("Alive")), key=lambda n: (n.get("NodeManagerAddress", ""), n["NodeID"]))
        task = ray.remote(num_cpus=0, max_retries=0)(_task())
        shipped = ray.put(bundle.path.read_bytes())
        started = time.monotonic()
        pending = [(node, task.options(scheduling_strategy=Affinity(node_id=node["NodeID"], soft=False)).remote(
            shipped, bundle.sha256, words, python, RUN_CODE, TASK_TIMEOUT_S, BUNDLE_MAX_AGE_S)) for node in nodes]
        outcomes = []
        for node, ref in pending:
            outcome = _outcome(ray, node, ref)
            outcome.seconds = time.monotonic() - started
            progress(outcome)
            outcomes.append(outcome)
        return outcomes
    finally:
        ray.shutdown()


def _outcome(ray, node: dict[str, Any], ref) -> Outcome:
    label = node_label(node)
    extra = {"node_id": node["NodeID"], "node_ip": node.get("NodeManagerAddress")}
    try:
        answer = ray.get(ref)
    except ray.exceptions.RayError as err:
        said = " ".join(str(err).strip().splitlines()[-2:])[-300:]
        return failed(label, f"{label}: the Ray task failed ({type(err).__name__}: {said})",
                      "check the node (ray status), then run again", EXIT_UNREACHABLE, **extra)
    extra["hostname"] = answer.get("hostname")
    if "no_python" in answer:
        return failed(label, f"{label}: no python at {answer.get('python')} ({answer['no_python']})",
                      "--python PATH naming the interpreter on every node (e.g. /opt/venv/bin/python)", EXIT_UNREACHABLE, **extra)
    if "unpack_error" in answer or "timeout" in answer:
        return failed(label, f"{label}: {answer.get('unpack_error') or 'compat did not finish in time'}",
                      "run again", EXIT_UNREACHABLE, **extra)
    return from_output(label, int(answer["exit"]), answer["stdout"], answer["stderr"], **extra)
