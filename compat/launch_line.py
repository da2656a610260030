"""The engine launch line a user runs, read as typed (`compat doctor --launch "..."`).

Three entry points: `vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server --model MODEL ...`
and `python -m sglang.launch_server --model-path MODEL ...` (after any `VAR=value` environment words). This
module splits the line as a shell would and takes out what doctor must know before it opens a release:
the engine, the target, the drafter and the speculative settings, by the names every release spells them.
Which options the release itself knows, the values it takes and what it does with them is read against its
`cli_arguments` probe fact, by the checks (checks/_launch_args.py). A line that cannot be read at all
(unbalanced quotes, an unknown entry point, `--speculative-config` that is not JSON) is a UsageError naming
the token: never a traceback.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from compat import engines
from compat.core.errors import UsageError

ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PYTHON = re.compile(r"^(.*/)?python(\d+(\.\d+)?)?$")
# vLLM: the options that carry the speculative settings. --speculative-config (FlexibleArgumentParser also
# takes --speculative_config; -sc from 0.2x) and the flat flags of releases before the JSON config.
VLLM_SPEC_CONFIG = ("--speculative-config", "--speculative_config", "-sc")
VLLM_FLAT = {"--speculative-model": "model", "--num-speculative-tokens": "num_speculative_tokens",
             "--speculative-draft-tensor-parallel-size": "draft_tensor_parallel_size",
             "--speculative-model-quantization": "quantization", "--speculative-max-model-len": "max_model_len"}
# vLLM 0.22+: --spec-method/--spec-model/--spec-tokens, merged into the config after parsing
# (EngineArgs.create_speculative_config, which refuses a key given both ways).
VLLM_SPEC_SHORTCUTS = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}
# the long options whose unique prefixes argparse takes for them (allow_abbrev): an abbreviation that is ambiguous
# in a release is refused there (checks/_launch_args.py reads it against the release's own list)
VLLM_ABBREVIATED = ("--speculative-config", *VLLM_SPEC_SHORTCUTS)
VLLM_TARGET = ("--model",)
SGLANG_TARGET = ("--model-path", "--model")
SGLANG_DRAFTER = ("--speculative-draft-model-path", "--speculative-draft-model")
# what doctor reads of an SGLang line, whose unique prefixes argparse takes for them (allow_abbrev)
ALIAS_OF = {"--speculative-draft-model": "--speculative-draft-model-path", "--model": "--model-path"}  # SGLang's aliases
SGLANG_ABBREVIATED = (*SGLANG_TARGET, *SGLANG_DRAFTER, "--speculative-algorithm", "--speculative-num-steps",
                      "--speculative-eagle-topk", "--speculative-num-draft-tokens")
HINT = ('e.g. --launch "vllm serve ./target --speculative-config \'{\\"method\\": \\"eagle3\\", '
        '\\"model\\": \\"./drafter\\", \\"num_speculative_tokens\\": 3}\'"')


@dataclass(frozen=True)
class LaunchLine:
    """A launch line as typed: its words, the entry point, and what doctor reads before the release."""

    text: str
    engine: str  # "vllm" | "sglang"
    env: dict[str, str]  # VAR=value words before the command
    entry: tuple[str, ...]  # the words naming the entry point: ("vllm", "serve"), ("python", "-m", "sglang.launch_server")
    args: tuple[str, ...]  # the words after the entry point
    target: str | None
    drafter: str | None
    # vLLM: the --speculative-config object (JSON, dotted `--speculative-config.key v` merged, flat flags mapped);
    # SGLang: {flag: value} of the --speculative-* options as typed
    spec: dict[str, Any] = field(default_factory=dict)
    spec_option: str | None = None  # the option that carried the JSON, as typed (vLLM)
    # vLLM: (shortcut, key) given both as --spec-method/--spec-model/--spec-tokens and in the config (a release that
    # has the shortcuts refuses the pair when it builds the config)
    given_twice: tuple[tuple[str, str], ...] = ()

    @property
    def module_form(self) -> bool:
        return "-m" in self.entry

    @property
    def model_unread(self) -> bool:
        """`vllm serve` whose model is not its first word (`vllm serve --trust-remote-code MODEL`), or a flags line whose
        model is positional (`lmdeploy serve api_server --backend pytorch MODEL`): which later word is the model depends
        on which options take a value in the release (compat.checks.served_model reads it there)."""
        unit = engines.get(self.engine)
        positional = self.entry[-1:] == ("serve",) or not (unit.spec_in_config or unit.model_option)
        return self.target is None and positional and any(not _is_option(w) for w in self.args)

    @property
    def method(self) -> str | None:
        """The method the line asks for (vLLM "method" key, SGLang --speculative-algorithm); None: not given."""
        value = self.spec.get("method" if engines.get(self.engine).spec_in_config else "--speculative-algorithm")
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
                         hint="vllm serve, python -m vllm.entrypoints.openai.api_server or python -m sglang.launch_server")
    first = " ".join(words[:2]) or "(an empty line)"
    raise UsageError(f"--launch: unknown entry point {first!r}: doctor reads `vllm serve MODEL ...`, "
                     "`python -m vllm.entrypoints.openai.api_server ...` and `python -m sglang.launch_server ...`", hint=HINT)


def options(args: tuple[str, ...]) -> list[tuple[str, str | None, int]]:
    """(option, the word after it or its =value, index) for every word that starts with '-' (syntax only)."""
    out = []
    for i, word in enumerate(args):
        if word.startswith("-") and len(word) > 1 and not _number(word):
            name, eq, inline = word.partition("=")
            value = inline if eq else (args[i + 1] if i + 1 < len(args) and not _is_option(args[i + 1]) else None)
            out.append((name, value, i))
    return out


def _number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


def _is_option(word: str) -> bool:
    return word.startswith("-") and len(word) > 1 and not _number(word)


def spec_json(option: str, value: str | None) -> dict[str, Any]:
    """The --speculative-config value as an object, or a UsageError naming the option and the fault."""
    if value is None:
        raise UsageError(f"--launch: {option} has no value", hint=HINT)
    if value in ("", "None"):  # no speculative config: taken from 0.11 (optional_type), refused before (the checks say)
        return {}
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--launch: {option} {_shown(value)} is not JSON: {exc.msg} at column {exc.colno}",
                         hint="quote the whole object for the shell: --speculative-config '{\"method\": \"eagle3\", ...}'") from None
    except RecursionError:  # json.loads recurses per level: thousands of [ or { exhaust the stack
        raise UsageError(f"--launch: {option} {_shown(value)} is nested too deeply to read", hint=HINT) from None
    except ValueError as exc:  # a number past Python's 4,300-digit limit for int()
        raise UsageError(f"--launch: {option} {_shown(value)} cannot be read: {exc}", hint=HINT) from None
    if not isinstance(parsed, dict):
        raise UsageError(f"--launch: {option} {_shown(value)} is JSON but not an object", hint=HINT)
    return parsed


def vllm_name(typed: str) -> str:
    """An option's name as vLLM's parser reads it: FlexibleArgumentParser turns underscores before any `.` into dashes,
    and argparse takes a unique prefix of a long option (of the speculative ones, here)."""
    head, dot, rest = typed.partition(".")
    if head.startswith("--"):
        head = _unique_prefix("--" + head[2:].replace("_", "-"), VLLM_ABBREVIATED)
    return head + dot + rest


def _unique_prefix(typed: str, names: tuple[str, ...]) -> str:
    """The one of `names` that `typed` abbreviates (argparse's allow_abbrev), else `typed`. Whether it is unique among
    all of a release's options is the release's to say: checks/_launch_args.py refuses an ambiguous one there."""
    if typed in names or not typed.startswith("--") or len(typed) < 4:
        return typed
    hits = {ALIAS_OF.get(n, n) for n in names if n.startswith(typed)}
    return hits.pop() if len(hits) == 1 else typed


def _config_form(line: LaunchLine) -> LaunchLine:
    """vLLM's --speculative-config (its dotted keys, the shortcuts, the flat flags of older releases), as every release
    from 0.10 reads it: the last --speculative-config wins (argparse), dotted keys are merged into
    one object that FlexibleArgumentParser appends last (so it replaces any JSON), shortcuts and flat flags add their
    key; `vllm serve` takes the first --model (moved in front as the positional), the module form the last."""
    whole: dict[str, Any] | None = None
    dotted: dict[str, Any] = {}
    added: dict[str, Any] = {}
    shortcuts: dict[str, str] = {}
    models: list[str | None] = []
    spec_option = None
    for typed, value, _ in options(line.args):
        name = vllm_name(typed)
        head, dot, key = name.partition(".")
        if head in VLLM_SPEC_CONFIG and dot:
            _nest(dotted, key.split("."), _json_or_text(value))  # --speculative-config.method eagle3
        elif head in VLLM_SPEC_CONFIG:
            whole, spec_option = spec_json(typed, value), typed
        elif name in VLLM_SPEC_SHORTCUTS:
            added[VLLM_SPEC_SHORTCUTS[name]] = _json_or_text(value)
            shortcuts[VLLM_SPEC_SHORTCUTS[name]] = name
        elif name in VLLM_FLAT:
            added[VLLM_FLAT[name]] = _json_or_text(value)
        elif name in VLLM_TARGET:
            models.append(value)
    spec = dict(dotted) if dotted else dict(whole or {})
    twice = tuple((flag, key) for key, flag in shortcuts.items() if key in spec)
    for key, value in added.items():
        spec.setdefault(key, value)
    serve = line.entry[-1] == "serve"
    target = (models[0] if serve else models[-1]) if models else None
    if target is None and serve and line.args and not _is_option(line.args[0]):
        target = line.args[0]
    drafter = spec.get("model")
    return LaunchLine(line.text, line.engine, line.env, line.entry, line.args, target,
                      drafter if isinstance(drafter, str) else None, spec, spec_option, twice)


def _nest(into: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:  # a later --x.a.b replaces a plain value at a (FlexibleArgumentParser's recursive update)
        if not isinstance(into.get(key), dict):
            into[key] = {}
        into = into[key]
    into[keys[-1]] = value


def _flags_form(line: LaunchLine) -> LaunchLine:
    """SGLang's and LMDeploy's: one --speculative-* flag per setting. The target is SGLang's --model-path, or the first
    word when the engine takes its model as a positional (`lmdeploy serve api_server MODEL`, MODEL_OPTION ""; after an
    option, which word it is is the release's to say: model_unread)."""
    spec: dict[str, Any] = {}
    target = drafter = None
    positional = not engines.get(line.engine).model_option
    if positional and line.args and not _is_option(line.args[0]):
        target = line.args[0]
    for typed, value, _ in options(line.args):
        name = _unique_prefix(typed, SGLANG_ABBREVIATED)
        if name in SGLANG_TARGET and not positional:
            target = value
        elif name in SGLANG_DRAFTER:
            drafter = value
        if name.startswith("--speculative-") and name not in SGLANG_DRAFTER:
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
    in_config = engines.get(line.engine).spec_in_config
    spec_words = _spec_words(line) if in_config else []
    spec = dict(line.spec)
    for edit in (e for e in edits if e.kind == "spec"):
        if edit.value is None:
            spec.pop(edit.key, None)
        else:
            spec[edit.key] = edit.value
    kept: list[str | None] = [None if i in dropped else w for i, w in enumerate(args)]
    one_json = len(spec_words) == 1 and vllm_name(line.args[spec_words[0]].partition("=")[0]) in VLLM_SPEC_CONFIG
    if in_config and (spec != line.spec or not one_json or any(i in dropped for i in spec_words)):
        first = min(spec_words) if spec_words else len(kept)
        for i in spec_words:
            for j in _words_of(line.args, i):
                kept[j] = None
        option = line.spec_option if line.spec_option and line.spec_option != "-sc" else "--speculative-config"
        insert = [option, json.dumps(spec, separators=(",", ":"))] if spec else []
        kept = kept[:first] + insert + kept[first:]
    words = [w for w in kept if w is not None]
    for edit in (e for e in edits if e.kind == "set"):
        words = _set(words, edit)
    words = [str(e.value) for e in edits if e.kind == "positional"][:1] + words
    return [*(f"{k}={v}" for k, v in line.env.items()), *line.entry, *words]


def _spec_words(line: LaunchLine) -> list[int]:
    out = []
    for typed, _, i in options(line.args):
        name = vllm_name(typed)
        if name.split(".", 1)[0] in VLLM_SPEC_CONFIG or name in VLLM_FLAT or name in VLLM_SPEC_SHORTCUTS:
            out.append(i)
    return out


def _words_of(args: tuple[str, ...], i: int) -> list[int]:
    """The option at i and its value word (when not given as option=value)."""
    return [i] if "=" in args[i] or i + 1 >= len(args) or _is_option(args[i + 1]) else [i, i + 1]


def _set(words: list[str], edit: LineEdit) -> list[str]:
    names = (edit.option, *edit.aliases)
    hit = max((i for i, w in enumerate(words) if w.partition("=")[0] in names), default=None)
    value = [] if edit.value is None else [str(edit.value)]
    if hit is None:
        return [*words, edit.option, *value]
    if "=" in words[hit]:
        return [*words[:hit], f"{words[hit].partition('=')[0]}={edit.value}", *words[hit + 1:]]
    has_value = hit + 1 < len(words) and not _is_option(words[hit + 1])
    return [*words[:hit + 1], *value, *words[hit + 1 + (1 if has_value else 0):]]
