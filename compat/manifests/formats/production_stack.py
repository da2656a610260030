"""vLLM production-stack Helm values: each `servingEngineSpec.modelSpec[]` entry is one Deployment of
`replicaCount` pods running `repository:tag`. The chart (helm/templates/deployment-vllm-multi.yaml) starts
`vllm serve MODELURL --host 0.0.0.0 --port 8000`, then one flag per typed `vllmConfig` key it knows and
`vllmConfig.extraArgs` as given. The release is the `tag`."""

from __future__ import annotations

from compat import engines
from compat.manifests import images, nodes, words
from compat.manifests.model import Serving, Word

NAME = "production-stack"
TITLE = "vLLM production-stack Helm values (servingEngineSpec.modelSpec[])"
DOCS = ("https://docs.vllm.ai/en/stable/deployment/integrations/production-stack.html",
        "https://github.com/vllm-project/production-stack/blob/main/helm/README.md",
        "https://github.com/vllm-project/production-stack/blob/main/helm/templates/deployment-vllm-multi.yaml",
        "https://docs.vllm.ai/projects/production-stack/en/latest/deployment/helm.html")
ORDER = 60
ENGINE = "vllm"  # the chart runs vLLM alone
CONTAINER = "vllm"  # the name of the container the chart's Deployment runs (deployment-vllm-multi.yaml)

# vllmConfig key -> the flag the chart writes (None: a flag without a value); booleans as the chart renders them
TYPED = {"maxModelLen": "--max-model-len", "dtype": "--dtype", "tensorParallelSize": "--tensor-parallel-size",
         "maxNumSeqs": "--max-num-seqs", "gpuMemoryUtilization": "--gpu_memory_utilization", "maxLoras": "--max_loras",
         "runner": "--runner", "convert": "--convert"}
SWITCHES = {"enableChunkedPrefill": ("--enable-chunked-prefill", "--no-enable-chunked-prefill"),
            "enablePrefixCaching": ("--enable-prefix-caching", "--no-enable-prefix-caching")}


def detect(doc):
    return nodes.get(doc, doc.root, "servingEngineSpec", "modelSpec") is not None


def read(doc):
    out = []
    for i, spec in enumerate(nodes.seq(doc, nodes.get(doc, doc.root, "servingEngineSpec", "modelSpec"))):
        if nodes.text(doc, spec, "enabled") in ("false", "False"):
            continue
        path = ("servingEngineSpec", "modelSpec", i)
        name = nodes.text(doc, spec, "name") or str(i)
        repo_node, tag_node = nodes.get(doc, spec, "repository"), nodes.get(doc, spec, "tag")
        image = None
        if nodes.scalar(repo_node):
            ref = f"{nodes.scalar(repo_node)}:{nodes.scalar(tag_node) or 'latest'}"
            image = images.read_image(ref, doc.where(tag_node or repo_node), (*path, "repository"), (*path, "tag"))
        url_node = nodes.get(doc, spec, "modelURL")
        at = doc.where(url_node or spec)
        line = [*(Word(w, at, (), "entry") for w in engines.get(ENGINE).launch_entry()),
                Word(nodes.scalar(url_node) or "", at, (*path, "modelURL"), "word"),
                *(Word(w, at, (), "entry") for w in ("--host", "0.0.0.0", "--port", "8000"))]
        line += _typed(doc, nodes.get(doc, spec, "vllmConfig"), (*path, "vllmConfig"))
        _values, env, unread = words.k8s_env(doc, nodes.get(doc, spec, "env"), (*path, "env"))
        replicas = nodes.text(doc, spec, "replicaCount") or "1"
        out.append(Serving(f"values servingEngineSpec.modelSpec[{i}] ({name})", "modelSpec", NAME, doc.where(spec), CONTAINER,
                           line, env, image, replicas, ENGINE, unread))
    return out


def _typed(doc, config, path):
    out = []
    for key, value in nodes.items(doc, config):
        name = nodes.scalar(key) or ""
        where = doc.where(key)
        if name in TYPED:
            out += [Word(TYPED[name], where, (*path, name), "typed"), Word(nodes.scalar(value) or "", doc.where(value), (*path, name), "word")]
        elif name in SWITCHES:
            on = (nodes.scalar(value) or "").lower() in ("true", "yes", "on")
            out.append(Word(SWITCHES[name][0 if on else 1], where, (*path, name), "typed"))
    if nodes.get(doc, config, "enablePrefixCaching") is None and config is not None:
        out.append(Word("--no-enable-prefix-caching", doc.where(config), (), "entry"))  # the chart's else branch
    out += words.list_words(doc, nodes.get(doc, config, "extraArgs"), (*path, "extraArgs"))
    return out
