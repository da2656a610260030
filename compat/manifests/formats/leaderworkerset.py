"""LeaderWorkerSet (multi-node serving): each of `spec.replicas` groups is one leader pod and `size - 1` workers.
The leader starts the engine (in vLLM's example, `sh -c "bash multi-node-serving.sh leader ...; vllm serve ..."`);
workers join the leader's Ray cluster and start no engine of their own (left out unless their command starts one)."""

from __future__ import annotations

from compat.manifests import nodes
from compat.manifests.formats import _pods

NAME = "leaderworkerset"
TITLE = "LeaderWorkerSet (leader and worker pod templates)"
DOCS = ("https://docs.vllm.ai/en/stable/deployment/frameworks/lws.html",
        "https://lws.sigs.k8s.io/docs/examples/vllm/",
        "https://lws.sigs.k8s.io/docs/examples/sglang/")
KINDS = ("LeaderWorkerSet",)
ORDER = 20


def read(doc):
    template = nodes.get(doc, doc.root, "spec", "leaderWorkerTemplate")
    groups = _pods.replicas_text(doc, nodes.get(doc, doc.root, "spec", "replicas"))
    size = nodes.text(doc, template, "size") or "1"
    replicas = f"{groups} groups x {size} pods"
    resource = _pods.resource_name(doc, "LeaderWorkerSet")
    out = []
    for role in ("leaderTemplate", "workerTemplate"):
        path = ("spec", "leaderWorkerTemplate", role, "spec")
        out += _pods.pod_containers(doc, nodes.get(doc, doc.root, *path), path, resource=f"{resource} {role}",
                                    kind="LeaderWorkerSet", format=NAME, replicas=replicas)
    return out
