"""KServe LLMInferenceService (llm-d underneath): `spec.model.uri` is the target, `spec.replicas` the replicas,
`spec.template.containers[main]` the engine container's image, args and env (the controller adds `vllm serve MODEL`
from its LLMInferenceServiceConfig; an SGLang runtime (`spec.runtime: kserve-llm-sglang`) starts
`python -m sglang.launch_server`), `spec.prefill` a second pool. The speculative settings are a block of their own:
`spec.speculativeDecoding` (method, numSpeculativeTokens, speculator.model.uri, additionalConfig) or, in the
samples, `spec.speculator` (model.uri, config): the controller injects them as `--speculative-config`, so they are
read as that option, placed at the block's line."""

from __future__ import annotations

import json

from compat import engines
from compat.manifests import nodes, words
from compat.manifests.formats import _pods
from compat.manifests.model import Serving, Word

NAME = "llm-inference-service"
TITLE = "KServe LLMInferenceService"
DOCS = ("https://kserve.github.io/website/docs/model-serving/generative-inference/llmisvc/llmisvc-configuration",
        "https://github.com/kserve/kserve/blob/master/docs/samples/llmisvc/speculative-decoding/README.md",
        "https://github.com/kserve/kserve/blob/master/docs/samples/llmisvc/speculative-decoding/llm-inference-service-H100-eagle3.yaml",
        "https://github.com/kserve/kserve/blob/master/docs/samples/llmisvc/opt-125m-cpu/llm-inference-service-sglang-opt-125m-cpu.yaml")
KINDS = ("LLMInferenceService",)
ORDER = 35
ENGINE = "vllm"  # the engine of a resource whose spec.runtime names no other (KServe's default config)


def read(doc):
    resource = _pods.resource_name(doc, "LLMInferenceService")
    spec = nodes.get(doc, doc.root, "spec")
    uri_node = nodes.get(doc, spec, "model", "uri")
    model = _pods.model_from_uri(nodes.scalar(uri_node) or "", "/mnt/models")
    runtime = nodes.text(doc, spec, "runtime") or ""
    named = [e for e in engines.all_engines() if e.name in runtime and e.name != ENGINE]
    engine = named[0] if named else engines.get(ENGINE)
    out = []
    for pool, path in (("decode", ("spec",)), ("prefill", ("spec", "prefill"))):
        block = nodes.get(doc, doc.root, *path)
        if block is None or (pool == "prefill" and nodes.get(doc, block, "template") is None):
            continue
        out.append(_pool(doc, block, path, resource + ("" if pool == "decode" else " prefill"), model, uri_node, engine))
    return out


def _pool(doc, block, path, resource, model, uri_node, engine):
    at = doc.where(uri_node if uri_node is not None else block)
    entry = list(engine.launch_commands[0]) if engine.launch_commands else ["python3", "-m", engine.launch_modules[0]]
    entry += [engine.model_option, model] if engine.model_option else [model]
    line = [Word(w, at, ("spec", "model", "uri") if w == model else (), "entry") for w in entry]
    main = next((c for c in nodes.seq(doc, nodes.get(doc, block, "template", "containers"))
                 if nodes.text(doc, c, "name") in ("main", None)), None)
    index = nodes.seq(doc, nodes.get(doc, block, "template", "containers")).index(main) if main is not None else 0
    cpath = (*path, "template", "containers", index)
    image = _pods.image_of(doc, nodes.get(doc, main, "image"), (*cpath, "image")) if main is not None else None
    _values, env, unread = words.k8s_env(doc, nodes.get(doc, main, "env"), (*cpath, "env"))
    line += words.list_words(doc, nodes.get(doc, main, "args"), (*cpath, "args"))
    spec_words, keys = _speculative(doc, nodes.get(doc, doc.root, "spec"))
    replicas = _pods.replicas_text(doc, nodes.get(doc, block, "replicas"))
    return Serving(resource, "LLMInferenceService", NAME, doc.where(block), "main", line + spec_words, env, image, replicas,
                   engine.name, unread, {"spec_keys": keys})


def _speculative(doc, spec):
    """The controller's --speculative-config, from whichever block the resource writes."""
    block = nodes.get(doc, spec, "speculativeDecoding")
    if block is not None:
        config = {"method": nodes.text(doc, block, "method"), "num_speculative_tokens": _number(nodes.text(doc, block, "numSpeculativeTokens"))}
        uri = nodes.text(doc, block, "speculator", "model", "uri")
        extra_node = nodes.get(doc, block, "additionalConfig")
        path = ("spec", "speculativeDecoding")
    else:
        block = nodes.get(doc, spec, "speculator")
        if block is None:
            return [], {}
        config = {}
        uri = nodes.text(doc, block, "model", "uri")
        extra_node = nodes.get(doc, block, "config")
        path = ("spec", "speculator")
    extra = nodes.plain(doc, extra_node) or {}
    keys = {nodes.scalar(k): doc.where(k) for k, _v in nodes.items(doc, extra_node)}
    if uri:
        config["model"] = _pods.model_from_uri(uri, "/mnt/speculator")
    config.update({k: _number(v) for k, v in (extra.items() if isinstance(extra, dict) else [])})
    config = {k: v for k, v in config.items() if v is not None}
    where = doc.where(block)
    return [Word("--speculative-config", where, path, "crd"), Word(json.dumps(config), where, path, "crd")], keys


def _number(value):
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value
