"""doctor --launch on real (pinned) releases: the user's line read with that release's own arguments (vLLM 0.11.0, 0.16.0,
0.18.0, 0.32.0; SGLang 0.5.8, 0.5.23), what it refuses or degrades, and the line printed back with the fixes.

SGLang cannot run here: its arguments are read from its source (server_args.py and, from 0.5.20, the msgspec
namespaces under sglang/srt/arg_groups) by the cli_arguments probe; what is modelled is its argparse parser
(`prepare_server_args`: a plain argparse.ArgumentParser, allow_abbrev on, no underscore rewriting).
"""

from __future__ import annotations

import json
import shlex

import pytest

SPEC = {"method": "eagle3", "model": "/models/kimi-k2-eagle3", "num_speculative_tokens": 3}


def vllm_line(spec=None, extra="", option="--speculative-config", target="/models/Kimi-K2-Instruct"):
    return f"vllm serve {target} -tp 8 --trust-remote-code {option} {shlex.quote(json.dumps(spec or SPEC))} {extra}".strip()


def sglang_line(extra="", algorithm="EAGLE3"):
    return ("python -m sglang.launch_server --model-path /models/Kimi-K2-Instruct --tp 8 --trust-remote-code "
            f"--speculative-algorithm {algorithm} --speculative-draft-model-path /models/kimi-k2-eagle3 "
            f"--speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 {extra}").strip()


def doctor_json(doctor_cli, kimi, engine, *argv):
    code, out, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", engine, "--json", *argv)
    assert code in (0, 1), err
    return code, json.loads(out)


def check(data, name):
    return next(c for c in data["checks"] if c["check"] == name)


@pytest.mark.network
def test_a_line_that_works_is_printed_back_unchanged(kimi, doctor_cli):
    line = vllm_line(extra="--max-model-len 32k --no-enable-prefix-caching")
    code, data = doctor_json(doctor_cli, kimi, "vllm==0.18.0", "--launch", line)
    assert code == 0 and data["verdict"] == "works as is", [c["detail"] for c in data["checks"] if c["verdict"] == "fail"]
    assert data["launch"]["command"] == line and data["launch"]["edits"] == []  # the user's own words, not rebuilt
    assert check(data, "launch-arguments")["verdict"] == "pass"


@pytest.mark.network
@pytest.mark.parametrize("version, rejects", [("0.11.0", False), ("0.16.0", True), ("0.32.0", True)])
def test_a_spec_key_without_a_field_is_ignored_before_0_16_and_refused_after(kimi, doctor_cli, version, rejects):
    code, data = doctor_json(doctor_cli, kimi, f"vllm=={version}", "--launch", vllm_line({**SPEC, "draft_topk": 4}))
    result = check(data, "launch-arguments")
    assert result["verdict"] == "fail" and "'draft_topk'" in result["detail"]  # ignored: it never applies
    assert ("refuses unknown keys" if rejects else "ignored silently") in result["detail"]
    printed = data["launch"]["argv"]
    assert "draft_topk" not in printed[printed.index("--speculative-config") + 1] and code == 1


@pytest.mark.network
@pytest.mark.parametrize("version, known", [("0.11.0", False), ("0.32.0", True)])
def test_the_sc_alias_exists_only_where_the_release_declares_it(kimi, doctor_cli, version, known):
    _, data = doctor_json(doctor_cli, kimi, f"vllm=={version}", "--launch", vllm_line(option="-sc"))
    result = check(data, "launch-arguments")
    assert (result["verdict"] == "pass") is known, result["detail"]
    if not known:
        assert "unrecognized arguments: -sc" in result["detail"]
        assert "--speculative-config" in data["launch"]["argv"] and "-sc" not in data["launch"]["argv"]


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.11.0", "0.16.0", "0.32.0"])
def test_unknown_options_and_bad_values_in_the_engines_words(kimi, doctor_cli, version):
    line = vllm_line(option="--speculative_config", extra="--speculative-model /models/old --kv-cache-dtype fp9 "
                     "--max-num-seqs many --port 8000")
    code, data = doctor_json(doctor_cli, kimi, f"vllm=={version}", "--launch", line)
    detail = check(data, "launch-arguments")["detail"]
    assert code == 1
    assert "unrecognized arguments: --speculative-model /models/old" in detail  # the flat flags are gone since 0.10
    assert "argument --kv-cache-dtype: invalid choice: 'fp9'" in detail
    assert "argument --max-num-seqs: invalid int value: 'many'" in detail
    argv = data["launch"]["argv"]
    assert "--speculative-model" not in argv and "--speculative_config" in argv  # underscores: FlexibleArgumentParser takes them
    assert argv[argv.index("--port") + 1] == "8000" and argv.index("--port") > argv.index("--kv-cache-dtype")  # order kept


@pytest.mark.network
def test_a_vllm_line_running_eagle_is_fixed_in_the_printed_line(kimi, doctor_cli):
    code, data = doctor_json(doctor_cli, kimi, "vllm==0.18.0", "--launch", vllm_line({**SPEC, "method": "eagle"}))
    assert code == 1 and check(data, "method")["verdict"] == "fail" and check(data, "method")["fix"]["kind"] == "line"
    assert data["verdict"] == "works with the launch line as doctor prints it (your line, changed)"
    spec = json.loads(data["launch"]["argv"][data["launch"]["argv"].index("--speculative-config") + 1])
    assert spec == SPEC  # method eagle3, the user's drafter path kept
    assert data["launch"]["argv"][:7] == ["vllm", "serve", "/models/Kimi-K2-Instruct", "-tp", "8", "--trust-remote-code",
                                          "--speculative-config"]


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.5.8", "0.5.23"])
def test_an_sglang_line_running_eagle(kimi, doctor_cli, version):
    code, data = doctor_json(doctor_cli, kimi, f"sglang=={version}", "--launch", sglang_line(algorithm="EAGLE"))
    assert code == 1 and check(data, "method")["verdict"] == "fail" and "1.00" in check(data, "method")["detail"]
    argv = data["launch"]["argv"]
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert check(data, "launch-arguments")["verdict"] == "pass"  # --tp: argparse takes the unique prefix of --tp-size


@pytest.mark.network
def test_sglang_0_5_8_choices_are_compared_as_typed(kimi, doctor_cli):
    _, data = doctor_json(doctor_cli, kimi, "sglang==0.5.8", "--launch", sglang_line("--speculative-eagle-topk x --bogus"))
    detail = check(data, "launch-arguments")["detail"]
    assert "argument --speculative-eagle-topk: invalid int value: 'x'" in detail and "unrecognized arguments: --bogus" in detail


@pytest.mark.network
def test_target_and_drafter_come_from_the_line_when_not_given(kimi, doctor_cli):
    line = vllm_line(spec={**SPEC, "model": str(kimi.drafter)}, target=str(kimi.target))
    code, out, err = doctor_cli("--engine", "vllm==0.18.0", "--json", "--", *shlex.split(line))
    assert code == 0, err
    data = json.loads(out)
    assert data["target"]["path"] == str(kimi.target) and data["drafter"]["path"] == str(kimi.drafter)
    assert data["launch"]["argv"] == shlex.split(line)


@pytest.mark.network
def test_human_output_names_the_changes(kimi, doctor_cli):
    code, out, _ = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", "vllm==0.18.0", "--launch",
                              vllm_line({**SPEC, "method": "eagle"}, extra="--frobnicate"))
    assert code == 1
    assert "launch (your line, fixed):" in out and "changed: --speculative-config method=\"eagle3\"" in out
    assert "changed: removed: this release has no --frobnicate" in out


@pytest.mark.parametrize("argv, said", [
    (["--launch", "vllm serve /m/t --speculative-config '{\"model\": 1"], "never closed"),
    (["--launch", "vllm serve /m/t --speculative-config '{model: x}'"], "--speculative-config '{model: x}' is not JSON"),
    (["--launch", "python -m vllm.entrypoints.cli.main serve x"], "unknown entry point 'vllm.entrypoints.cli.main'"),
    (["--launch", "text-generation-launcher --model-id x"], "unknown entry point"),
    (["--launch", "python -m sglang.launch_server --model-path x"], "the launch line starts sglang"),
    (["--"], "nothing after `--`"),
    (["--launch", "vllm serve x", "--", "vllm", "serve", "x"], "give the launch line once"),
    (["--method", "eagle", "--launch", "vllm serve x"], "--method is for doctor without a launch line"),
    # found by the hostile campaign: json.loads' RecursionError and its 4,300-digit int limit were a traceback
    (["--launch", "vllm serve /m/t --speculative-config '" + "[" * 50_000 + "'"], "is nested too deeply to read"),
    (["--launch", "vllm serve /m/t --speculative-config '" + '{"a":' * 2000 + "1" + "}" * 2000 + "'"], "nested too deeply"),
    (["--launch", "vllm serve /m/t --speculative-config '{\"num_speculative_tokens\": " + "9" * 5000 + "}'"], "cannot be read"),
])
def test_a_line_doctor_cannot_read_is_a_usage_error(kimi, doctor_cli, argv, said):
    code, out, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", "vllm==0.18.0", "--json", *argv)
    assert code == 2 and "Traceback" not in out + err
    assert said in json.loads(out)["error"]


def test_a_huge_value_is_not_echoed_whole(kimi, doctor_cli):
    code, out, err = doctor_cli(str(kimi.target), str(kimi.drafter), "--engine", "vllm==0.18.0", "--json", "--launch",
                                "vllm serve /m/t --speculative-config '{" + "x" * 90_000 + "'")
    assert code == 2 and "(90001 characters)" in json.loads(out)["error"] and len(out + err) < 3000


@pytest.mark.network
def test_an_infinite_num_speculative_tokens_is_judged_not_a_traceback(kimi, doctor_cli):
    """json.loads takes Infinity, as vLLM's own parser does; int() of it raised OverflowError (hostile campaign)."""
    spec = {**SPEC, "model": str(kimi.drafter), "num_speculative_tokens": float("inf")}
    code, out, err = doctor_cli("--engine", "vllm==0.32.0", "--json", "--launch", vllm_line(spec, target=str(kimi.target)))
    assert code in (0, 1) and "Traceback" not in out + err
    assert json.loads(out)["schema"] == "compat.doctor/1"


def test_the_line_names_no_drafter(doctor_cli):
    code, out, _ = doctor_cli("--engine", "sglang==0.5.8", "--json", "--", "python", "-m", "sglang.launch_server",
                              "--model-path", "/m/t")
    assert code == 2 and "--speculative-draft-model-path in the launch line" in json.loads(out)["error"]


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_the_commonest_line_on_the_newest_releases(kimi, doctor_cli, version):
    """`vllm serve MODEL --speculative-config ...`: 0.33.0 moved make_arg_parser to vllm/entrypoints/common/cli_args.py;
    read where `vllm serve` imports it from, the positional MODEL is the release's own (not "unrecognized arguments")."""
    line = vllm_line(extra="--max-model-len 32k")
    _, data = doctor_json(doctor_cli, kimi, f"vllm=={version}", "--launch", line)
    result = check(data, "launch-arguments")
    assert result["verdict"] == "pass", result["detail"]
    assert "vllm/entrypoints/common/cli_args.py" in result["detail"]


@pytest.mark.parametrize("version", ["0.10.0", "0.18.0", "0.33.0"])
@pytest.mark.parametrize("before", [["--trust-remote-code"], ["--port", "8000"], ["-tp=8", "--trust-remote-code"]])
def test_the_model_after_options_is_read_as_the_release_reads_it(kimi, doctor_cli, version, before):
    """`vllm serve --trust-remote-code MODEL`: argparse takes MODEL as the positional after a flag, and `8000` as
    --port's value; which word is the model is the release's (its option list), so the line is read against it. The
    line is printed back with every word the user gave (doctor changes none of them here)."""
    words = ["vllm", "serve", *before, str(kimi.target), "--speculative-config",
             json.dumps({**SPEC, "model": str(kimi.drafter)})]
    code, out, err = doctor_cli("--engine", f"vllm=={version}", "--json", "--", *words)
    assert code in (0, 1), err
    data = json.loads(out)
    assert data["target"]["path"] == str(kimi.target)
    assert data["launch"]["argv"][:len(before) + 3] == words[:len(before) + 3]  # the flags kept, in their place


def test_a_line_whose_options_take_every_word_names_no_model(kimi, doctor_cli):
    """--served-model-name takes every word up to the next option (nargs="+"): the release serves no model from it."""
    words = ["vllm", "serve", "--served-model-name", "k", str(kimi.target), "--speculative-config", json.dumps(SPEC)]
    code, out, _ = doctor_cli("--engine", "vllm==0.33.0", "--json", "--", *words)
    assert code == 2 and "parser takes no model from this line" in json.loads(out)["error"]


def test_a_range_cannot_read_a_model_placed_after_options(kimi, doctor_cli):
    words = ["vllm", "serve", "--trust-remote-code", str(kimi.target), "--speculative-config", json.dumps(SPEC)]
    code, out, _ = doctor_cli("--engine", "vllm", "--releases", ">=0.33", "--json", "--", *words)
    assert code == 2 and "give TARGET, or put the model right after `vllm serve`" in json.loads(out)["error"]
