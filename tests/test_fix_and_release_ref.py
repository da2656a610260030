"""compat/fix.py and compat/release_ref.py: a fix is a typed value that renders its own command line, and the
release the user named is one value that gives the words of every `compat ...` line naming it.

The commands are checked against what the commands themselves accept: each line a fix prints is parsed by
compat's own parser (a word it does not know fails the test), and a patch's options are spelled by the patch.
"""

from __future__ import annotations

import json
import shlex

import pytest

from compat import fix as fixes
from compat.release_ref import ReleaseRef

TREE = {"kind": "path", "location": "/src/vllm-checkout"}
INSTALLED = {"kind": "installed", "location": "/venv/lib/python3.11/site-packages/vllm", "python": "/venv/bin/python"}
RELEASED = {"kind": "released", "location": "/cache/releases/vllm/0.16.0"}


@pytest.mark.parametrize("source,python,command,words", [
    (RELEASED, None, "convert", ["--engine", "vllm==0.16.0"]),
    (RELEASED, None, "patch", ["--engine", "vllm"]),  # a fetched release is a shared cache: patch the installed one
    (RELEASED, "/serve/bin/python", "patch", ["--engine", "vllm", "--python", "/serve/bin/python"]),
    (RELEASED, "/serve/bin/python", "doctor", ["--engine", "vllm==0.16.0"]),
    (RELEASED, None, "env", ["--python", "PY"]),
    (INSTALLED, None, "convert", ["--engine", "vllm", "--python", "/venv/bin/python"]),
    (INSTALLED, "/other/bin/python", "patch", ["--engine", "vllm", "--python", "/venv/bin/python"]),  # where it is
    (INSTALLED, None, "env", ["--python", "/venv/bin/python"]),
    (TREE, None, "explain", ["--path", "/src/vllm-checkout"]),
    (TREE, "/serve/bin/python", "patch", ["--path", "/src/vllm-checkout"]),
    (TREE, "/serve/bin/python", "plugin", ["--engine", "vllm", "--path", "/src/vllm-checkout", "--python",
                                           "/serve/bin/python"]),
])
def test_the_words_that_name_a_release(source, python, command, words):
    assert ReleaseRef.of_source("vllm", "0.16.0", source, python).args(command) == words


@pytest.mark.parametrize("command", ["patch", "convert", "doctor", "explain", "plugin"])
@pytest.mark.parametrize("source", [RELEASED, INSTALLED, TREE])
def test_every_line_parses_with_compats_own_parser(command, source):
    """What the words say is what the command takes: compat's parser reads every line back."""
    from compat.cli import command_parser

    ref = ReleaseRef.of_source("vllm", "0.16.0", source, "/serve/bin/python")
    head = {"convert": ["convert", "ckpt", "DRAFTER", "OUT", "--to", "vllm"], "doctor": ["doctor", "TARGET", "DRAFTER"],
            "explain": ["explain", "text"], "plugin": ["plugin", "install"], "patch": ["patch"]}[command]
    args = command_parser(head[0]).parse_args([*head[1:], *ref.args(command)])
    assert (args.path or args.engine) and (command == "convert" or "--python" not in ref.args(command) or args.python)


def test_a_patch_fix_renders_both_commands_with_each_patchs_own_options():
    ref = ReleaseRef.of_source("vllm", "0.16.0", RELEASED, "/serve/bin/python")
    fix = fixes.PatchFix.verified_by_doctor(ref, ["vllm-eagle3-whitelist"], {"vllm-eagle3-whitelist": {
        "model_types": ["glm4_moe"]}}, "re-probed")
    assert shlex.split(fix.command)[:6] == ["compat", "patch", "--engine", "vllm", "--python", "/serve/bin/python"]
    assert "--model-type glm4_moe" in fix.command and fix.command.endswith(fix.plugin.partition("--select")[2])
    assert fix.plugin.startswith("compat plugin install --engine vllm --python /serve/bin/python --select")
    assert fix.phrase("target-whitelist") == "patch vllm-eagle3-whitelist"


@pytest.mark.parametrize("made", [
    fixes.PatchFix(("a", "b"), "compat patch --select a --select b", {}, "compat plugin install", "checked", "note"),
    fixes.PatchFix(("a",), "compat patch --select a", text="why: compat patch --select a"),
    fixes.ConvertFix("compat convert ckpt x y", "checked", alternative=fixes.PatchFix(("a",), "compat patch", {}, "p", "v")),
    fixes.LineFix("the launch line below: x"),
    fixes.KeyFix("remove 'k'", "k", None),
    fixes.FlagFix("--speculative-algorithm NEXTN"),
    fixes.ReleaseFix(">=0.18.0", "vllm >= 0.18.0"),
    fixes.AskFix("say how", question="convention", flag="--layer-ids-convention", answers={"output-of": {"fix": None}}),
    fixes.AskFix("which target?", patch_ids=("a",)),
    fixes.NoFix("no fix here"),
    fixes.NoFix("look further", "compat doctor T D --engine vllm --releases '>0.16.0'"),
])
def test_the_json_form_reads_back_to_the_same_fix(made):
    data = json.loads(json.dumps(made.to_json()))
    assert data["kind"] == made.kind
    assert fixes.from_json(data) == made


def test_the_json_keys_are_the_ones_doctor_and_explain_always_printed():
    assert list(fixes.PatchFix(("a",), "c", {}, "p", "v").to_json()) == ["kind", "patch_ids", "command", "options",
                                                                         "plugin", "verified"]
    assert list(fixes.PatchFix(("a",), "c", text="t").to_json()) == ["kind", "patch_ids", "command", "text"]
    assert fixes.KeyFix("t").to_json() == {"kind": "flag", "text": "t", "key": None, "suggestion": None}
    assert list(fixes.AskFix("t", question="layers", flag="--layer-ids", answers={}).to_json()) == [
        "kind", "question", "flag", "text", "answers"]
    assert fixes.from_json(None) is None


def test_what_is_shown_is_the_command_else_the_words():
    assert fixes.NoFix("words").shown() == "words"
    assert fixes.NoFix("words", "compat doctor").shown() == "compat doctor"
    assert fixes.ReleaseFix(">=1", "vllm >= 1").shown() == "vllm >= 1"
    assert fixes.ReleaseFix(">=1", "vllm >= 1").phrase("x", ">=2") == "use >=2"
