"""Target model classes that can feed an EAGLE-3 drafter, and the architectures mapped to them.

A target qualifies when `SupportsEagle3` is among its bases, directly or through a parent
class in any model file (`DeepseekV3ForCausalLM(DeepseekV2ForCausalLM)` inherits it from
0.18.0). Before the protocol existed (0.10.0) the runner simply called
`set_aux_hidden_state_layers`, so a class defining that method qualifies ("methods").

Speed: model folders hold hundreds of files, so nothing here parses a model file. Class
headers are found by a byte scan, and only the headers that name a class of interest are
parsed (`class_headers`), walking the inheritance graph outwards from the classes that
mention `SupportsEagle3`. Resolution is by class name, like the research notes (§3.5): two
classes with one name can be confused.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict

from compat.probes import probe
from compat.probes._ast import ClassHeader, class_headers
from compat.probes.vllm._common import MODEL_DIRS, registry_entries, registry_module_file
from compat.core.tree import EngineTree

PROTOCOL = "SupportsEagle3"
HOOK = "set_aux_hidden_state_layers"
# Registry tables of target (generation) models; pooling, speculative and transformers-backend
# tables are not EAGLE-3 targets.
TARGET_TABLES = re.compile(r"GENERATION|MULTIMODAL")
_IDENT = re.compile(rb"[A-Za-z_]\w*")
# vLLM passes the drafter's ids to the target unchanged and captures the residual stream
# entering layer k (research §3.2); see the aux_layer_ids probe for where that is read.
LAYER_ID_OFFSET = 0
CAPTURE = "before layer k"


@probe("vllm", "eagle3_targets", "EAGLE-3 target classes (aux hidden-state hook)", order=50)
def eagle3_targets(tree: EngineTree) -> list[dict]:
    files = [f for d in MODEL_DIRS for f in tree.files(d)]
    headers = {f: class_headers(tree, f) for f in files}
    found = _implementers(tree, headers)
    inherited_from = _add_subclasses(headers, found)
    archs = _architectures(tree, found)
    drafters = _drafter_names(tree)
    out = []
    for (relpath, name), (header, how) in sorted(found.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        registered = archs.get((relpath, name), [])
        out.append({
            "class": name,
            "location": tree.loc(relpath, header.lineno),
            "architectures": registered,
            # Drafter classes that subclass a target (Eagle3DeepseekV2ForCausalLM) inherit the hook too.
            "role": "target" if registered else "drafter" if name in drafters else "unregistered",
            "interface": how,
            "inherits_from": inherited_from.get((relpath, name)),
            "layer_id_offset": LAYER_ID_OFFSET,
            "capture": CAPTURE,
        })
    return out


Found = dict[tuple[str, str], tuple[ClassHeader, str]]  # (file, class) -> (header, "SupportsEagle3" | "methods")


def _implementers(tree: EngineTree, headers: dict[str, list[ClassHeader]]) -> Found:
    """Classes declaring the protocol in their bases; before the protocol existed, classes
    defining the hook method (the 0.10.0 runner called it without any check)."""
    found: Found = {}
    seeds = [f for d in MODEL_DIRS for f in tree.grep(PROTOCOL.encode(), under=d)]
    for relpath in seeds:
        for header in headers.get(relpath, []):
            if PROTOCOL.encode() in header.raw and PROTOCOL in header.bases and "Protocol" not in header.bases:
                found[(relpath, header.name)] = (header, "SupportsEagle3")
    has_protocol = any(h.name == PROTOCOL for hs in headers.values() for h in hs)
    if not has_protocol:
        for relpath in tree.grep(f"def {HOOK}(".encode(), under=MODEL_DIRS[0]):
            for header in _classes_defining(tree, relpath, headers[relpath], HOOK):
                found[(relpath, header.name)] = (header, "methods")
    return found


def _add_subclasses(headers: dict[str, list[ClassHeader]], found: Found) -> dict[tuple[str, str], str]:
    """Add every class whose bases name a found class (in any model file), transitively.
    Returns (file, class) -> the base it inherits the interface from."""
    by_token: dict[bytes, list[tuple[str, ClassHeader]]] = defaultdict(list)
    for relpath, hs in headers.items():
        for header in hs:
            paren = header.raw.find(b"(")
            if paren >= 0:
                for token in set(_IDENT.findall(header.raw, paren)):
                    by_token[token].append((relpath, header))
    inherited_from: dict[tuple[str, str], str] = {}
    queue = [(name, how) for (_, name), (_, how) in found.items()]
    while queue:
        name, how = queue.pop()
        for relpath, header in by_token.get(name.encode(), []):
            key = (relpath, header.name)
            if key in found or name not in header.bases:  # the ast of the header confirms the base
                continue
            found[key] = (header, how)
            inherited_from[key] = name
            queue.append((header.name, how))
    return inherited_from


def _classes_defining(tree: EngineTree, relpath: str, headers: list[ClassHeader], method: str) -> list[ClassHeader]:
    """Top-level classes whose body has `def method(` (the class header just above each def)."""
    data = tree.read_bytes(relpath)
    out = []
    needle = f"def {method}(".encode()
    pos = data.find(needle)
    while pos >= 0:
        owner = None
        for header in headers:
            if header.offset < pos:
                owner = header
            else:
                break
        if owner is not None and owner not in out:
            out.append(owner)
        pos = data.find(needle, pos + 1)
    return out


def _architectures(tree: EngineTree, found: dict) -> dict[tuple[str, str], list[str]]:
    """(file, class) -> registered architecture names of the target tables that resolve to it."""
    by_class: dict[str, list[str]] = defaultdict(list)
    for relpath, name in found:
        by_class[name].append(relpath)
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for entry in registry_entries(tree):
        if not TARGET_TABLES.search(entry.table) or entry.cls not in by_class:
            continue
        module_path = registry_module_file(tree, entry.module)
        # A package (vllm/models/x/) may hold one variant per platform (amd/, nvidia/, ...):
        # the architecture maps to each of them.
        holders = [r for r in by_class[entry.cls] if _module_holds(module_path, r)]
        if not holders and _reexported(tree, module_path, entry.cls, by_class[entry.cls]):
            holders = by_class[entry.cls]
        for relpath in holders:
            if entry.architecture not in out[(relpath, entry.cls)]:
                out[(relpath, entry.cls)].append(entry.architecture)
    return out


def _drafter_names(tree: EngineTree) -> dict[str, list[str]]:
    """class name -> architectures registered for it in the speculative-decoding table."""
    out: dict[str, list[str]] = defaultdict(list)
    for entry in registry_entries(tree):
        if "SPECULATIVE" in entry.table:
            out[entry.cls].append(entry.architecture)
    return out


def _module_holds(module_path: str | None, relpath: str) -> bool:
    if module_path is None:
        return False
    if module_path == relpath:
        return True
    return module_path.endswith("/__init__.py") and relpath.startswith(posixpath.dirname(module_path) + "/")


def _reexported(tree: EngineTree, module_path: str | None, cls: str, defined_in: list[str]) -> bool:
    """The registry's module imports the class from elsewhere (only when the name is unambiguous)."""
    return module_path is not None and len(defined_in) == 1 and cls.encode() in tree.read_bytes(module_path)
