"""Docker Compose: each service whose container starts an engine. `entrypoint` replaces the image's entry point
and `command` its arguments (a list, or one string split as a shell would); without `entrypoint`, vLLM's image
starts `vllm serve` and `command` holds the model and options. `environment` is a map or a list of NAME=value;
replicas are `deploy.replicas` (compose-spec `deploy`)."""

from __future__ import annotations

from compat.manifests import images, nodes, words
from compat.manifests.formats import _pods
from compat.manifests.model import Serving, Word

NAME = "compose"
TITLE = "Docker Compose services"
DOCS = ("https://docs.docker.com/reference/compose-file/services/",
        "https://docs.vllm.ai/en/stable/deployment/docker.html",
        "https://docs.sglang.ai/get_started/install.html")
ORDER = 70


def detect(doc):
    services = nodes.get(doc, doc.root, "services")
    return services is not None and any(nodes.get(doc, v, "image") is not None or nodes.get(doc, v, "command") is not None
                                        for _k, v in nodes.items(doc, services))


def read(doc):
    out = []
    for key, service in nodes.items(doc, nodes.get(doc, doc.root, "services")):
        name = nodes.scalar(key) or "?"
        path = ("services", name)
        image = _pods.image_of(doc, nodes.get(doc, service, "image"), (*path, "image"))
        entry = words.list_words(doc, nodes.get(doc, service, "entrypoint"), (*path, "entrypoint"))
        command = words.list_words(doc, nodes.get(doc, service, "command"), (*path, "command"))
        if not entry and image is not None and image.engine:
            entry = [Word(w, doc.where(service), (), "entry") for w in images.entry_for(image)]
        line = _pods.engine_words(doc, entry + command)
        if not line:
            continue
        env = words.map_env(doc, nodes.get(doc, service, "environment"), (*path, "environment"))
        replicas = nodes.text(doc, service, "deploy", "replicas") or nodes.text(doc, service, "scale") or "1"
        out.append(Serving(f"service {name}", "service", NAME, doc.where(service), name, line, env, image, replicas))
    return out
