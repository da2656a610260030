"""The packages LMDeploy's speculative methods need beyond LMDeploy's own dependencies (probes/method_packages.py):
what each method's proposer module imports inside its functions, on their straight path, or guards with an
ImportError that raises. A method is the name its proposer is registered under (`@SPEC_PROPOSERS.register_module(
name='eagle3')`, lmdeploy/pytorch/spec_decode/proposers/); a proposer that extends another (Eagle3(DeepseekMTP))
needs its base's too. No release read here (0.11.0-0.18.0) has one.

    {"present": true, "location": "...", "methods": {"eagle3": [requirement, ...], ...}}
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import registered_proposers
from compat.probes.method_packages import module_requirements


@probe("lmdeploy", "method_packages", "Packages a method needs beyond LMDeploy's own dependencies", order=90)
def method_packages(tree: EngineTree) -> dict:
    proposers = registered_proposers(tree)
    if not proposers:
        return {"present": False, "reason": "no proposer registered under lmdeploy/pytorch/spec_decode"}
    by_class = {p.cls: p for p in proposers}
    methods: dict[str, list[dict]] = {}
    for proposer in proposers:
        files, seen, todo = [], set(), [proposer]
        while todo:  # the proposer's module, then its registered bases' (Eagle3 -> DeepseekMTP)
            current = todo.pop()
            if current.cls in seen:
                continue
            seen.add(current.cls)
            files.append(current.relpath)
            todo += [by_class[b] for b in current.bases if b in by_class]
        needs = [r for relpath in dict.fromkeys(files) for r in module_requirements(tree, relpath)]
        methods[proposer.method] = list({r["module"]: r for r in needs}.values())
    first = proposers[0]
    return {"present": True, "location": tree.loc(first.relpath, first.node), "methods": methods}
