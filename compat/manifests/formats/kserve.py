"""KServe: an InferenceService (its predictor's `containers`, or its `model` with the runtime it names) and the
ServingRuntime / ClusterServingRuntime whose container holds the engine's command. KServe appends the
InferenceService's `model.args` to the runtime container's args and its `env` to the runtime's env; when the runtime
is among the files checked, the two are read as the one line the pod runs (compat/manifests/scan.py joins them).
Replicas: the predictor's `minReplicas`-`maxReplicas` (1 when absent). `storageUri` is mounted at /mnt/models."""

from __future__ import annotations

from compat.manifests import nodes, words
from compat.manifests.formats import _pods
from compat.manifests.model import Serving

NAME = "kserve"
TITLE = "KServe InferenceService, ServingRuntime, ClusterServingRuntime"
DOCS = ("https://kserve.github.io/website/docs/model-serving/generative-inference/overview",
        "https://kserve.github.io/website/docs/model-serving/servingruntimes",
        "https://docs.vllm.ai/en/stable/deployment/integrations/kserve.html",
        "https://github.com/kserve/kserve/blob/master/charts/kserve-resources/templates/clusterservingruntimes.yaml")
KINDS = ("InferenceService", "ServingRuntime", "ClusterServingRuntime")
ORDER = 30


def read(doc):
    kind = nodes.text(doc, doc.root, "kind") or ""
    resource = _pods.resource_name(doc, kind)
    if kind != "InferenceService":
        name = nodes.text(doc, doc.root, "metadata", "name")
        return _pods.pod_containers(doc, nodes.get(doc, doc.root, "spec"), ("spec",), resource=resource, kind=kind,
                                    format=NAME, replicas=None, extra={"serving_runtime": name})
    predictor = nodes.get(doc, doc.root, "spec", "predictor")
    replicas = _pods.autoscaled(nodes.text(doc, predictor, "minReplicas") or "1", nodes.text(doc, predictor, "maxReplicas"))
    found = _pods.pod_containers(doc, predictor, ("spec", "predictor"), resource=resource, kind=kind, format=NAME,
                                 replicas=replicas)
    model = nodes.get(doc, predictor, "model")
    if model is None:
        return found
    path = ("spec", "predictor", "model")
    _values, env, unread = words.k8s_env(doc, nodes.get(doc, model, "env"), (*path, "env"))
    uri = nodes.text(doc, model, "storageUri")
    serving = Serving(resource, kind, NAME, doc.where(model), "kserve-container",
                      words.list_words(doc, nodes.get(doc, model, "args"), (*path, "args")), env,
                      _pods.image_of(doc, nodes.get(doc, model, "image"), (*path, "image")), replicas, None, unread,
                      {"runtime": nodes.text(doc, model, "runtime"), "model_format": nodes.text(doc, model, "modelFormat", "name"),
                       **({"model_source": _pods.model_from_uri(uri), "model_mount": "/mnt/models"} if uri else {})})
    return [*found, serving]
