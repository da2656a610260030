"""LMDeploy's speculative methods: the names `--speculative-algorithm` accepts and the proposer each runs.

The flag's argparse `choices` (lmdeploy/cli/utils.py `add_spec_group`) decide what the CLI takes; the proposers
registered with `@SPEC_PROPOSERS.register_module(name=...)` under lmdeploy/pytorch/spec_decode decide what the
engine builds (`build_specdecode_proposer` raises `ValueError('<method> not found in ...')` for any other). 0.11.0:
eagle, eagle3, deepseek_mtp; qwen3_5_mtp from 0.12.3, hy3_mtp from 0.16.0, dflash from 0.18.0. Names are taken as
typed (lower case): no alias, no case folding. The Python API (`SpeculativeConfig(method=...)`) skips the CLI's
choices: only the registry decides there.
"""

from __future__ import annotations

from compat.core.tree import EngineTree
from compat.probes import probe
from compat.probes.lmdeploy._source import ALGORITHM_FLAG, registered_proposers, speculative_flags


@probe("lmdeploy", "methods", "Speculative methods (--speculative-algorithm names, proposers)", order=89)
def speculative_methods(tree: EngineTree) -> dict:
    proposers = registered_proposers(tree)
    flag = next((f for f in speculative_flags(tree) if f.name == ALGORITHM_FLAG), None)
    if not proposers and flag is None:
        return {"present": False, "reason": "no --speculative-algorithm flag under lmdeploy/cli and no proposer "
                                            "registered under lmdeploy/pytorch/spec_decode"}
    choices = flag.value("choices") if flag is not None else None
    choices = choices if isinstance(choices, list) else None
    names = [{"name": p.method, "location": tree.loc(p.relpath, p.node), "declared": "registered", "proposer": p.cls,
              "bases": list(p.bases)} for p in proposers]
    registered = [n["name"] for n in names]
    return {
        "present": True,
        "location": names[0]["location"] if names else tree.loc(flag.relpath, flag.call) if flag else None,
        "declared_by": "SPEC_PROPOSERS registry",
        "names": names,
        "aliases": [],
        "accepted": list(choices) if choices is not None else registered,
        "accepted_from": "argparse choices" if choices is not None else "registered proposers",
        "case": "as typed",
        "choices": choices,
        "choices_location": tree.loc(flag.relpath, flag.call) if flag is not None else None,
        "workers": {p.method: {"class": p.cls, "module": p.relpath[:-3].replace("/", "."), "location": tree.loc(p.relpath, p.node)}
                    for p in proposers},
        # a name the CLI takes that no proposer serves fails at engine start; one only the registry has is Python-API only
        "without_proposer": [c for c in choices or [] if c not in registered],
        "python_api_only": [n for n in registered if choices is not None and n not in choices],
    }
