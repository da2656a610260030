"""SkyPilot task YAML (`sky launch`, `sky serve up`): the engine starts in the `run:` script (`vllm serve $MODEL
...`), `$VAR` / `${VAR}` coming from `envs:`; the release is the `vllm==X` / `sglang==X` that `setup:` installs, or
the `resources.image_id: docker:IMAGE` tag; replicas are `service.replicas` or `service.replica_policy`."""

from __future__ import annotations

import re

from compat.manifests import images, nodes, words
from compat.manifests.formats import _pods
from compat.manifests.model import Image, Serving, Word

NAME = "skypilot"
TITLE = "SkyPilot task (run / setup / envs / service)"
DOCS = ("https://docs.skypilot.co/en/latest/reference/yaml-spec.html",
        "https://docs.vllm.ai/en/stable/deployment/frameworks/skypilot.html",
        "https://docs.skypilot.co/en/latest/serving/sky-serve.html")
ORDER = 80
PIN = re.compile(r"\b(?P<engine>vllm|sglang)(\[[^\]]*\])?==(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?)")


def detect(doc):
    return nodes.scalar(nodes.get(doc, doc.root, "run")) is not None and any(
        nodes.get(doc, doc.root, key) is not None for key in ("resources", "setup", "service", "envs", "num_nodes"))


def read(doc):
    run = nodes.get(doc, doc.root, "run")
    envs = {k: str(v) for k, v in (nodes.plain(doc, nodes.get(doc, doc.root, "envs")) or {}).items()} if isinstance(
        nodes.plain(doc, nodes.get(doc, doc.root, "envs")), dict) else {}
    notes: list[str] = []
    line = words.script_words(doc, run, nodes.scalar(run) or "", doc.where(run), ("run",), envs, notes)
    if not line:
        return []
    image = _image(doc)
    service = nodes.get(doc, doc.root, "service")
    replicas = nodes.text(doc, service, "replicas") or _pods.autoscaled(
        nodes.text(doc, service, "replica_policy", "min_replicas"), nodes.text(doc, service, "replica_policy", "max_replicas")) or "1"
    env = {k: Word(v, doc.where(nodes.get(doc, doc.root, "envs", k)), ("envs", k), "word")
           for k, v in envs.items() if k.startswith(words.ENV_PREFIXES)}
    name = nodes.text(doc, doc.root, "name") or "task"
    return [Serving(f"task {name}", "task", NAME, doc.where(run), None, line, env, image, replicas, unread=notes)]


def _image(doc) -> Image | None:
    image_id = nodes.get(doc, doc.root, "resources", "image_id")
    ref = nodes.scalar(image_id) or ""
    if ref.startswith("docker:"):
        return images.read_image(ref[len("docker:"):], doc.where(image_id), ("resources", "image_id"))
    setup = nodes.get(doc, doc.root, "setup")
    found = PIN.search(nodes.scalar(setup) or "")
    if found:
        return Image(found.group(0), doc.where(setup), "", None, None, found.group("engine"), found.group("version"))
    return None
