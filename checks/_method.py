"""Which method doctor checks, and the names a release gives it (shared by the method checks and the launch command).

Which family's checks run is settled once, in _context.py (`Ctx.method`). The release's own names come from its
probe (`methods`), the family of each from compat.methods.
"""

from __future__ import annotations

from typing import Any

from compat import engines
from compat.checks._context import DEFAULT_FAMILY, Ctx
from compat.methods import Method, Name, NameMatch, Recognition, Unrecognised, find_name, get_method


def accepted_names(ctx: Ctx) -> list[str] | None:
    """The names the release accepts (its probe); None when the probe read none."""
    fact = ctx.fact("methods")
    if not fact.get("present"):
        return None
    if isinstance(fact.get("accepted"), list):
        return [str(n) for n in fact["accepted"]]
    return [str(n.get("name")) for n in fact.get("names") or [] if isinstance(n, dict)]


def name_location(ctx: Ctx, name: str) -> str | None:
    fact = ctx.fact("methods")
    for entry in [*(fact.get("names") or []), *(fact.get("aliases") or [])]:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get("location")
    return fact.get("location")


def release_name(ctx: Ctx, family: str) -> Name | None:
    """The name this release runs the family by (its own first name that the release accepts); for P-EAGLE, the
    EAGLE-3 name it shares."""
    accepted = accepted_names(ctx)
    names = get_method(family).engine_names(ctx.engine)
    # a name the release only promotes to (SGLang's FROZEN_KV_MTP, which EAGLE/NEXTN become for a Gemma4 assistant
    # draft) is reached through the promotion, not named: the name the release promotes from comes first
    promoted = {str(p.get("to")) for p in ctx.fact("methods").get("promotions") or [] if isinstance(p, dict)}
    for name in names:
        if accepted is not None and name.name in accepted and not name.alias_of and name.name not in promoted:
            return name
        if accepted is None and name.accepted_in(str(ctx.report.get("version"))):
            return name
    return next((n for n in sorted(names, key=lambda n: n.name in promoted) if accepted is not None and n.name in accepted),
                None)


def launched_match(ctx: Ctx) -> NameMatch | None:
    launched = ctx.method.launched
    return find_name(ctx.engine, launched) if launched else None


def releases_with(method: Method, engine: str) -> str:
    """The releases that have the family's names, in words (the version gates)."""
    gates = [f"{n.name} ({n.gate()})" for n in method.engine_names(engine) if not n.shared]
    return ", ".join(gates) if gates else f"no {engine} release"


def spec_value(ctx: Ctx, key: str) -> Any:
    """A --speculative-config key of the line (vLLM), else doctor's --spec."""
    line = ctx.options.launch
    if line is not None:
        return line.spec.get(key)
    return ctx.options.extra_spec.get(key)


def drafter_words(found: Recognition | Unrecognised | None) -> str:
    if isinstance(found, Recognition):
        return f"a {get_method(found.family).title} drafter ({found.evidence}; trainer {found.trainer})"
    if isinstance(found, Unrecognised):
        return f"a drafter no method file recognises ({found.seen}; read: {', '.join(found.keys_read)})"
    return "no drafter"


def method_option(ctx: Ctx) -> str | None:
    """The option a flags line names the method with, as the engine's unit gives it (SPEC_SETTING_OPTIONS "method":
    --speculative-algorithm); None: the engine's settings are config keys ("method"), or its unit names none."""
    return engines.get(ctx.engine).setting_option("method")


def method_edit(ctx: Ctx, name: str, why: str):
    """The launch-line edit that runs `name`: vLLM's "method" key, SGLang's --speculative-algorithm (a release with a
    SpeculativeConfig takes the key)."""
    from compat.launch_line import LineEdit

    option = method_option(ctx)
    if ctx.fact("speculative_config").get("present") or option is None:
        return LineEdit("spec", why, key="method", value=name)
    return LineEdit("set", why, option=option, value=name)


def other_families() -> tuple[str, ...]:
    """Every family but EAGLE-3, whose own checks (method, layer-ids, ...) were written first."""
    from compat.methods import families

    return tuple(f for f in families() if f != DEFAULT_FAMILY)
