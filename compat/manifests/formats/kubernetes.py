"""Kubernetes workloads: a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob or Pod whose container starts
the engine (with Kustomize, the same kinds in its patches). The launch line is the container's `command` + `args`
(the image's entry point when `command` is absent), `$(VAR)` expanded from its env; replicas are `spec.replicas`
(1 when absent)."""

from __future__ import annotations

from compat.manifests import nodes
from compat.manifests.formats import _pods

NAME = "kubernetes"
TITLE = "Kubernetes workload (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod; Kustomize patches)"
DOCS = ("https://kubernetes.io/docs/concepts/workloads/controllers/deployment/",
        "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/",
        "https://docs.vllm.ai/en/stable/deployment/k8s.html",
        "https://docs.sglang.ai/references/deploy_on_k8s.html")
KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
ORDER = 10

# where each kind keeps its pod spec
POD_SPEC = {"Pod": ("spec",), "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}


def read(doc):
    kind = nodes.text(doc, doc.root, "kind") or ""
    path = POD_SPEC.get(kind, ("spec", "template", "spec"))
    spec = nodes.get(doc, doc.root, *path)
    replicas: str | None
    if kind == "DaemonSet":
        replicas = "one per node"
    elif kind in ("Pod", "Job", "CronJob"):
        replicas = "1"
    else:
        replicas = _pods.replicas_text(doc, nodes.get(doc, doc.root, "spec", "replicas"))
    return _pods.pod_containers(doc, spec, path, resource=_pods.resource_name(doc, kind), kind=kind, format=NAME,
                                replicas=replicas)
