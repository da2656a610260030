"""The engine launch line a user runs, read as typed (`compat doctor --launch "..."`).

The entry points are the engine units' (compat/engines): `vllm serve MODEL ...`, `python -m
vllm.entrypoints.openai.api_server --model MODEL ...`, `python -m sglang.launch_server --model-path MODEL ...`,
`lmdeploy serve api_server MODEL ...` (after any `VAR=value` environment words). This module splits the line as a
shell would, reads its words once (`LaunchLine.words`: which are options, their names, their `=values`) and takes
out what doctor must know before it opens a release: the engine, the target, the drafter and the speculative
settings, by the launch grammar of the engine's unit (its TARGET_OPTIONS, DRAFTER_OPTIONS, SPEC_CONFIG_OPTIONS,
SPEC_SETTING_OPTIONS, ...): the names every release spells them. Which options the release itself knows, the values
it takes and what it does with them is read from the same words against its `cli_arguments` probe fact, by the
checks (checks/_launch_args.py). A line that cannot be read at all (unbalanced quotes, an unknown entry point, a
config option whose value is not JSON) is a UsageError naming the token: never a traceback.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from compat import engines
from compat.core.errors import UsageError

ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PYTHON = re.compile(r"^(.*/)?python(\d+(\.\d+)?)?$")


def hint() -> str:
    """An error's hint: the first engine's example line (its unit's LAUNCH_EXAMPLE), as --launch takes it."""
    example = next((e.launch_example for e in engines.all_engines() if e.launch_example), "")
    return f"e.g. --launch {json.dumps(example)}" if example else "compat doctor --help shows a launch line"


@dataclass(frozen=True)
class Word:
    """One word after the entry point, read once for every reader of the line: an option (a word that starts with '-'
    and is no number) with its name and its `=value`, or another word (a value, a positional)."""

    index: int
    text: str
    option: bool
    name: str  # the option as typed before any '=' (the word itself when it is no option)
    inline: str | None  # the value after '=' (None: no '=')


def is_option(word: str) -> bool:
    """A word argparse takes for an option: it starts with '-', is more than '-', and is no number (`-1` is a value)."""
    return word.startswith("-") and len(word) > 1 and not _number(word)


def split_option(word: str) -> tuple[str, str | None]:
    """`--x=y` -> ("--x", "y"); `--x` -> ("--x", None)."""
    name, eq, inline = word.partition("=")
    return name, inline if eq else None


def read_args(args: tuple[str, ...]) -> tuple[Word, ...]:
    """The words, each read once (is_option, split_option)."""
    out = []
    for i, text in enumerate(args):
        option = is_option(text)
        name, inline = split_option(text) if option else (text, None)
        out.append(Word(i, text, option, name, inline))
    return tuple(out)


@dataclass(frozen=True)
class LaunchLine:
    """A launch line as typed: its words, the entry point, and what doctor reads before the release."""

    text: str
    engine: str  # the engine unit's name
    env: dict[str, str]  # VAR=value words before the command
    entry: tuple[str, ...]  # the words naming the entry point: ("vllm", "serve"), ("python", "-m", "sglang.launch_server")
    args: tuple[str, ...]  # the words after the entry point
    target: str | None
    drafter: str | None
    # SPEC_FORM "config" (vLLM): the config object (JSON, dotted `--speculative-config.key v` merged, the unit's
    # legacy options and shortcuts mapped); "flags": {option: value} of the options with SPEC_OPTION_PREFIX, as typed
    spec: dict[str, Any] = field(default_factory=dict)
    spec_option: str | None = None  # the option that carried the JSON, as typed (config form)
    # config form: (shortcut, key) given both as a SPEC_SHORTCUTS option and in the config (a release that has the
    # shortcut refuses the pair when it builds the config)
    given_twice: tuple[tuple[str, str], ...] = ()

    @cached_property
    def words(self) -> tuple[Word, ...]:
        """The arguments read once: which are options, their names and `=values` (every reader of the line uses them)."""
        return read_args(self.args)

    @property
    def module_form(self) -> bool:
        return "-m" in self.entry

    @property
    def model_unread(self) -> bool:
        """`vllm serve` whose model is not its first word (`vllm serve --trust-remote-code MODEL`), or a flags line whose
        model is positional (`lmdeploy serve api_server --backend pytorch MODEL`): which later word is the model depends
        on which options take a value in the release (compat.checks.served_model reads it there)."""
        unit = engines.get(self.engine)
        positional = not unit.model_option and not (self.module_form and unit.target_options)
        return self.target is None and positional and any(not w.option for w in self.words)

    def setting(self, name: str) -> Any:
        """A speculative setting as the checks name it ("method", "num_speculative_tokens", "topk", ...): the config's
        key, or the option the engine's unit gives it with (SPEC_SETTING_OPTIONS); None: the line does not give it."""
        unit = engines.get(self.engine)
        key = name if unit.spec_in_config else unit.setting_option(name)
        return None if key is None else self.spec.get(key)

    @property
    def method(self) -> str | None:
        """The method the line asks for (vLLM "method" key, SGLang --speculative-algorithm); None: not given."""
        value = self.setting("method")
        return None if value is None else str(value)


def split(text: str) -> list[str]:
    """The words of the line as a POSIX shell splits them (backslash-newlines joined)."""
    try:
        return shlex.split(text.replace("\\\n", " "))
    except ValueError as exc:
        quote = next((q for q in ("'", '"') if text.count(q) % 2), None)
        where = f" (the {quote} at column {text.rfind(quote) + 1} is never closed)" if quote else ""
        raise UsageError(f"--launch: cannot split the line: {exc}{where}", hint="balance the quotes around the JSON") from None


def read_line(text: str | list[str]) -> LaunchLine:
    words = split(text) if isinstance(text, str) else list(text)
    shown = text if isinstance(text, str) else shlex.join(words)
    env: dict[str, str] = {}
    while words and ENV_WORD.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    if words and words[0] == "env":
        return read_line(words[1:])
    engine, entry = _entry(words)
    args = tuple(words[len(entry):])
    line = LaunchLine(shown, engine, env, tuple(entry), args, None, None)
    return _config_form(line) if engines.get(engine).spec_in_config else _flags_form(line)


def _entry(words: list[str]) -> tuple[str, list[str]]:
    """(the engine, the words naming its entry point): a command its unit declares (`vllm serve`), or `python -m`
    one of its modules."""
    units = engines.all_engines()
    for unit in units:
        for command in unit.launch_commands:
            if len(words) >= len(command) and words[0].rsplit("/", 1)[-1] == command[0] and \
                    words[1:len(command)] == list(command[1:]):
                return unit.name, words[:len(command)]
    if len(words) >= 3 and PYTHON.match(words[0]) and words[1] == "-m":
        found = next((unit for unit in units if words[2] in unit.launch_modules), None)
        if found is not None:
            return found.name, words[:3]
        raise UsageError(f"--launch: unknown entry point {words[2]!r} (python -m {words[2]})",
                         hint=_listed([e for unit in units for e in _entries(unit, "")], "or"))
    first = " ".join(words[:2]) or "(an empty line)"
    read = _listed([f"`{e}...`" for unit in units for e in _entries(unit, " ")], "and")
    raise UsageError(f"--launch: unknown entry point {first!r}: doctor reads {read}", hint=hint())


def _entries(unit: engines.Engine, tail: str) -> list[str]:
    """The entry points of a unit as a message names them: its commands (`vllm serve MODEL ...`), its first module."""
    model = " MODEL" if tail and not unit.model_option else ""
    shown = [" ".join(command) + model + tail for command in unit.launch_commands]
    return shown + [f"python -m {module}{tail}" for module in unit.launch_modules[:1]]


def _listed(items: list[str], word: str) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def options(args: tuple[str, ...] | LaunchLine) -> list[tuple[str, str | None, int]]:
    """(option, the word after it or its =value, index) for every option of the words (syntax only); given a line, of
    its words as read once."""
    words = args.words if isinstance(args, LaunchLine) else read_args(args)
    return [(w.name, w.inline if w.inline is not None else (
        words[w.index + 1].text if w.index + 1 < len(words) and not words[w.index + 1].option else None), w.index)
            for w in words if w.option]


def _number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


def spec_json(option: str, value: str | None) -> dict[str, Any]:
    """The --speculative-config value as an object, or a UsageError naming the option and the fault."""
    if value is None:
        raise UsageError(f"--launch: {option} has no value", hint=hint())
    if value in ("", "None"):  # no speculative config: taken from 0.11 (optional_type), refused before (the checks say)
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--launch: {option} {_shown(value)} is not JSON: {exc.msg} at column {exc.colno}",
                         hint="quote the whole object for the shell: --speculative-config '{\"method\": \"eagle3\", ...}'") from None
    except RecursionError:  # json.loads recurses per level: thousands of [ or { exhaust the stack
        raise UsageError(f"--launch: {option} {_shown(value)} is nested too deeply to read", hint=hint()) from None
    except ValueError as exc:  # a number past Python's 4,300-digit limit for int()
        raise UsageError(f"--launch: {option} {_shown(value)} cannot be read: {exc}", hint=hint()) from None
    if not isinstance(parsed, dict):
        raise UsageError(f"--launch: {option} {_shown(value)} is JSON but not an object", hint=hint())
    return parsed


def option_name(typed: str, unit: engines.Engine) -> str:
    """An option's name as the engine's parser reads it: underscores before any `.` as dashes (its unit's
    OPTION_UNDERSCORES), and a unique prefix of one of its ABBREVIATED_OPTIONS as that option (argparse's allow_abbrev)."""
    head, dot, rest = typed.partition(".")
    if head.startswith("--"):
        head = _unique_prefix(_dashed(head, unit), unit)
    return head + dot + rest


def _dashed(typed: str, unit: engines.Engine) -> str:
    return "--" + typed[2:].replace("_", "-") if unit.option_underscores and typed.startswith("--") else typed


def _unique_prefix(typed: str, unit: engines.Engine) -> str:
    """The one of the unit's ABBREVIATED_OPTIONS that `typed` abbreviates (an alias counted as the option it stands
    for), else `typed`. Whether it is unique among all of a release's options is the release's to say:
    checks/_launch_args.py refuses an ambiguous one there."""
    names = unit.abbreviated_options
    if typed in names or not typed.startswith("--") or len(typed) < 4:
        return typed
    hits = {unit.option_named(n) for n in names if n.startswith(typed)}
    return hits.pop() if len(hits) == 1 else typed


def _config_form(line: LaunchLine) -> LaunchLine:
    """The speculative settings as one object (vLLM's --speculative-config, its dotted keys, the shortcuts and legacy
    options of its unit), as every release from 0.10 reads them: the last --speculative-config wins (argparse), dotted
    keys are merged into one object that FlexibleArgumentParser appends last (so it replaces any JSON), shortcuts and
    legacy options add their key; the command form (`vllm serve`) takes the first target option (moved in front as
    the positional), the module form the last."""
    unit = engines.get(line.engine)
    shortcuts_of, legacy_of = dict(unit.spec_shortcuts), dict(unit.spec_legacy_options)
    given, spec_option = _config_object(line, unit)
    added: dict[str, Any] = {}
    shortcuts: dict[str, str] = {}
    models: list[str | None] = []
    for typed, value, _ in options(line):
        name = option_name(typed, unit)
        if name in shortcuts_of:
            added[shortcuts_of[name]] = _json_or_text(value)
            shortcuts[shortcuts_of[name]] = name
        elif name in legacy_of:
            added[legacy_of[name]] = _json_or_text(value)
        elif name in unit.target_options:
            models.append(value)
    spec = dict(given or {})
    twice = tuple((flag, key) for key, flag in shortcuts.items() if key in spec)
    for key, value in added.items():
        spec.setdefault(key, value)
    target = (models[-1] if line.module_form else models[0]) if models else None
    if target is None and not line.module_form and line.words and not line.words[0].option:
        target = line.args[0]
    drafter = spec.get("model")
    return LaunchLine(line.text, line.engine, line.env, line.entry, line.args, target,
                      drafter if isinstance(drafter, str) else None, spec, spec_option, twice)


def config_given(line: LaunchLine) -> dict[str, Any] | None:
    """The config form's object as the release's parser hands it on (vLLM: to EngineArgs; the JSON, or its dotted keys
    merged), before the release adds its shortcuts; None when the line gives none."""
    return _config_object(line, engines.get(line.engine))[0]


def _config_object(line: LaunchLine, unit: engines.Engine) -> tuple[dict[str, Any] | None, str | None]:
    """(the object the SPEC_CONFIG_OPTIONS give: the last JSON, or the dotted keys merged; None: none given, the
    option that carried the last JSON as typed)."""
    whole: dict[str, Any] | None = None
    dotted: dict[str, Any] = {}
    spec_option = None
    for typed, value, _ in options(line):
        head, dot, key = option_name(typed, unit).partition(".")
        if head in unit.spec_config_options and dot:
            _nest(dotted, key.split("."), _json_or_text(value))  # --speculative-config.method eagle3
        elif head in unit.spec_config_options:
            whole, spec_option = spec_json(typed, value), typed
    return (dict(dotted) if dotted else (dict(whole) if whole is not None else None)), spec_option


def _nest(into: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:  # a later --x.a.b replaces a plain value at a (FlexibleArgumentParser's recursive update)
        if not isinstance(into.get(key), dict):
            into[key] = {}
        into = into[key]
    into[keys[-1]] = value


def _flags_form(line: LaunchLine) -> LaunchLine:
    """One option per setting (SGLang's, LMDeploy's --speculative-*): the settings are the options with the unit's
    SPEC_OPTION_PREFIX, as typed; the drafter its DRAFTER_OPTIONS'; the target its TARGET_OPTIONS', or the first word
    when the engine takes its model as a positional (`lmdeploy serve api_server MODEL`, MODEL_OPTION ""; after an
    option, which word it is is the release's to say: model_unread)."""
    unit = engines.get(line.engine)
    spec: dict[str, Any] = {}
    target = drafter = None
    positional = not unit.model_option
    if positional and line.words and not line.words[0].option:
        target = line.args[0]
    for typed, value, _ in options(line):
        name = _unique_prefix(_dashed(typed, unit), unit)
        if name in unit.target_options and not positional:
            target = value
        elif name in unit.drafter_options:
            drafter = value
        if unit.spec_option_prefix and name.startswith(unit.spec_option_prefix) and name not in unit.drafter_options:
            spec[name] = value
    return LaunchLine(line.text, line.engine, line.env, line.entry, line.args, target, drafter, spec)


def _json_or_text(value: str | None) -> Any:
    if value is None:
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):  # not JSON, a number over 4,300 digits, nested too deeply
        return value


def _shown(value: str, width: int = 200) -> str:
    """A value as an error message quotes it: a 100 kB JSON is cut, never echoed whole."""
    return repr(value) if len(value) <= width else f"{value[:width]!r}... ({len(value)} characters)"


# -- the line with the fixes applied --------------------------------------------------------------
@dataclass(frozen=True)
class LineEdit:
    """One change doctor makes to the user's line, from a check that found what the release would refuse or
    degrade: "drop" words [start, end) of the arguments; "set" option to value (its last occurrence, else
    appended; value None: a bare flag); "spec" a --speculative-config key (value None: removed); "positional" the
    value first among the arguments (`vllm serve MODEL`)."""

    kind: str  # "drop" | "set" | "spec" | "positional"
    why: str
    start: int = 0
    end: int = 0
    option: str = ""
    aliases: tuple[str, ...] = ()
    key: str = ""
    value: Any = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", (), None, 0) or k in ("kind", "value")}


def fixed_words(line: LaunchLine, edits: list[LineEdit]) -> list[str]:
    """The user's words with the edits applied: the other arguments kept, in their order."""
    args = list(line.args)
    dropped = {i for e in edits if e.kind == "drop" for i in range(e.start, e.end)}
    unit = engines.get(line.engine)
    in_config = unit.spec_in_config
    spec_words = _spec_words(line, unit) if in_config else []
    spec = dict(line.spec)
    for edit in (e for e in edits if e.kind == "spec"):
        if edit.value is None:
            spec.pop(edit.key, None)
        else:
            spec[edit.key] = edit.value
    kept: list[str | None] = [None if i in dropped else w for i, w in enumerate(args)]
    one_json = len(spec_words) == 1 and option_name(line.words[spec_words[0]].name, unit) in unit.spec_config_options
    if in_config and (spec != line.spec or not one_json or any(i in dropped for i in spec_words)):
        first = min(spec_words) if spec_words else len(kept)
        for i in spec_words:
            for j in _words_of(line.words, i):
                kept[j] = None
        # as typed when long (--speculative_config), else the unit's first (-sc is written --speculative-config)
        option = line.spec_option if (line.spec_option or "").startswith("--") else unit.spec_config_options[0]
        insert = [option, json.dumps(spec, separators=(",", ":"))] if spec else []
        kept = kept[:first] + insert + kept[first:]
    words = [w for w in kept if w is not None]
    for edit in (e for e in edits if e.kind == "set"):
        words = _set(words, edit)
    words = [str(e.value) for e in edits if e.kind == "positional"][:1] + words
    return [*(f"{k}={v}" for k, v in line.env.items()), *line.entry, *words]


def _spec_words(line: LaunchLine, unit: engines.Engine) -> list[int]:
    """The options that give the config form's settings: its config options (dotted too), legacy options, shortcuts."""
    legacy, shortcuts = dict(unit.spec_legacy_options), dict(unit.spec_shortcuts)
    out = []
    for word in (w for w in line.words if w.option):
        name = option_name(word.name, unit)
        if name.split(".", 1)[0] in unit.spec_config_options or name in legacy or name in shortcuts:
            out.append(word.index)
    return out


def _words_of(words: tuple[Word, ...], i: int) -> list[int]:
    """The option at i and its value word (when not given as option=value)."""
    return [i] if words[i].inline is not None or i + 1 >= len(words) or words[i + 1].option else [i, i + 1]


def _set(words: list[str], edit: LineEdit) -> list[str]:
    names = (edit.option, *edit.aliases)
    hit = max((i for i, w in enumerate(words) if w.partition("=")[0] in names), default=None)
    value = [] if edit.value is None else [str(edit.value)]
    if hit is None:
        return [*words, edit.option, *value]
    if "=" in words[hit]:
        return [*words[:hit], f"{words[hit].partition('=')[0]}={edit.value}", *words[hit + 1:]]
    has_value = hit + 1 < len(words) and not is_option(words[hit + 1])
    return [*words[:hit + 1], *value, *words[hit + 1 + (1 if has_value else 0):]]
