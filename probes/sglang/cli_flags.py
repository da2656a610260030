"""SGLang's speculative CLI flags, read without importing SGLang (which pulls torch and triton).

Three definition styles, all read (see _server_args.py): explicit `parser.add_argument`
calls in `ServerArgs.add_cli_args`; `A[T, Arg(...)]` dataclass fields turned into
`--field-name` flags (0.5.14-0.5.19); msgspec namespace fields (0.5.20+).
"""

from __future__ import annotations

from compat.probes import probe
from compat.probes.sglang._server_args import is_speculative, server_args_source
from compat.core.tree import EngineTree


@probe("sglang", "cli_flags", "Speculative CLI flags", order=30)
def cli_flags(tree: EngineTree) -> list[dict]:
    source = server_args_source(tree)
    if source is None:
        return []
    out = []
    for flag in source.flags:
        if not any(is_speculative(n) for n in [flag.name, flag.dest, *flag.aliases]):
            continue
        entry = {
            "name": flag.name, "type": flag.type, "default": flag.default, "choices": flag.choices,
            "aliases": flag.aliases, "location": tree.loc(flag.relpath, flag.node), "style": flag.style,
        }
        if flag.action and flag.action != "store_true":
            entry["action"] = flag.action
        if flag.nargs:
            entry["nargs"] = flag.nargs
        if flag.dest != flag.name.lstrip("-").replace("-", "_"):
            entry["dest"] = flag.dest
        out.append(entry)
    return out
