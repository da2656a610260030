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

from compat.guards.models import hf_config, model_config, platform_calls, platform_object
from compat.guards.program import Program
from compat.guards.outcome import Outcome, Rules
from compat.guards.statements import Interpreter
from compat.guards.values import Obj, Unknown


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
    entry = fact.get("entry")
    if entry:
        return _builder(program, rules, entry, fact, given)
    return _construction(program, rules, fact, given)


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
    model_path = given.target
    if model_path is not None and model_path in given.models:
        rules.names["__target_hf_config__"] = hf_config(given.models[model_path], "hf_config")
    kwargs = {k: v for k, v in given.settings.items() if k in program.classes[cls].fields}
    return interp.build(cls, kwargs)
