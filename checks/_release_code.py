"""The release's own validation walked with a launch line (compat/guards/), for the checks: the inputs as the release
gets them, the outcome once per context, and the edits of the line that let it through.

The inputs: the line's options by the release's own names (its parser's defaults where the line says nothing,
checks/_launch_args.py), the speculative config object as given (an engine that takes one), the target's and the
drafter's config.json under every name the line may use for them, the platform (`doctor --platform`).
"""

from __future__ import annotations

import re
from typing import Any

from compat import engines
from compat.checks._context import Ctx
from compat.checks._launch_args import read_against, settings
from compat.guards.run import Given, evaluate
from compat.guards.outcome import Outcome
from compat.launch_line import LaunchLine, LineEdit, config_given

FACT = "spec_validation"
MAX_TRIES = 12  # edits of the line tried for a fix
# what the user runs: a fix never changes it (another method or drafter is another question)
KEEP = ("method", "model", "speculative_algorithm", "speculative_draft_model_path", "speculative_draft_model")


def given_of(ctx: Ctx, line: LaunchLine | None = None) -> Given | None:
    line = line or ctx.options.launch
    if line is None:
        return None
    read = read_against(ctx) if line is ctx.options.launch else None
    fact = ctx.fact("cli_arguments")
    if read is None and fact.get("present"):
        from compat.checks._launch_args import read_words

        read = read_words(line, fact)
    values = settings(read, fact) if read is not None and read.present else {}
    for argument in fact.get("arguments") or []:  # an option whose field is named after an alias (--tp-size: tp_size)
        dest = argument["name"].lstrip("-").replace("-", "_")
        if dest in values:
            for alias in argument.get("aliases") or []:
                if alias.startswith("--"):
                    values.setdefault(alias.lstrip("-").replace("-", "_"), values[dest])
    models: dict[str, dict[str, Any]] = {}
    target: str = line.target or str(ctx.target.path)
    for path in (target, str(ctx.target.path)):
        models[path] = ctx.target.config
    if ctx.drafter.present:
        for named in (line.drafter, str(ctx.drafter.path)):
            if named:
                models[named] = ctx.drafter.config
    spec = config_given(line) if engines.get(ctx.engine).spec_in_config else None
    return Given(values, models, target, spec, ctx.options.platform, dict(line.env))


def outcome_of(ctx: Ctx, line: LaunchLine | None = None) -> Outcome | None:
    """What the release's validation does with the line (None: no line, or the release's code was not read)."""
    fact = ctx.fact(FACT)
    given = given_of(ctx, line)
    if given is None or not fact.get("present"):
        return None
    keys = ctx.fact("speculative_config").get("rejects_unknown_keys")
    return evaluate(fact, given, extra_keys="forbid" if keys else None)


def clears(ctx: Ctx, given: Given, site: str) -> bool:
    """The release's validation of `given` no longer raises at `site`: it passes, cannot be told, or a later raise stops
    it (another setting's, which its own fix, or another check's, answers: a method name the method check renames)."""
    fact = ctx.fact(FACT)
    keys = ctx.fact("speculative_config").get("rejects_unknown_keys")
    refused = evaluate(fact, given, extra_keys="forbid" if keys else None).refused
    return refused is None or refused.site.location != site  # what is still unknown is the check's to say, not this fix's


def spec_edits(ctx: Ctx, outcome: Outcome, given: Given) -> list[LineEdit]:
    """Edits of the speculative settings that let the release's validation through: a key the raise's guard reads,
    removed, set to doctor's value, or set to the value the guard compares it with (the first that passes)."""
    refused = outcome.refused
    if refused is None:
        return []
    fields = (ctx.fact(FACT).get("classes") or [{}])[0].get("fields") or {}
    # an option known by other names on the way into the config (LMDeploy's --speculative-dflash-block-size is the
    # builder's local and the config's `dflash_block_size`): the fact's `feeds`, read back to the option
    feeds: dict[str, str] = {str(alias): str(name) for name, entry in fields.items() for alias in entry.get("feeds") or ()}
    words: list[str] = list(refused.reads) + [str(w) for g in refused.guard for w in re.findall(r"[A-Za-z_]\w*", g) if w in feeds]
    options = [feeds[word] if word in feeds else word for word in words]
    read: list[str] = []
    for name in options:
        if name in fields and name not in KEEP and name not in read:
            read.append(name)
    compared = {feeds.get(k, k): v for k, v in refused.compared.items()}
    in_config = engines.get(ctx.engine).spec_in_config
    tries = 0
    for name in read:
        for value in _candidates(ctx, name, given, compared.get(name)):
            tries += 1
            if tries > MAX_TRIES:
                return []
            edited = _edited(given, name, value, in_config, (fields.get(name) or {}).get("default"))
            if edited is not None and clears(ctx, edited, refused.site.location):
                why = (f"{name} removed: the release refuses it here" if value is _REMOVE else
                       f"{name} = {value!r}: the release's validation takes it ({refused.site.location})")
                if value is _REMOVE and not in_config:  # the option's words dropped (a bare flag would still set it)
                    spans = _words(ctx, name)
                    if spans:
                        return [LineEdit("drop", why, start, end) for start, end in spans]
                    continue
                return [LineEdit("spec", why, key=name, value=None if value is _REMOVE else value)] if in_config else \
                    [LineEdit("set", why, option="--" + name.replace("_", "-"), value=None if value is _REMOVE else value)]
    return []


_REMOVE = object()


def _words(ctx: Ctx, dest: str) -> list[tuple[int, int]]:
    """Where the line gives the option whose dest is `dest`: its words [start, end), every occurrence."""
    read = read_against(ctx)
    out = []
    for given in read.given if read is not None else []:
        argument = given.argument or {}
        if argument and (argument.get("dest") or argument["name"].lstrip("-").replace("-", "_")) == dest:
            out.append((given.start, given.end))
    return out


def _candidates(ctx: Ctx, name: str, given: Given, compared: Any) -> list[Any]:
    out: list[Any] = []
    current = (given.spec or {}).get(name, given.settings.get(name))
    if "speculative_tokens" in name or name.endswith("num_steps"):
        out.append(ctx.options.num_speculative_tokens)
    if name.endswith("topk"):
        out.append(ctx.options.topk)
    if isinstance(compared, (bool, int, float, str)):
        out.append(compared)
    if current is not None:
        out.append(_REMOVE)
    if isinstance(current, int) and not isinstance(current, bool):
        out += [1, max(current, 1)]
    return [c for c in out if c is _REMOVE or c != current]


def _edited(given: Given, name: str, value: Any, in_config: bool, default: Any = None) -> Given | None:
    """`given` with `name` set to value (removed: a config's key dropped; an option back to its parser's default)."""
    if in_config:
        spec = dict(given.spec or {})
        if value is _REMOVE:
            spec.pop(name, None)
        else:
            spec[name] = value
        return Given(given.settings, given.models, given.target, spec, given.platform, given.env)
    values = dict(given.settings)
    values[name] = default if value is _REMOVE else value
    return Given(values, given.models, given.target, given.spec, given.platform, given.env)
