"""A launch line read the way this release's parser reads it (shared by the launch-line checks).

The words are the line's, read once by compat/launch_line.py (`LaunchLine.words`: which are options, their
names and `=values`); the options, their aliases, the values they take and how the parser treats what is typed
come from the release's `cli_arguments` probe fact. What argparse would refuse
is said in argparse's words ("unrecognized arguments: ...", "argument --x: invalid int value: 'y'"), so
the user sees what the engine would print, before any GPU time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from compat.checks._context import Ctx
from compat.launch_line import LaunchLine, Word

HELP = {"name": "--help", "aliases": ["-h"], "value": "flag", "location": None}
HUMAN_INT = re.compile(r"^\d+(\.\d+)?[kKmMgGtT]$")  # vLLM's human_readable_int (max-model-len 32k)


@dataclass(frozen=True)
class Given:
    """One option of the line: as typed, the release's argument it names (None: none), its value, its words."""

    typed: str
    argument: dict[str, Any] | None
    value: str | None
    start: int  # words [start, end) of line.args
    end: int
    problem: str | None = None  # what the release's parser says about it, in its words

    @property
    def name(self) -> str | None:
        return self.argument["name"] if self.argument else None


@dataclass(frozen=True)
class Refusal:
    """A raise of the release's parser before argparse (FlexibleArgumentParser.parse_args on `vllm serve`)."""

    rule: str  # the probe's serve_rules name (model-option-refused | positional-model-first), or spec-shortcut-twice
    message: str
    location: str | None


@dataclass
class ReadLine:
    line: LaunchLine
    given: list[Given] = field(default_factory=list)
    positionals: list[tuple[int, str]] = field(default_factory=list)
    extra_positionals: list[tuple[int, str]] = field(default_factory=list)  # more than the parser takes
    unrecognized: list[str] = field(default_factory=list)  # the words argparse lists as "unrecognized arguments"
    present: bool = True  # the release's argument list was read
    refusals: list[Refusal] = field(default_factory=list)  # the parser's own raises, before argparse reads the words

    def find(self, *names: str) -> Given | None:
        """The last occurrence of the argument with one of these names (argparse keeps the last)."""
        hits = [g for g in self.given if g.argument and (g.argument["name"] in names
                                                         or set(g.argument.get("aliases") or []) & set(names))]
        return hits[-1] if hits else None

    def value(self, *names: str) -> str | None:
        hit = self.find(*names)
        return hit.value if hit else None

    @property
    def problems(self) -> list[Given]:
        """The options the parser refuses: its errors, and the options it does not know."""
        return [g for g in self.given if g.problem or g.argument is None]


def read_against(ctx: Ctx) -> ReadLine | None:
    """The launch line of ctx.options read against this release's arguments (None: no line)."""
    line = ctx.options.launch
    if line is None:
        return None
    fact = ctx.fact("cli_arguments")
    if not fact.get("present"):
        return ReadLine(line, present=False)
    return read_words(line, fact)


def _table(fact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for arg in [*(fact.get("arguments") or []), HELP]:
        for name in [arg["name"], *(arg.get("aliases") or [])]:
            table.setdefault(name, arg)
        if arg.get("negatable"):
            table.setdefault("--no-" + arg["name"][2:], {**arg, "value": "flag"})
    return table


def read_words(line: LaunchLine, fact: dict[str, Any]) -> ReadLine:
    """The line as this release's parser reads it, given its `cli_arguments` fact (tests/matrix holds it to the
    release's own parser, built from its source, on every release)."""
    table = _table(fact)
    parser = fact.get("parser") or {}
    positional_slots = sum(1 for a in fact.get("arguments") or [] if a.get("value") == "positional")
    out = ReadLine(line)
    words = line.words
    if not line.module_form:  # the command's parser (`vllm serve`): the rules it applies before argparse
        _serve_rules(out, parser.get("serve_rules") or [])
    _given_twice(out, table)
    i = 0
    while i < len(words):
        word = words[i].text
        if not words[i].option:
            if len(out.positionals) < positional_slots:
                out.positionals.append((i, word))
            else:
                out.extra_positionals.append((i, word))
                out.unrecognized.append(word)
            i += 1
            continue
        typed, inline = words[i].name, words[i].inline
        eq = inline is not None
        name = typed
        if parser.get("underscores_to_dashes") and name.startswith("--"):
            head, dot, rest = name.partition(".")
            name = head.replace("_", "-") + dot + rest
        if name.startswith("-O") and name not in table and "--optimization-level" in table:
            out.given.append(Given(word, table["--optimization-level"], name[2:].lstrip("=") or None, i, i + 1))
            i += 1
            continue
        base = name.split(".", 1)[0] if name.startswith("--") else name
        argument, problem = _lookup(table, base, parser)
        if argument is None:
            end = i + 1
            while end < len(words) and not words[end].option and not eq:
                end += 1
            out.given.append(Given(typed, None, inline, i, end, problem))
            if problem is None:  # argparse: the words after it fill an open positional first, the rest are extras
                out.unrecognized.append(word)
                for j in range(i + 1, end):
                    if len(out.positionals) < positional_slots:
                        out.positionals.append((j, words[j].text))
                    else:
                        out.unrecognized.append(words[j].text)
            i = end
            continue
        if "." in name and name.startswith("--"):  # vLLM: --speculative-config.method eagle3
            value, end = (inline, i + 1) if eq else ((words[i + 1].text, i + 2) if i + 1 < len(words) else (None, i + 1))
            out.given.append(Given(typed, argument, value, i, end))
            i = end
            continue
        given, i = _take_value(argument, typed, words, i, inline)
        out.given.append(given)
    return out


def served_model(line: LaunchLine, fact: dict[str, Any]) -> str | None:
    """The model this release serves from the line's words: the first positional as its parser takes it (`vllm serve
    --trust-remote-code MODEL`: a flag first; `--port 8000 MODEL`: a value first), or `--model`'s value where the parser
    moves it in front; None when the parser takes no positional (the module form: `--model`, read by the line)."""
    read = read_words(line, fact)
    return read.positionals[0][1] if read.positionals else None


def _serve_rules(out: ReadLine, rules: list[dict[str, Any]]) -> None:
    """What FlexibleArgumentParser.parse_args does to a `vllm serve` line before argparse (the probe's serve_rules):
    refuse `--model`; or move `--model M` in front as the positional; refuse a line that starts with an option and
    names --served-model-name."""
    words = out.line.args
    read = out.line.words
    by_rule = {r["rule"]: r for r in rules}
    model = next((w.index for w in read if w.option and w.name == "--model"), None)
    if "model-option-refused" in by_rule and "--model" in words:
        rule = by_rule["model-option-refused"]
        out.refusals.append(Refusal(rule["rule"], f"ValueError: {rule['message']}", rule["location"]))
    elif "model-option-moved" in by_rule and model is not None:
        value_at = model if "=" in words[model] else model + 1
        if value_at < len(words):
            out.positionals.append((value_at, words[value_at].removeprefix("--model=")))
    first = by_rule.get("positional-model-first")
    if first and read and read[0].option and not ("model-option-moved" in by_rule and model is not None):
        served = any(re.match(r"^--served[-_]model[-_]name(=.+|$)", w) for w in words)
        configured = any(re.match(r"^--config(=.+|$)", w) for w in words)
        if not configured and (served or first.get("when") is None):
            out.refusals.append(Refusal(first["rule"], f"ValueError: {first['message']}", first["location"]))


def _given_twice(out: ReadLine, table: dict[str, dict[str, Any]]) -> None:
    """vLLM 0.22+: a key given by --spec-method/--spec-model/--spec-tokens and in --speculative-config is refused
    when the release builds its config (EngineArgs.create_speculative_config), in its words."""
    for flag, key in out.line.given_twice:
        if flag in table:
            out.refusals.append(Refusal("spec-shortcut-twice", f"ValueError: {flag} and --speculative-config['{key}'] "
                                        "are mutually exclusive", table[flag].get("location")))


def _lookup(table: dict[str, dict[str, Any]], name: str, parser: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    if name in table:
        return table[name], None
    if name.startswith("--") and parser.get("allow_abbrev", True):  # argparse: a unique prefix of a long option
        matches = [k for k in table if k.startswith(name) and k.startswith("--")]  # in the order they were declared
        if len({table[k]["name"] for k in matches}) == 1:
            return table[matches[0]], None
        if len(matches) > 1:
            return None, f"ambiguous option: {name} could match {', '.join(matches)}"
    return None, None


def _take_value(argument: dict[str, Any], typed: str, words: tuple[Word, ...], i: int, inline: str | None) -> tuple[Given, int]:
    given, end = _value_of(argument, typed, words, i, inline)
    refused = argument.get("refused")  # its own Action refuses it (a deprecated option): the message the user sees
    if refused and not given.problem:
        given = Given(given.typed, given.argument, given.value, given.start, given.end, refused["message"])
    return given, end


def _value_of(argument: dict[str, Any], typed: str, words: tuple[Word, ...], i: int, inline: str | None) -> tuple[Given, int]:
    kind = argument.get("value")
    negated = ["--no-" + argument["name"][2:]] if argument.get("negatable") else []  # BooleanOptionalAction's pair
    label = "/".join([argument["name"], *(argument.get("aliases") or []), *negated])
    if kind == "flag" or (kind == "bool" and argument.get("negatable")):
        if inline is not None:
            return Given(typed, argument, inline, i, i + 1, f"argument {label}: ignored explicit argument {inline!r}"), i + 1
        return Given(typed, argument, None, i, i + 1), i + 1
    if argument.get("nargs") in ("+", "*") or kind == "list":
        end = i + 1
        while end < len(words) and not words[end].option:
            end += 1
        items = [inline] if inline is not None else [w.text for w in words[i + 1:end]]
        stop = end if inline is None else i + 1
        if not items and argument.get("nargs") == "+":
            return Given(typed, argument, None, i, stop, f"argument {label}: expected at least one argument"), stop
        item = {"value": argument.get("item")} if argument.get("item") in ("int", "float") else None
        problem = next((p for p in (_bad_value(item, label, v) for v in items) if p), None) if item else None
        return Given(typed, argument, " ".join(items) or None, i, stop, problem), stop
    if inline is not None:
        value, end = inline, i + 1
    elif i + 1 < len(words) and not words[i + 1].option:
        value, end = words[i + 1].text, i + 2
    elif argument.get("nargs") == "?":
        return Given(typed, argument, None, i, i + 1), i + 1
    else:
        return Given(typed, argument, None, i, i + 1, f"argument {label}: expected one argument"), i + 1
    return Given(typed, argument, value, i, end, _bad_value(argument, label, value)), end


def _bad_value(argument: dict[str, Any], label: str, value: str) -> str | None:
    kind = argument.get("value")
    if argument.get("empty_is_none") and value in ("", "None"):  # optional_type: no value
        return None
    if kind == "int":
        try:
            int(value)
        except ValueError:
            if not HUMAN_INT.match(value):
                return f"argument {label}: invalid int value: {value!r}"
    elif kind == "float":
        try:
            float(value)
        except ValueError:
            return f"argument {label}: invalid float value: {value!r}"
    elif kind == "json":
        try:
            json.loads(value)
        except json.JSONDecodeError:
            return f"argument {label}: invalid loads value: {value!r}"
    choices = argument.get("choices")
    if isinstance(choices, list) and choices and value not in [str(c) for c in choices]:
        listed = ", ".join(repr(c) for c in choices)  # argparse's words: repr of each (None unquoted)
        shown = int(value) if kind == "int" and value.lstrip("-").isdigit() else value  # the value after its type
        return f"argument {label}: invalid choice: {shown!r} (choose from {listed})"
    return None


def settings(read: ReadLine, fact: dict[str, Any]) -> dict[str, Any]:
    """dest -> the value the release starts with: the line's (as the argument's type), else the default it declares."""
    out: dict[str, Any] = {}
    by_name = {}
    for arg in fact.get("arguments") or []:
        dest = arg.get("dest") or arg["name"].lstrip("-").replace("-", "_")
        by_name[arg["name"]] = dest
        if "default" in arg:
            out[dest] = arg["default"]
    for given in read.given:
        if given.argument is None or given.problem:
            continue
        dest = by_name.get(given.argument["name"], given.argument["name"].lstrip("-").replace("-", "_"))
        out[dest] = _typed(given)
    return out


def _typed(given: Given) -> Any:
    kind = (given.argument or {}).get("value")
    if kind == "flag" or (kind == "bool" and given.value is None):
        return not given.typed.startswith("--no-")
    if kind in ("int", "float") and given.value is not None:
        try:
            return int(given.value) if kind == "int" else float(given.value)
        except ValueError:
            return given.value
    return given.value


def env_switches(line: LaunchLine, defaults: dict[str, Any]) -> dict[str, Any]:
    """NAME -> its value for the rules: the line's VAR=value words (as booleans, like SGLang's EnvBool), else the default."""
    out = {name: spec.get("default") for name, spec in defaults.items()}
    for name, value in line.env.items():
        out[name] = value.strip().lower() in ("1", "true", "yes", "on")
    return out
