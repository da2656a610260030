"""Ray Serve LLM: a Serve config (`serve run config.yaml`, or a KubeRay RayService's `serveConfigV2`) whose
application builds `ray.serve.llm:build_openai_app` with `args.llm_configs`; each LLMConfig is one engine.
`engine_kwargs` are vLLM's engine arguments (`speculative_config` included; tensor parallelism comes from Ray
Serve), read as the `vllm serve` options they are; the model is `model_loading_config.model_source` (else its
`model_id`); replicas are `deployment_config.num_replicas` or `autoscaling_config` min-max. The release is a
`vllm==X` in `runtime_env.pip`, else the RayService image's tag (rayproject/ray-llm tags name Ray's release, not
vLLM's: give --engine)."""

from __future__ import annotations

import re

from compat import engines
from compat.manifests import nodes, words
from compat.manifests.formats import _pods
from compat.manifests.model import Image, Problem, Serving, Word
from compat.manifests.nodes import Doc

NAME = "ray-serve"
TITLE = "Ray Serve LLM config (applications[].args.llm_configs) and KubeRay RayService serveConfigV2"
DOCS = ("https://docs.ray.io/en/latest/serve/llm/user-guides/configuration.html",
        "https://docs.ray.io/en/latest/serve/api/doc/ray.serve.llm.LLMConfig.html",
        "https://docs.ray.io/en/latest/serve/production-guide/config.html",
        "https://docs.ray.io/en/latest/cluster/kubernetes/examples/vllm-rayservice.html")
KINDS = ("RayService",)
ORDER = 40
ENGINE = "vllm"  # an LLMConfig's engine unless its llm_engine names another; engine_kwargs are its options
PIN = re.compile(r"^\s*(?P<distribution>[A-Za-z0-9][A-Za-z0-9_.-]*)\s*==\s*(?P<version>[0-9][0-9A-Za-z.+]*)\s*$")


def detect(doc):
    apps = nodes.get(doc, doc.root, "applications")
    return any(nodes.get(doc, app, "args", "llm_configs") is not None for app in nodes.seq(doc, apps))


def read(doc):
    if nodes.text(doc, doc.root, "kind") == "RayService":
        return _rayservice(doc)
    return _applications(doc, doc, None)


def _rayservice(doc: Doc):
    config = nodes.get(doc, doc.root, "spec", "serveConfigV2")
    text = nodes.scalar(config)
    name = _pods.resource_name(doc, "RayService")
    image_node = nodes.get(doc, doc.root, "spec", "rayClusterConfig", "headGroupSpec", "template", "spec", "containers", 0, "image")
    image = _pods.image_of(doc, image_node, ("spec", "rayClusterConfig", "headGroupSpec", "template", "spec", "containers", 0, "image"))
    if not text:
        return []
    from compat.manifests.nodes import read_text

    inner_docs, problems = read_text(text.encode(), doc.file)
    offset = config.start_mark.line + 1 if config is not None else 0
    out: list = [Problem(_shift(p.where, offset), p.message, p.hint, p.kind, name) for p in problems]
    for inner in inner_docs:
        for found in _applications(inner, doc, image):
            if isinstance(found, Serving):
                found.resource = f"{name} {found.resource}"
                found.words = [Word(w.text, _shift(w.where, offset), w.path, "nested") for w in found.words]
                found.where = _shift(found.where, offset)
            out.append(found)
    return out


def _shift(where, offset):
    from compat.manifests.model import Where

    return Where(where.file, where.line + offset, where.column)


def _applications(doc: Doc, outer: Doc, image: Image | None):
    out = []
    for a, app in enumerate(nodes.seq(doc, nodes.get(doc, doc.root, "applications"))):
        pip = _pip_pin(doc, nodes.get(doc, app, "runtime_env", "pip"))
        for c, config in enumerate(nodes.seq(doc, nodes.get(doc, app, "args", "llm_configs"))):
            path = ("applications", a, "args", "llm_configs", c)
            if nodes.scalar(config) is not None:
                out.append(Problem(doc.where(config), f"llm_configs[{c}] names a file ({nodes.scalar(config)}): not read here",
                                   "pass that file too: compat doctor --manifest it", kind="unreadable", level="warning"))
                continue
            out.append(_llm_config(doc, config, path, f"applications[{a}] llm_configs[{c}]", image, pip))
    return out


def _llm_config(doc, config, path, resource, image, pip):
    source = nodes.get(doc, config, "model_loading_config", "model_source")
    model_node = source if nodes.scalar(source) else nodes.get(doc, config, "model_loading_config", "model_id")
    model = nodes.scalar(model_node) or ""
    at = doc.where(model_node or config)
    unit = engines.get(ENGINE)
    line = [*(Word(w, at, (), "entry") for w in unit.launch_entry()), Word(model, at, (*path, "model_loading_config"), "word")]
    line += words.kwargs_words(doc, nodes.get(doc, config, "engine_kwargs"), (*path, "engine_kwargs"))
    deploy = nodes.get(doc, config, "deployment_config")
    replicas = nodes.text(doc, deploy, "num_replicas") or _pods.autoscaled(
        nodes.text(doc, deploy, "autoscaling_config", "min_replicas"), nodes.text(doc, deploy, "autoscaling_config", "max_replicas"))
    env = words.map_env(doc, nodes.get(doc, config, "runtime_env", "env_vars"), (*path, "runtime_env", "env_vars"))
    engine = (nodes.text(doc, config, "llm_engine") or unit.display_name).lower()
    serving = Serving(resource, "LLMConfig", NAME, doc.where(config), None, line, env, pip or image, replicas or "1",
                      engine)
    spec = nodes.get(doc, config, "engine_kwargs", "speculative_config")
    serving.extra["spec_keys"] = {nodes.scalar(k): doc.where(k) for k, _v in nodes.items(doc, spec)}
    return serving


def _pip_pin(doc, node) -> Image | None:
    """`vllm==X` in runtime_env.pip (a distribution of an engine, compat/engines/<name>.py DISTRIBUTIONS): the release
    the replicas install (as an Image with no repository)."""
    for item in nodes.seq(doc, nodes.get(doc, node, "packages") or node):
        found = PIN.match(nodes.scalar(item) or "")
        unit = engines.for_distribution(found.group("distribution")) if found else None
        if found and unit is not None:
            return Image(found.group(0).strip(), doc.where(item), "", None, None, unit.name, found.group("version"))
    return None
