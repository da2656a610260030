"""doctor's reading of launch lines agrees with each release's own argument parser, on every vLLM release from
0.10.0 and every SGLang release from 0.4.4 (0.4.x too: `doctor --launch` reads their lines as it reads 0.5.x's).

The parser is the release's, built from its source in a subprocess (release_parser.py: `vllm serve`'s subparser
and the api_server module's parser for vLLM, prepare_server_args' parser for SGLang; the packages this interpreter
lacks are stubbed, the argument definitions and argparse run for real). The lines are made from the release's own
option list as the `cli_arguments` probe reads it, so every option of every release is typed once, with a value of
its kind; and the lines users write: the positional model (`vllm serve MODEL`, refused as "unrecognized arguments:
MODEL" on 0.33.0/0.34.0 when the probe missed the parser's new home), `--model`, underscores, `=`, dotted
`--speculative-config.key`, prefixes, `--no-` forms, and what the engine refuses (an unknown option, a second
positional, a value of the wrong type or not among the choices, a missing value). For each line: the two agree on
whether it is taken; on what is refused, in argparse's words; and, when taken, on the model served and the
speculative settings. Where a release's parser cannot be built here, the test says why and holds doctor to the
options the probe reads instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from packaging.version import Version

from compat.checks._launch_args import read_words, served_model, settings
from compat.core.errors import UsageError
from compat.launch_line import read_line
import pinned

pytestmark = [pytest.mark.matrix, pytest.mark.network]

BUILDER = Path(__file__).with_name("release_parser.py")
SPEC = {"method": "eagle3", "model": "/models/drafter", "num_speculative_tokens": 3}
SPEC_JSON = json.dumps(SPEC, separators=(",", ":"))
# given before SPEC_JSON on a line: a key SPEC lacks tells whether the release merges or keeps the last
SPEC_JSON_MORE = json.dumps({**SPEC, "model": "/models/other", "draft_tensor_parallel_size": 1}, separators=(",", ":"))
# Options whose parsing acts (reads a file, prints and exits): not typed.
ACTING = {"--config", "--help", "-h", "--version", "-v"}
ARGPARSE_SAYS = ("invalid int value", "invalid float value", "invalid choice", "expected one argument",
                 "expected at least one argument", "ignored explicit argument", "ambiguous option")
VALUES = {"int": "2", "float": "0.5", "json": "{}", "list": "a", "str": "x"}
SGLANG_TAIL = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/drafter"]


def _value(argument: dict) -> str | None:
    """A value of the argument's kind as the probe reads it; None: a flag; "" where the probe does not claim to know
    what the release takes (a type of its own, choices computed at run time, list items it does not type)."""
    kind = argument.get("value")
    if kind in ("flag",) or (kind == "bool" and argument.get("negatable")):
        return None
    if argument.get("choices_from"):
        return ""
    if argument.get("choices"):
        return str(argument["choices"][0])
    if kind == "list":
        return VALUES.get(argument.get("item") or "", "")
    return VALUES.get(kind, "")


def vllm_cases(fact: dict) -> dict[str, list[tuple[str, list[str]]]]:
    tail = ["--speculative-config", SPEC_JSON]
    serve = [
        ("the commonest line", ["/models/target", *tail]),
        ("the model as --model", ["--model", "/models/target", *tail]),
        ("underscores", ["/models/target", "--speculative_config", SPEC_JSON]),
        ("option=value", ["/models/target", f"--speculative-config={SPEC_JSON}"]),
        ("dotted keys", ["/models/target", "--speculative-config.method", "eagle3", "--speculative-config.model", "/d"]),
        ("a second positional", ["/models/target", "/models/other", *tail]),
        ("an unknown option", ["/models/target", "--no-such-option", "3", *tail]),
        ("an unknown option before the model", ["--no-such-option", "/models/target", *tail]),
        ("a missing value", ["/models/target", *tail, "--max-model-len"]),
        ("no model", tail),
        # the model after options: which word is the model depends on which options take a value
        ("a flag, then the model", ["--trust-remote-code", "/models/target", *tail]),
        ("an option and its value, then the model", ["--max-model-len", "4096", "/models/target", *tail]),
        ("the speculative config, then the model", [*tail, "/models/target"]),
        ("--model=", ["--model=/models/target", *tail]),
        ("--model and the same positional", ["/models/target", "--model", "/models/target", *tail]),
        ("--model and another positional", ["/models/target", "--model", "/models/other", *tail]),
        ("--model twice", ["--model", "/models/other", "--model", "/models/target", *tail]),
        # repeated options: argparse keeps the last, the release's own rewriting may merge
        ("the speculative config twice", ["/models/target", "--speculative-config", SPEC_JSON_MORE, *tail]),
        ("JSON, then a dotted key", ["/models/target", *tail, "--speculative-config.num_speculative_tokens", "5"]),
        ("a dotted key, then JSON", ["/models/target", "--speculative-config.num_speculative_tokens", "5", *tail]),
        ("JSON with spaces", ["/models/target", "--speculative-config", json.dumps(SPEC)]),
        # what argparse does with words it was not declared with
        ("an abbreviation", ["/models/target", "--speculative-conf", SPEC_JSON]),
        ("an abbreviation with =", ["/models/target", f"--speculative-conf={SPEC_JSON}"]),
        ("an ambiguous abbreviation", ["/models/target", "--max", "3", *tail]),
        ("a value holding =", ["/models/target", "--served-model-name=a=b", *tail]),
        ("a negative number", ["/models/target", "--seed", "-1", *tail]),
        ("an empty value", ["/models/target", "--speculative-config", ""]),
        ("the short alias", ["/models/target", "-sc", SPEC_JSON]),
        # 0.22+: --spec-method/--spec-model/--spec-tokens, folded into the config (a key given both ways is refused)
        ("the shortcuts", ["/models/target", "--spec-method", "eagle3", "--spec-model", "/models/drafter", "--spec-tokens", "3"]),
        ("a shortcut and the config", ["/models/target", "--spec-tokens", "4", "--speculative-config",
                                        json.dumps({"method": "eagle3", "model": "/models/drafter"})]),
        ("a key given both ways", ["/models/target", "--spec-model", "/models/other", *tail]),
        ("a shortcut abbreviated", ["/models/target", "--spec-mod", "/models/drafter", "--spec-method=eagle3"]),
    ]
    serve += _per_argument(fact, ["/models/target"], tail)
    module = [("the module form", ["--model", "/models/target", *tail]),
              ("the module form, positional", ["/models/target", *tail])]
    return {"serve": serve, "module": module}


def sglang_cases(fact: dict) -> dict[str, list[tuple[str, list[str]]]]:
    head = ["--model-path", "/models/target"]
    module = [
        ("the commonest line", [*head, *SGLANG_TAIL]),
        ("--model alias", ["--model", "/models/target", *SGLANG_TAIL]),
        ("underscores (plain argparse refuses)", [*head, "--speculative_algorithm", "EAGLE3"]),
        ("a positional", ["/models/target", *head, *SGLANG_TAIL]),
        ("an unknown option", [*head, "--no-such-option", "3", *SGLANG_TAIL]),
        ("a missing value", [*head, *SGLANG_TAIL, "--speculative-num-steps"]),
        ("options before the model", [*SGLANG_TAIL, *head]),
        ("--model-path=", ["--model-path=/models/target", *SGLANG_TAIL]),
        ("the model path twice", ["--model-path", "/models/other", *head, *SGLANG_TAIL]),
        ("the drafter twice", [*head, *SGLANG_TAIL, "--speculative-draft-model-path", "/models/other"]),
        ("the algorithm twice", [*head, "--speculative-algorithm", "NEXTN", *SGLANG_TAIL]),
        ("=values", [*head, "--speculative-algorithm=EAGLE3", "--speculative-draft-model-path=/models/drafter",
                     "--speculative-num-steps=3"]),
        ("an abbreviation", [*head, "--speculative-algo", "EAGLE3", "--speculative-draft-model-path", "/models/drafter"]),
        ("a drafter abbreviation", [*head, "--speculative-algorithm", "EAGLE3", "--speculative-draft", "/models/drafter"]),
        ("a model abbreviation", ["--model-p", "/models/target", *SGLANG_TAIL]),
        ("an ambiguous abbreviation", [*head, "--speculative", "3", *SGLANG_TAIL]),
    ]
    return {"module": module + _per_argument(fact, head, SGLANG_TAIL)}


def _per_argument(fact: dict, head: list[str], tail: list[str]) -> list[tuple[str, list[str]]]:
    out = []
    bad_int = bad_choice = False
    for argument in fact.get("arguments") or []:
        if argument.get("value") == "positional" or argument["name"] in ACTING:
            continue
        value = _value(argument)
        for name in [argument["name"], *(argument.get("aliases") or [])]:
            if name in ACTING or value == "":
                continue
            out.append((f"{name} {value or ''}".strip(), [*head, name, *([value] if value is not None else []), *tail]))
        if argument.get("negatable"):
            out.append((f"--no-{argument['name'][2:]}", [*head, f"--no-{argument['name'][2:]}", *tail]))
        if argument.get("value") == "int" and not bad_int and not argument.get("nargs"):
            bad_int = True
            out.append((f"{argument['name']} many", [*head, argument["name"], "many", *tail]))
        if argument.get("choices") and not bad_choice and not argument.get("nargs"):
            bad_choice = True
            out.append((f"{argument['name']} not-a-choice", [*head, argument["name"], "not-a-choice", *tail]))
    return out


def run_release_parser(engine: str, version: str, root: Path, cli_module: str | None, cases: dict) -> dict:
    request = {"engine": engine, "version": version, "cli_module": cli_module,
               "entries": {entry: [words for _, words in lines] for entry, lines in cases.items()}}
    done = subprocess.run([sys.executable, str(BUILDER), str(root)], input=json.dumps(request), capture_output=True,
                          text=True, timeout=600, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


ENV_WORDS = ["CUDA_VISIBLE_DEVICES=0,1", "VLLM_LOGGING_LEVEL=DEBUG", "env", "HF_HUB_OFFLINE=1"]  # what a shell strips


def doctor_reads(engine: str, entry: str, words: list[str], fact: dict, env: bool = False) -> dict:
    prefix = (ENV_WORDS if env else []) + {"serve": ["vllm", "serve"], "module": ["python", "-m", "vllm.entrypoints.openai.api_server" if engine == "vllm"
                                                      else "sglang.launch_server"]}[entry]
    try:
        line = read_line([*prefix, *words])
    except UsageError as exc:  # a line doctor cannot read at all: refused before the release is asked
        return {"ok": False, "unreadable": str(exc), "unrecognized": [], "problems": [], "target": None, "spec": {}}
    read = read_words(line, fact)
    problems = [r.message for r in read.refusals] + [g.problem for g in read.problems if g.problem]
    ok = not problems and not read.unrecognized
    dests = {n: a.get("dest") or a["name"][2:].replace("-", "_") for a in fact.get("arguments") or []
             for n in [a["name"], *(a.get("aliases") or [])]}
    spec = line.spec if engine == "vllm" else {dests.get(k, k[2:].replace("-", "_")): v for k, v in line.spec.items()}
    # the model served: the line's, else the --model / --model-path default the release declares
    target = line.target or (served_model(line, fact) if line.model_unread else None) or settings(read, fact).get("model" if engine == "vllm" else "model_path")
    return {"ok": ok, "unrecognized": read.unrecognized, "problems": problems, "target": target, "spec": spec}


def disagreement(engine: str, real: dict, doctor: dict) -> str | None:
    if real["ok"] != doctor["ok"]:
        said = real["error"] if not real["ok"] else "takes it"
        return f"the release {said!r}; doctor {'takes it' if doctor['ok'] else doctor}"
    if not real["ok"]:
        error = real["error"]
        if doctor.get("unreadable"):  # refused by both; doctor's own words name the token
            return None
        if error.startswith("unrecognized arguments: "):
            if doctor["unrecognized"] != error.split(": ", 1)[1].split(" "):
                return f"the release {error!r}; doctor unrecognized {doctor['unrecognized']}"
        else:
            # argparse's own messages word for word; a type function's own message: the argument it names
            if error.startswith("ambiguous option: "):  # refused by both, doctor naming the release's candidates (in
                # the probe's order, not argparse's; the SGLang probe misses --speculative-draft-window-size from 0.5.14)
                said = [set(p.split(" could match ", 1)[-1].split(", ")) for p in doctor["problems"]
                        if p.startswith(error.split(" could match ")[0] + " could match ")]
                if any(len(s) > 1 and s <= set(error.split(" could match ", 1)[-1].split(", ")) for s in said):
                    return None
            exact = error if any(m in error for m in ARGPARSE_SAYS) or not error.startswith("argument ") else error.split(": ")[0]
            if not any(p.startswith(exact) for p in doctor["problems"]):
                return f"the release {error!r}; doctor {doctor['problems']}"
        return None
    if real["target"] != doctor["target"]:
        return f"the release serves {real['target']!r}; doctor reads {doctor['target']!r}"
    if engine == "vllm" and real["spec"] is not None and _normal(real["spec"]) != _normal(doctor["spec"]):
        return f"the release's speculative config {real['spec']!r}; doctor's {doctor['spec']!r}"
    if engine == "sglang":
        differs = {k: v for k, v in doctor["spec"].items() if v is not None and str(real["spec"].get(k)) != str(v)}
        if differs:
            return f"the release's speculative settings {real['spec']!r}; doctor's {doctor['spec']!r}"
    return None


def _normal(spec) -> dict:
    spec = json.loads(spec) if isinstance(spec, str) else spec
    return {k: str(v) for k, v in (spec or {}).items()}


# The next release's parser is built while this one's lines are compared (two at once: CI has two cores).
POOL = ThreadPoolExecutor(max_workers=2)
_answers: dict[tuple[str, str], Future] = {}


def _start(engine: str, version: str, report: dict) -> Future:
    if (engine, version) not in _answers:
        fact = report["cli_arguments"]
        cases = vllm_cases(fact) if engine == "vllm" else sglang_cases(fact)
        location = fact.get("location") or ""
        cli_module = location[:-3].replace("/", ".") if engine == "vllm" and location.endswith(".py") else None
        root = pinned.fetch(engine, version).root
        _answers[(engine, version)] = POOL.submit(run_release_parser, engine, version, root, cli_module, cases)
    return _answers[(engine, version)]


def agree(engine: str, version: str, report: dict, following: tuple[str, dict] | None = None) -> None:
    fact = report["cli_arguments"]
    assert fact.get("present"), fact
    cases = vllm_cases(fact) if engine == "vllm" else sglang_cases(fact)
    mine = _start(engine, version, report)
    if following is not None and following[1]["cli_arguments"].get("present"):
        _start(engine, *following)
    answer = mine.result()
    _answers.pop((engine, version), None)
    found = []
    for entry, lines in cases.items():
        result = answer["entries"][entry]
        if result["built"] is None:  # not buildable here: doctor held to the options the probe reads
            found += _against_probe(engine, entry, lines, fact, result["error"])
            continue
        for (name, words), real in zip(lines, result["outcomes"]):
            said = disagreement(engine, real, doctor_reads(engine, entry, words, fact))
            if said:
                found.append(f"{entry} {name}: {said}")
            elif not name.startswith("-"):  # the named lines again, after environment words: read the same
                said = disagreement(engine, real, doctor_reads(engine, entry, words, fact, env=True))
                found += [f"{entry} {name}, after VAR=value and env: {said}"] if said else []
    assert not found, f"{engine} {version}: {len(found)} lines read otherwise than the release's parser:\n" + "\n".join(found)


def _against_probe(engine: str, entry: str, lines: list, fact: dict, why: str) -> list[str]:
    found = []
    for name, words in lines:
        if name.startswith(("-", "the ")) and "many" not in name and "not-a-choice" not in name:
            doctor = doctor_reads(engine, entry, words, fact)
            if not doctor["ok"]:
                found.append(f"{entry} {name}: the parser could not be built ({why}); doctor refuses an option the probe reads")
    return found


def _following(engine: str, version: str, versions_of, report_of, first: str = "0") -> tuple[str, dict] | None:
    later = [v for v in versions_of(engine) if Version(v) > Version(version) and Version(v) >= Version(first)]
    return (later[0], report_of(engine, later[0])) if later else None


def test_vllm_parser_agrees_with_doctor(vllm_report, vllm_version, versions_of, report_of):
    agree("vllm", vllm_version, vllm_report, _following("vllm", vllm_version, versions_of, report_of))


def test_sglang_parser_agrees_with_doctor(sglang_version, report_of, versions_of):
    agree("sglang", sglang_version, report_of("sglang", sglang_version),
          _following("sglang", sglang_version, versions_of, report_of))
