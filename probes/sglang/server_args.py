"""SGLang's speculative server arguments: where they are declared, their fields, the algorithm values.

The declaration moved twice (see _server_args.py): ServerArgs fields + add_argument up to
0.5.13.post1, `A[T, Arg(...)]` fields 0.5.14-0.5.19, msgspec `Spec` namespace from 0.5.20.
`--speculative-algorithm` had argparse choices up to 0.5.11; from 0.5.12 it is a free
string checked against the `SpeculativeAlgorithm` enum (sglang/srt/speculative/spec_info.py).
"""

from __future__ import annotations

import ast
import re

from compat.probes import probe
from compat.probes._ast import find_class, methods
from compat.probes.sglang._server_args import is_speculative, server_args_source, style_of
from compat.core.tree import EngineTree

ENUM_HOME = "sglang/srt/speculative/spec_info.py"
_MEMBER = re.compile(r"^[A-Z][A-Z0-9_]*$")


def algorithm_enum(tree: EngineTree) -> dict | None:
    found = find_class(tree, "SpeculativeAlgorithm", prefer=[ENUM_HOME], under="sglang/srt/speculative")
    if found is None:
        return None
    relpath, cls = found
    members = [
        t.id for stmt in cls.body if isinstance(stmt, ast.Assign) for t in stmt.targets
        if isinstance(t, ast.Name) and _MEMBER.match(t.id)
    ]
    return {
        "members": [m for m in members if m != "NONE"],
        "location": tree.loc(relpath, cls),
        "extensible": "register" in methods(cls),  # plugins via SpeculativeAlgorithm.register (0.5.12+)
    }


@probe("sglang", "server_args", "Speculative server arguments (ServerArgs)", order=20)
def server_args(tree: EngineTree) -> dict:
    source = server_args_source(tree)
    if source is None:
        return {"present": False, "reason": "no ServerArgs class under sglang/srt"}
    fields = [f for f in source.fields if is_speculative(f.name)]
    algo_field = next((f for f in source.fields if f.name == "speculative_algorithm"), None)
    owner = algo_field or (fields[0] if fields else None)
    location = tree.loc(source.relpath, source.line)
    if owner is not None and owner.namespace is not None:
        ns = next(cls for path, rel, cls in source.namespaces if rel == owner.relpath and cls.name == owner.owner)
        location = tree.loc(owner.relpath, ns)
    out = {
        "present": True,
        "location": location,
        "declared_in": owner.owner if owner else "ServerArgs",
        "style": style_of(source),
        "fields": [
            {"name": f.name, "type": f.type, "default": f.default, "location": tree.loc(f.relpath, f.node),
             **({"namespace": f.namespace} if f.namespace else {})}
            for f in fields
        ],
    }
    enum = algorithm_enum(tree)
    flag = next((f for f in source.flags if f.dest == "speculative_algorithm"), None)
    if flag is not None and isinstance(flag.choices, list):
        out["algorithms"], out["algorithms_source"] = flag.choices, "argparse choices"
        out["algorithms_location"] = tree.loc(flag.relpath, flag.node)
    elif enum is not None:
        out["algorithms"], out["algorithms_source"] = enum["members"], "SpeculativeAlgorithm enum (free string flag)"
        out["algorithms_location"] = enum["location"]
    else:
        out["algorithms"], out["algorithms_source"], out["algorithms_location"] = [], None, None
    if enum is not None:
        out["algorithm_enum"] = enum
    return out
