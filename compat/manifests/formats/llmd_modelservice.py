"""llm-d ModelService Helm values (llm-d-incubation/llm-d-modelservice): `modelArtifacts.uri` is the model
(`hf://NAME`, `pvc://CLAIM/PATH` mounted at `modelArtifacts.mountPath`), `decode` and `prefill` each a pool of
`replicas` pods whose `containers[*]` run the engine. `modelCommand` says how the chart starts it (its
_helpers.tpl): `vllmServe` adds `vllm serve MODEL --port P` before the container's args, `imageDefault` keeps the
image's command and adds `--model MODEL --port P`, `custom` uses `command` and `args` as given. `multinode: true`
renders a LeaderWorkerSet instead of a Deployment (the same containers)."""

from __future__ import annotations

import re

from compat import engines
from compat.manifests import images, nodes
from compat.manifests.formats import _pods
from compat.manifests.model import Problem, Word

NAME = "llm-d-modelservice"
TITLE = "llm-d ModelService Helm values (decode / prefill containers)"
DOCS = ("https://github.com/llm-d-incubation/llm-d-modelservice/blob/main/charts/llm-d-modelservice/values.yaml",
        "https://github.com/llm-d-incubation/llm-d-modelservice/blob/main/charts/llm-d-modelservice/templates/_helpers.tpl",
        "https://github.com/llm-d-incubation/llm-d-modelservice/blob/main/examples/values-pd.yaml")
ORDER = 60
ENGINE = "vllm"  # the chart's modelCommand starts vLLM (vllmServe) or the image's own entry point
NAME_VALUE = re.compile(r"\{\{-?\s*\.Values\.modelArtifacts\.name\s*-?\}\}")


def detect(doc):
    return nodes.get(doc, doc.root, "modelArtifacts") is not None and any(
        nodes.get(doc, doc.root, pool) is not None for pool in ("decode", "prefill"))


def read(doc):
    uri_node = nodes.get(doc, doc.root, "modelArtifacts", "uri")
    name = nodes.text(doc, doc.root, "modelArtifacts", "name") or ""
    uri = NAME_VALUE.sub(name, nodes.scalar(uri_node) or f"hf://{name}")
    mount = nodes.text(doc, doc.root, "modelArtifacts", "mountPath") or "/model-cache"
    model = _pods.model_from_uri(uri, mount)
    out: list = []
    if "{{" in model:
        out.append(Problem(doc.where(uri_node), f"modelArtifacts.uri {uri!r}: a value only Helm renders; the model is "
                           "read as unchecked", "render it: helm template ... | compat doctor --manifest -", kind="template",
                           level="warning"))
    for pool in ("decode", "prefill"):
        block = nodes.get(doc, doc.root, pool)
        if block is None or nodes.text(doc, block, "create") in ("false", "False"):
            continue
        replicas = _pods.replicas_text(doc, nodes.get(doc, block, "replicas"))
        for i, item in enumerate(nodes.seq(doc, nodes.get(doc, block, "containers"))):
            path = (pool, "containers", i)
            command = nodes.text(doc, item, "modelCommand") or "custom"
            entry: tuple[str, ...]
            at = doc.where(nodes.get(doc, item, "modelCommand") or item)
            unit = engines.get(ENGINE)
            if command == "vllmServe":  # the chart's word for its `vllm serve` command
                entry = (*unit.launch_entry(), model)
            elif command == "imageDefault":
                image = _pods.image_of(doc, nodes.get(doc, item, "image"), ())
                start = images.entry_for(image)
                entry = (*(start or ("python3", "-m", unit.launch_modules[0])), "--model", model)
            else:
                entry = ()
            found = _pods.container(doc, item, path, resource=f"values {pool}.containers[{i}]", kind=pool, format=NAME,
                                    replicas=replicas, entry=entry, engine=ENGINE)
            if found is not None and entry:
                found.words[: len(entry)] = [Word(w, at, ("modelArtifacts", "uri") if w == model else (), "entry") for w in entry]
                found.extra["model_command"] = command
            if found is not None:
                out.append(found)
    return out
