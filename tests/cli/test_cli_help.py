"""Issue 12, point 1: `--help` works on every command and subcommand, and a mistyped flag anywhere shows that
(sub)command's usage, with the option it probably meant. Point 6: the global options go before or after the
command name."""

from __future__ import annotations

import pytest

from cli_helpers import compat

COMMANDS = ["probe", "patch", "plugin", "convert", "doctor", "matrix", "cache", "env"]
SUBCOMMANDS = [["convert", "ckpt"]]


def test_top_level_help_lists_every_command_and_the_exit_codes():
    run = compat("--help")
    assert run.code == 0 and run.err == ""
    for name in COMMANDS:
        assert f"    {name} " in run.out or f"    {name}\n" in run.out, name
    assert "exit codes (the same for every compat command)" in run.out and "-q, --quiet" in run.out


@pytest.mark.parametrize("words", [[c] for c in COMMANDS] + SUBCOMMANDS, ids=" ".join)
def test_every_command_has_help_with_the_exit_code_table(words):
    run = compat(*words, "--help")
    assert run.code == 0, run.err
    assert run.out.startswith(f"usage: compat {' '.join(words)}")
    assert "exit codes (the same for every compat command):" in run.out
    for code in ("0 ", "2 ", "3 ", "4 ", "130"):
        assert f"\n  {code}" in run.out, (words, code)
    assert "--color WHEN" in run.out and "-q, --quiet" in run.out  # the global options, listed where they work


def test_convert_help_points_at_its_subcommand_and_ckpt_help_teaches_the_release_options():
    run = compat("convert", "--help")
    assert run.code == 0 and "compat convert ckpt SRC DST --to" in run.out
    ckpt = compat("convert", "ckpt", "--help").out
    for words in ("--engine SPEC", "--path DIR", "--python PATH", "--engine-version X", "deprecated", "Hugging Face"):
        assert words in ckpt, words


@pytest.mark.parametrize("words, flag, meant", [
    (["probe"], "--jsn", "--json"),
    (["patch"], "--dry-rn", "--dry-run"),
    (["plugin", "status", "--engine", "vllm"], "--pyton", "--python"),
    (["doctor", "t", "d"], "--releses", "--releases"),
    (["cache", "list"], "--jsno", "--json"),
    (["env"], "--pythn", "--python"),
    (["convert", "ckpt", "src", "dst", "--to", "vllm"], "--enigne", "--engine"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_mistyped_flag_shows_that_commands_usage_and_the_likely_option(words, flag, meant):
    run = compat(*words, flag)
    assert run.code == 2 and run.out == ""
    prog = "compat convert ckpt" if words[0] == "convert" else f"compat {words[0]}"
    assert run.err.startswith(f"usage: {prog} "), run.err
    assert f"{prog}: error: unrecognized arguments: {flag}" in run.err
    assert f"did you mean {meant}?" in run.err and f"{prog} --help lists the options" in run.err
    assert "Traceback" not in run.err


def test_an_unknown_command_shows_the_top_level_usage():
    run = compat("frobnicate")
    assert run.code == 2 and run.err.startswith("usage: compat ") and "invalid choice: 'frobnicate'" in run.err


@pytest.mark.parametrize("argv", [
    ["-q", "--color", "never", "probe", "--jsn"],
    ["--color", "never", "probe", "-q", "--jsn"],
    ["probe", "--color=never", "-v", "--jsn"],
])
def test_global_options_go_before_or_after_the_command(argv):
    run = compat(*argv)  # `never` after --color is its value, not the command name
    assert run.code == 2 and "usage: compat probe" in run.err and "unrecognized arguments: --jsn" in run.err


def test_global_options_reach_the_command_from_either_side(tmp_path):
    before = compat("-v", "probe", "--path", tmp_path / "missing")
    after = compat("probe", "--path", tmp_path / "missing", "-v")
    for run in (before, after):
        assert run.code == 2  # a path that names nothing
        assert "(raised at " in run.err and "compat probe: exit 2 in " in run.err  # -v: where, and how long
    quiet = compat("--color", "bogus", "probe")
    assert quiet.code == 2 and "argument --color: invalid choice: 'bogus'" in quiet.err


def test_top_level_help_lists_the_global_options_once():
    run = compat("--help")
    assert run.code == 0
    assert run.out.count("-q, --quiet") == 1 and run.out.count("\n  --color WHEN") == 1  # listed once (and in the usage line)
    assert "global options (before or after the command name)" in run.out
