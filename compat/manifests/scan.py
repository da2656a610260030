"""Files and directories of manifests into serving containers and problems, each with its file and line.

A directory is walked for *.yaml / *.yml (hidden directories, .git and a chart's templates/ left out: a template
is Helm's to render); `-` reads standard input (the output of `helm template`, `kustomize build`). Each document
goes to the reader of its kind, or of its shape for kind-less files (compat/manifests/formats/). A document of a
kind no reader knows is named, unless it is a Kubernetes kind that holds no serving container (Service, ConfigMap,
...); a kind-less document that no reader recognises is counted as skipped. A reader's own fault (an alias bomb
expanding past the budget, a value of an unexpected type) is one problem for that document, and the rest goes on.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from compat.manifests import nodes
from compat.manifests.formats import for_kind, for_kindless
from compat.manifests.model import Problem, Serving, Where
from compat.manifests.words import entry_index

SUFFIXES = (".yaml", ".yml")
# Kubernetes kinds that never hold a serving container: read past without a word.
NOT_SERVING = frozenset({
    "Service", "ConfigMap", "Secret", "Namespace", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
    "ClusterRoleBinding", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "Ingress", "IngressClass",
    "NetworkPolicy", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Kustomization", "Component", "Gateway",
    "HTTPRoute", "GRPCRoute", "InferencePool", "InferenceModel", "InferenceObjective", "ServiceMonitor", "PodMonitor",
    "PrometheusRule", "CustomResourceDefinition", "PriorityClass", "LimitRange", "ResourceQuota", "Endpoints",
    "EndpointSlice", "List", "LLMInferenceServiceConfig", "ScaledObject", "ResourceClaimTemplate", "Certificate",
    "Issuer", "ClusterIssuer", "VerticalPodAutoscaler", "Chart", "HelmRelease", "Application",
})


@dataclass
class Scan:
    files: list[str] = field(default_factory=list)
    servings: list[Serving] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    skipped: list[Where] = field(default_factory=list)  # kind-less documents no reader recognises
    documents: int = 0


def scan(paths: list[str]) -> Scan:
    out = Scan()
    for given in paths:
        if given == "-":
            _read(out, sys.stdin.buffer.read(), "<stdin>")
            continue
        path = Path(given)
        if path.is_dir():
            for file in walk(path):
                _read_file(out, file, str(file))
        elif path.is_file():
            _read_file(out, path, given)
        else:
            out.problems.append(Problem(Where(given, 1), "no such file or directory", "give a manifest file or a directory of them",
                                        kind="unreadable"))
    join_runtimes(out)
    return out


def walk(root: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("templates", "node_modules", "charts"))
        found += [Path(folder) / f for f in sorted(files) if f.endswith(SUFFIXES)]
    return found


def _read_file(out: Scan, path: Path, shown: str) -> None:
    out.files.append(shown)
    docs, problems = nodes.read_file(path, shown)
    out.problems += problems
    _documents(out, docs)


def _read(out: Scan, data: bytes, shown: str) -> None:
    out.files.append(shown)
    docs, problems = nodes.read_text(data, shown)
    out.problems += problems
    _documents(out, docs)


def _documents(out: Scan, docs: list[nodes.Doc]) -> None:
    for doc in docs:
        out.documents += 1
        try:
            _document(out, doc)
        except nodes.BudgetExceeded as err:
            out.problems.append(Problem(doc.where(doc.root), f"{err}: not read (an alias bomb?); the rest is checked",
                                        "write the values out, or use fewer nested aliases", kind="budget"))
        except RecursionError:
            out.problems.append(Problem(doc.where(doc.root), "nested too deeply to read", None, kind="parse"))
        except (TypeError, ValueError, AttributeError, IndexError) as err:  # a value of a shape no reader expects
            out.problems.append(Problem(doc.where(doc.root), f"cannot read this document: {type(err).__name__}: {err}",
                                        None, kind="parse"))


def _document(out: Scan, doc: nodes.Doc) -> None:
    kind = nodes.text(doc, doc.root, "kind")
    if kind is not None and nodes.text(doc, doc.root, "apiVersion") is not None:
        rule = for_kind(kind)
        if rule is None:
            if kind not in NOT_SERVING:
                api = nodes.text(doc, doc.root, "apiVersion")
                out.problems.append(Problem(doc.where(nodes.get(doc, doc.root, "kind")),
                                            f"unknown kind {kind} ({api}): compat reads no serving container from it",
                                            "if it runs an engine, check its rendered pods (e.g. kubectl get pod -o yaml | "
                                            "compat doctor --manifest -)", kind="kind", level="warning"))
            return
    else:
        rule = for_kindless(doc)
        if rule is None:
            out.skipped.append(doc.where(doc.root))
            return
    for found in rule["read"](doc):
        if isinstance(found, Serving):
            out.servings.append(placed(found, doc.index))
        else:
            out.problems.append(found)


def placed(serving: Serving, index: int) -> Serving:
    """Every word and the image of a serving, marked with the document they are in (what --fix edits)."""
    serving.words = [w if w.document >= 0 else replace(w, document=index) for w in serving.words]
    serving.env = {k: w if w.document >= 0 else replace(w, document=index) for k, w in serving.env.items()}
    if serving.image is not None and serving.image.document < 0:
        serving.image = replace(serving.image, document=index)
    serving.extra.setdefault("document", index)
    return serving


def join_runtimes(out: Scan) -> None:
    """An InferenceService's `model` runs in the container of the ServingRuntime it names: its args and env are
    appended to the runtime's (KServe's merge), its image replaces the runtime's when it gives one."""
    runtimes = {s.extra["serving_runtime"]: s for s in out.servings if s.extra.get("serving_runtime")}
    used: set[int] = set()
    for serving in list(out.servings):
        if "runtime" not in serving.extra:
            continue
        runtime = runtimes.get(serving.extra["runtime"] or "")
        if runtime is None:
            if entry_index([w.text for w in serving.words]) is not None:
                continue
            out.servings.remove(serving)
            name = serving.extra["runtime"] or f"the one for modelFormat {serving.extra.get('model_format')}"
            out.problems.append(Problem(serving.where, f"{serving.resource}: its ServingRuntime ({name}) is not among the "
                                        "files checked: the command its container runs is unknown",
                                        "check the runtime's file with it (compat doctor --manifest isvc.yaml runtime.yaml)",
                                        kind="launch", resource=serving.resource, level="warning"))
            continue
        serving.words = [*runtime.words, *serving.words]
        serving.env = {**runtime.env, **serving.env}
        serving.image = serving.image or runtime.image
        serving.extra["runtime_resource"] = runtime.resource
        used.add(id(runtime))
    out.servings = [s for s in out.servings if id(s) not in used]  # a runtime an InferenceService runs is checked there
