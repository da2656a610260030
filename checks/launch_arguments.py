"""The launch line's arguments are ones this release takes: an option it does not have, a value of the wrong type
or not among its choices, is refused by the engine's parser before anything loads (said here in argparse's
words); a --speculative-config key its SpeculativeConfig has no field for is ignored (a pydantic dataclass
without extra="forbid", before 0.16.0: the setting silently never applies, so it fails too) or refused (from
0.16.0, and standard dataclasses). The option list
and value types are the `cli_arguments` probe fact, the keys the `speculative_config` one."""

from __future__ import annotations

from compat import engines
from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, Result, check
from compat.core.output import plural
from compat.checks._launch_args import read_against
from compat.hub import model_name
from compat.launch_line import LineEdit


@check("launch-arguments", "launch line: every argument and --speculative-config key is one this release takes",
       order=5, needs=("launch options",), fixes=("line",),
       when="launch", methods=ANY_METHOD)
def launch_arguments(ctx: Ctx) -> Result:
    read = read_against(ctx)
    if read is None:  # the registry runs it only on a line (when="launch")
        return Result(PASS, "no launch line given", None)
    if not read.present:
        return Result(WARN, "cannot tell: this release's argument list was not found (cli_arguments)", None)
    refused, edits, where = [], [], None
    for given in read.problems:
        if given.problem:
            refused.append(f"error: {given.problem}")
        where = where or (given.argument or {}).get("location")
        if given.argument is None:  # a --speculative-config it lacks (-sc) is written back as --speculative-config
            edits.append(LineEdit("drop", f"this release has no {given.typed}", given.start, given.end))
    if read.unrecognized:
        refused.insert(0, f"error: unrecognized arguments: {' '.join(read.unrecognized)}")
    for refusal in read.refusals:  # vLLM's parser raises before argparse reads the words
        refused.insert(0, f"{refusal.message} ({refusal.location})")
        where = refusal.location
        edits += _model_first(ctx, read)
    edits += [LineEdit("drop", f"no positional argument takes {word}", i, i + 1) for i, word in read.extra_positionals]
    ignored = _ignored_model(ctx, read)
    if ignored is not None:
        refused.append(ignored[0])
        edits += ignored[1]
    if engines.get(ctx.engine).spec_in_config:
        keys_refused, key_edits, sc_where = _spec_keys(ctx, read.line.spec)
        refused += keys_refused
        edits += key_edits
        where = where or (sc_where if keys_refused else None)
    evidence = {"arguments": [{"typed": g.typed, "argument": g.name, "value": g.value, "location": (g.argument or {}).get("location")}
                              for g in read.given]}
    if refused:
        head = "the engine refuses this line before loading anything: " if any(r.startswith("error:") or "refuses" in r
                                                                               for r in refused) else ""
        return Result(FAIL, head + "; ".join(refused), where,
                      evidence=evidence, edits=tuple(edits), words=tuple(_refused_word(g) for g in read.problems),
                      remedy="change the line: give each refused argument a value this release takes (above)")
    return Result(PASS, f"{plural(len(read.given), 'option')}, each one this release's parser takes "
                  f"({ctx.fact('cli_arguments').get('location')})", None, evidence=evidence)


def _refused_word(given) -> tuple[int, int]:
    """The word the parser refuses: an option it does not have, or the value it cannot take (`--max-model-len lots`)."""
    if given.argument is not None and given.value is not None:
        return (given.end - 1, given.end)
    return (given.start, given.start + 1)
def _ignored_model(ctx: Ctx, read) -> tuple[str, list[LineEdit]] | None:
    """`python -m vllm.entrypoints.openai.api_server MODEL`: the module parses the positional but never serves it (the
    `positional_model` fact: only `vllm serve` copies it to --model), so the release's default model starts instead."""
    fact = ctx.fact("positional_model")
    if not read.line.module_form or not read.positionals or not fact.get("present") or fact.get("module_copies"):
        return None
    index, word = read.positionals[0]
    if read.find("--model") is not None:
        return (f"{word!r} is parsed as the module's positional model but never served ({fact.get('module_location')}; "
                "--model is)", [LineEdit("drop", "the module form serves --model, not a positional", index, index + 1)])
    return (f"{word!r} is parsed as the module's positional model but never served: the module form serves --model, "
            f"so the release's default model {fact.get('default_model')!r} starts instead ({fact.get('default_location')}; "
            f"only `vllm serve` copies the positional, {fact.get('serve_copies')})",
            [LineEdit("drop", "the module form serves --model, not a positional", index, index + 1),
             LineEdit("set", "the module form serves --model", option="--model", value=word)])


def _model_first(ctx: Ctx, read) -> list[LineEdit]:
    """The model moved to the front as `vllm serve`'s positional: from --model, from a later positional, else doctor's target."""
    given = read.find("--model")
    if given is not None and given.value is not None:
        return [LineEdit("drop", "the model goes first, as the positional", given.start, given.end),
                LineEdit("positional", "the model goes first, as the positional", value=given.value)]
    if read.positionals:
        i, word = read.positionals[0]
        return [LineEdit("drop", "the model goes first", i, i + 1), LineEdit("positional", "the model goes first", value=word)]
    return [LineEdit("positional", "the model goes first", value=model_name(ctx.target.path))]


def _spec_keys(ctx: Ctx, spec: dict) -> tuple[list[str], list[LineEdit], str | None]:
    """The --speculative-config keys SpeculativeConfig has no field for: refused or ignored, by this release's policy."""
    sc = ctx.fact("speculative_config")
    fields = {f["name"] for f in sc.get("fields") or []}
    refused, edits = [], []
    for key in spec:
        if key in fields:
            continue
        if sc.get("rejects_unknown_keys"):
            refused.append(f"--speculative-config key {key!r}: SpeculativeConfig has no such field and this release "
                           f"refuses unknown keys ({sc.get('rejects_unknown_keys_reason')})")
            edits.append(LineEdit("spec", "refused by this release", key=key, value=None))
        else:  # the run goes on without the setting the user asked for: a silent degradation, not a pass
            refused.append(f"--speculative-config key {key!r} is ignored silently (the setting never applies): "
                           f"SpeculativeConfig has no such field ({sc.get('rejects_unknown_keys_reason') or 'unknown keys are not refused'})")
            edits.append(LineEdit("spec", "ignored by this release", key=key, value=None))
    if "num_speculative_tokens" in spec and not (isinstance(spec["num_speculative_tokens"], int)
                                                 and spec["num_speculative_tokens"] >= 1):
        refused.append(f"--speculative-config num_speculative_tokens={spec['num_speculative_tokens']!r}: "
                       "a positive integer is needed")
    return refused, edits, sc.get("location")
