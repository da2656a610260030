"""One release's validation walked with the user's values (`evaluate`): the inputs as the release gets them, the
program of its spec_validation fact, the modelled calls (models.py), and the walk's outcome.

The inputs (`Given`): the line's options by the release's own names (what its parser sets: a value the line gives,
else the default the release declares), the speculative config object as given (engines that take one), the
config.json of each model the line names, the platform and the line's environment. Two forms of entry, as the fact
says: a builder method (`EngineArgs.create_speculative_config(self, target_model_config=..., ...)`: `self` is the
parsed arguments, the target's configs are built from the same arguments as the release builds them) or the server
arguments' own construction (SGLang: `ServerArgs(...)`, its `__post_init__` and the handlers it calls).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from compat.guards.models import environment, file_calls, model_config, platform_calls, platform_object
from compat.guards.program import Program
from compat.guards.expressions import parse
from compat.guards.outcome import Outcome, Raised, Refused, Rules, Site
from compat.guards.statements import Interpreter
from compat.guards.values import Obj, Unknown


VIEWS = ("resolved_view", "resolving_view")  # a server's arguments seen through a view: the arguments


@dataclass
class Given:
    settings: dict[str, Any]  # option dest -> value (the line's, else the release's default)
    models: dict[str, dict[str, Any]]  # a path as the line names it -> that model's config.json
    target: str | None  # the target's path as the line names it
    spec: dict[str, Any] | None = None  # the speculative config object as given (None: none given)
    platform: str = "cuda"
    env: dict[str, str] = field(default_factory=dict)


def evaluate(fact: dict[str, Any], given: Given, *, extra_keys: str | None = None) -> Outcome:
    """What the release's validation does with these inputs (fact: its spec_validation probe fact)."""
    if not fact.get("present"):
        raise ValueError("no spec_validation fact to evaluate (the probe found nothing or failed)")
    program = Program.of(fact)
    rules = Rules(names={"current_platform": platform_object(given.platform)}, extra_keys=extra_keys)
    rules.calls.update(platform_calls(given.platform))

    def built_model(interp: Interpreter, args: list[Any], kwargs: dict[str, Any]) -> Any:
        path = kwargs.get("model", args[0] if args else None)
        if not isinstance(path, str):
            return Unknown("a model config built from an unknown path")
        return model_config(interp, path, given.models.get(path), kwargs, f"model_config({path})", fact.get("registry"))

    rules.calls["ModelConfig"] = built_model
    rules.calls.update(file_calls(given.models))

    def from_server_args(interp: Interpreter, args: list[Any], kwargs: dict[str, Any]) -> Any:
        server = args[0] if args else None
        path = server.get("model_path") if isinstance(server, Obj) else None
        if not isinstance(path, str):
            return Unknown("the model config of the server's model")
        return model_config(interp, path, given.models.get(path), {}, "model_config", fact.get("registry"))

    rules.calls["from_server_args"] = from_server_args
    for view in VIEWS:  # a view of the server arguments reads their values (checks/_rules.py reads it so too)
        rules.calls[view] = lambda interp, args, kwargs: args[0] if args else Unknown("a view")
    rules.first = frozenset(VIEWS)
    if fact.get("envs") is not None:
        rules.names["envs"] = environment(fact["envs"], given.env)

    def getenv(interp: Interpreter, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = args[0] if args else None
        if not isinstance(name, str):
            return Unknown("an environment variable")
        return given.env.get(name, args[1] if len(args) > 1 else kwargs.get("default"))

    rules.calls["os.getenv"] = rules.calls["os.environ.get"] = getenv
    if fact.get("env_reads"):  # vLLM's envs.NAME: the release's expression, with the line's environment
        reader = Interpreter(program, rules)
        rules.names["envs"] = Obj("envs", {name: reader.value(parse(text)) for name, text in fact["env_reads"].items()},
                                  kind="envs")
    entry = fact.get("entry")
    if entry:
        return _unwalked(_engine(program, rules, fact, given, _builder(program, rules, entry, fact, given)), fact)
    return _construction(program, rules, fact, given)


def _engine(program: Program, rules: Rules, fact: dict[str, Any], given: Given, outcome: Outcome) -> Outcome:
    """The engine's build from the config the entry returned (the fact's "engine" stage, LMDeploy's): its engine
    config built from the line (`from_args`: field -> option dest; the class's defaults for the rest), the cache and
    distribution configs the release builds from it, then its speculative build (`function(target, config, engine
    config, cache config, dist config)`). Certain where the line's setting is `when`'s value, else what may happen."""
    stage = fact.get("engine")
    if not stage or outcome.refused is not None or not isinstance(outcome.result, Obj):
        return outcome
    when = stage.get("when") or {}
    certain = not when or given.settings.get(str(when.get("setting"))) == when.get("equals")
    why = () if certain else (f"whether the release runs this engine ({when.get('setting')} is not "
                              f"{when.get('equals')!r} on the line: the release picks it; {when.get('location')})",)
    interp = Interpreter(program, rules)
    interp.outcome = outcome
    kwargs = {name: given.settings[dest] for name, dest in (stage.get("from_args") or {}).items() if dest in given.settings}
    try:
        config = interp.construct(stage["config_class"], [], kwargs) if stage["config_class"] in program.classes \
            else Unknown(stage["config_class"])
        cache = interp.call(stage["cache"], [config], {}, certain=certain, why=why)
        dist = interp.call(stage["dist"], [config], {}, certain=certain, why=why)
        interp.call(stage["function"], [given.target, outcome.result, config, cache, dist], {}, certain=certain, why=why)
    except Refused as stop:
        outcome.refused = stop.raised
    return outcome


def _unwalked(outcome: Outcome, fact: dict[str, Any]) -> Outcome:
    """The raises of a part of the path the fact says it does not walk (LMDeploy's engine side: {"location",
    "function", "raises", "message", "field", "values" | "except"}), on the paths of the config built whose `field`
    is one of `values` (or none of `except`; neither: every path): each is one that may happen, never a pass."""
    result = outcome.result
    if outcome.refused is not None or not isinstance(result, Obj):
        return outcome
    for entry in fact.get("unwalked") or ():
        value = result.get(entry["field"])
        if isinstance(value, Unknown) or ("values" not in entry and "except" not in entry) \
                or value in entry.get("values", ()) or ("except" in entry and value not in entry["except"]):
            file, _, line = entry["location"].rpartition(":")
            site = Site(file, int(line), entry["function"], entry.get("raises"), entry.get("message") or "")
            outcome.maybe.append(Raised(site, (f"the engine's check when it starts, not walked ({entry['field']} = "
                                               f"{value!r})",)))
    return outcome


def _builder(program: Program, rules: Rules, entry: str, fact: dict[str, Any], given: Given) -> Outcome:
    owner = entry.partition(".")[0]
    spec = program.classes.get(owner)
    args = Obj(owner, kind=owner)
    for name, entry_field in (spec.fields.items() if spec is not None else ()):
        default = entry_field.get("default")
        args.set(name, copy.deepcopy(default) if not isinstance(default, dict) or "expr" not in default else Unknown(name))
    for name, value in given.settings.items():
        args.set(name, value)
    args.set("model", given.target if given.target is not None else args.get("model"))
    args.set("speculative_config", copy.deepcopy(given.spec))
    kwargs: dict[str, Any] = {}
    for param, keywords in (fact.get("target_inputs") or {}).items():
        values = {attr: args.get(source) for attr, source in keywords.items()}
        values = {k: v for k, v in values.items() if not isinstance(v, Unknown)}
        if "model" in keywords:
            target = given.target or ""
            kwargs[param] = model_config(None, target, given.models.get(target), values, param)
        else:
            kwargs[param] = Obj(param, {k: v for k, v in values.items() if v is not None}, kind=param)
    return Interpreter(program, rules).run(entry, [args], kwargs)


def _construction(program: Program, rules: Rules, fact: dict[str, Any], given: Given) -> Outcome:
    """The server arguments built from the line: the class's construction run on its fields."""
    cls = fact.get("server_class")
    if not cls or cls not in program.classes:
        out = Outcome()
        return out
    interp = Interpreter(program, rules)
    kwargs = {k: v for k, v in given.settings.items() if k in program.classes[cls].fields}
    if given.target is not None and "model_path" in program.classes[cls].fields:
        kwargs.setdefault("model_path", given.target)
    return interp.build(cls, kwargs)
