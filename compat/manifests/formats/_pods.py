"""What the readers share: a Kubernetes container (command, args, env, image) as a serving engine, a pod spec's
containers, and the model a `hf://` / `pvc://` URI names.

A container serves when its words start an engine (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`,
`python -m sglang.launch_server`, also inside `sh -c`), or when it gives no command and its image's entry point is
an engine's (vllm/vllm-openai starts `vllm serve`). Other containers (a routing sidecar, an LWS worker running
`ray start`) are not serving and are left out.
"""

from __future__ import annotations

from typing import Any

import yaml

from compat.manifests import images, nodes, words
from compat.manifests.model import Image, Problem, Serving, Where, Word
from compat.manifests.nodes import Doc


def image_of(doc: Doc, node: yaml.Node | None, path: tuple[str | int, ...]) -> Image | None:
    ref = nodes.scalar(node)
    return images.read_image(ref, doc.where(node), path) if ref else None


def container(doc: Doc, node: yaml.Node, path: tuple[str | int, ...], *, resource: str, kind: str, format: str,
              replicas: str | None, entry: tuple[str, ...] = (), engine: str | None = None,
              extra: dict[str, Any] | None = None) -> Serving | None:
    """A Kubernetes container as a Serving (None: it starts no engine). `entry` is the entry point a chart adds
    when the container gives none (placed at the container's line)."""
    name = nodes.text(doc, node, "name")
    image = image_of(doc, nodes.get(doc, node, "image"), (*path, "image"))
    values, env, unread = words.k8s_env(doc, nodes.get(doc, node, "env"), (*path, "env"))
    command = words.list_words(doc, nodes.get(doc, node, "command"), (*path, "command"))
    args = words.list_words(doc, nodes.get(doc, node, "args"), (*path, "args"))
    line = words.expand_k8s(command + args, values)
    if not command:
        start = entry or images.entry_for(image)
        line = [Word(w, doc.where(node), (), "entry") for w in start] + line
    serving = Serving(resource, kind, format, doc.where(node), name, engine_words(doc, line, values, unread), env, image,
                      replicas, engine, unread, dict(extra or {}))
    return serving if serving.words else None


def engine_words(doc: Doc, line: list[Word], env: dict[str, str] | None = None, notes: list[str] | None = None) -> list[Word]:
    """The words from the engine's entry point on (with the VAR=value words just before it); a shell script's
    engine command (its `$VAR` expanded from `env`, the container's; what is not, said in `notes`); [] when no
    engine starts."""
    script = words.shell_script(line)
    if script is not None:
        word, _ = script
        node = nodes.get(doc, doc.root, *word.path) if word.holder == "list" else None
        return words.script_words(doc, node, word.text, word.where, word.path, env, notes)
    texts = [w.text for w in line]
    start = words.entry_index(texts)
    if start is None:
        return []
    first = start
    while first > 0 and "=" in texts[first - 1] and not texts[first - 1].startswith("-"):
        first -= 1
    return line[first:]


def pod_containers(doc: Doc, spec: yaml.Node | None, path: tuple[str | int, ...], **kw: Any) -> list[Serving]:
    out = []
    for i, item in enumerate(nodes.seq(doc, nodes.get(doc, spec, "containers"))):
        found = container(doc, item, (*path, "containers", i), **kw)
        if found is not None:
            out.append(found)
    return out


def resource_name(doc: Doc, kind: str) -> str:
    name = nodes.text(doc, doc.root, "metadata", "name") or "(no metadata.name)"
    return f"{kind}/{name}"


def replicas_text(doc: Doc, node: yaml.Node | None, default: str | None = "1") -> str | None:
    value = nodes.scalar(node)
    return value if value is not None else default


def autoscaled(low: str | None, high: str | None) -> str | None:
    if low is None and high is None:
        return None
    if high is None or low == high:
        return low
    return f"{low or '1'}-{high}"


def model_from_uri(uri: str, mount: str = "/mnt/models") -> str:
    """The model an engine loads for a storage URI: `hf://org/name` is the Hugging Face id, `pvc://claim/path` the
    path under the mount the controller gives it, anything else the URI itself (KServe storage initializer docs)."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    if scheme == "hf":
        return rest.strip('"')
    if scheme.startswith("pvc"):
        claim, _, sub = rest.partition("/")
        return f"{mount.rstrip('/')}/{sub}" if sub else mount
    return mount


def unknown_entry(doc: Doc, node: yaml.Node, resource: str, why: str) -> Problem:
    return Problem(doc.where(node), f"{resource}: {why}", "give the container's command (vllm serve ..., python -m "
                   "sglang.launch_server ...) or an engine image whose entry point compat knows", kind="launch",
                   resource=resource, level="warning")


def where_of(doc: Doc, node: yaml.Node | None) -> Where:
    return doc.where(node)
