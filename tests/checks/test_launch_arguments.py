"""launch-arguments: the line's options, values and --speculative-config keys against the release's own
argument list (a hand-written cli_arguments fact in the probe's shape; the real releases are in
tests/doctor/test_launch_line.py)."""

from __future__ import annotations

import pytest

from compat.checks import Options
from compat.core.errors import UsageError
from compat.launch_line import fixed_words, read_line

ARGS = {"present": True, "location": "vllm/entrypoints/openai/cli_args.py",
        "parser": {"underscores_to_dashes": True, "allow_abbrev": True},
        "arguments": [
            {"name": "model_tag", "aliases": [], "value": "positional", "nargs": "?", "location": "cli_args.py:10"},
            {"name": "--model", "aliases": [], "value": "str", "location": "arg_utils.py:1"},
            {"name": "--tensor-parallel-size", "aliases": ["-tp"], "value": "int", "location": "arg_utils.py:2"},
            {"name": "--kv-cache-dtype", "aliases": [], "value": "str", "choices": ["auto", "fp8"], "location": "arg_utils.py:3"},
            {"name": "--enforce-eager", "aliases": [], "value": "bool", "negatable": True, "location": "arg_utils.py:4"},
            {"name": "--speculative-config", "aliases": [], "value": "json", "location": "arg_utils.py:5"},
            {"name": "--max-model-len", "aliases": [], "value": "int", "location": "arg_utils.py:6"},
        ]}
SPEC = "--speculative-config '{\"method\": \"eagle3\", \"model\": \"/m/d\", \"num_speculative_tokens\": 3}'"


def run_line(ctx, run, text, **report):
    return run("launch-arguments", ctx("vllm", "0.18.0", report_changes={"cli_arguments": ARGS, **report},
                                       options=Options(launch=read_line(text))))


def test_a_line_the_release_takes_passes(ctx, run):
    result = run_line(ctx, run, f"vllm serve /m/t -tp 8 --enforce-eager --no-enforce-eager --max-model-len 32k "
                      f"--kv_cache_dtype fp8 {SPEC}")
    assert result["verdict"] == "pass", result["detail"]
    assert [a["argument"] for a in result["arguments"]] == ["--tensor-parallel-size", "--enforce-eager", "--enforce-eager",
                                                            "--max-model-len", "--kv-cache-dtype", "--speculative-config"]


@pytest.mark.parametrize("words, said", [
    ("--foo bar", "unrecognized arguments: --foo bar"),
    ("-tp eight", "argument --tensor-parallel-size/-tp: invalid int value: 'eight'"),
    ("--kv-cache-dtype fp9", "argument --kv-cache-dtype: invalid choice: 'fp9' (choose from 'auto', 'fp8')"),
    ("--max-model-len", "argument --max-model-len: expected one argument"),
    ("--enforce-eager=yes", "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'yes'"),
    ("/m/other", "unrecognized arguments: /m/other"),  # a second positional: serve takes one
])
def test_what_the_engine_refuses_in_its_words(ctx, run, words, said):
    result = run_line(ctx, run, f"vllm serve /m/t {SPEC} {words}")
    assert result["verdict"] == "fail" and said in result["detail"]


def test_an_unknown_option_is_dropped_from_the_printed_line(ctx, run):
    line = read_line(f"vllm serve /m/t --foo bar -tp 8 {SPEC}")
    result = run("launch-arguments", ctx("vllm", "0.18.0", report_changes={"cli_arguments": ARGS},
                                         options=Options(launch=line)))
    from compat.launch_line import LineEdit

    edits = [LineEdit(**{k: (tuple(v) if k == "aliases" else v) for k, v in e.items()}) for e in result["line_edits"]]
    assert fixed_words(line, edits)[:6] == ["vllm", "serve", "/m/t", "-tp", "8", "--speculative-config"]


@pytest.mark.parametrize("rejects, verdict", [(True, "fail"), (False, "fail")])  # ignored: the setting never applies
def test_a_spec_key_the_release_has_no_field_for(ctx, run, rejects, verdict):
    sc = {"fields": [{"name": n} for n in ("method", "model", "num_speculative_tokens")], "rejects_unknown_keys": rejects,
          "rejects_unknown_keys_reason": "why", "location": "speculative.py:1"}
    line = ("vllm serve /m/t --speculative-config '{\"method\": \"eagle3\", \"model\": \"/m/d\", "
            "\"num_speculative_tokens\": 3, \"disable_by_batch_size\": 4}'")
    result = run_line(ctx, run, line, speculative_config=sc)
    assert result["verdict"] == verdict and "'disable_by_batch_size'" in result["detail"]
    assert result["line_edits"] == [{"kind": "spec", "why": result["line_edits"][0]["why"], "key": "disable_by_batch_size",
                                     "value": None}]


def test_an_ambiguous_prefix_is_refused_a_unique_one_taken(ctx, run):
    assert run_line(ctx, run, f"vllm serve /m/t --max-model 4096 {SPEC}")["verdict"] == "pass"
    args = {**ARGS, "arguments": [*ARGS["arguments"], {"name": "--max-num-seqs", "aliases": [], "value": "int"}]}
    result = run_line(ctx, run, f"vllm serve /m/t --max 4096 {SPEC}", cli_arguments=args)
    assert "ambiguous option: --max could match --max-model-len, --max-num-seqs" in result["detail"]


@pytest.mark.parametrize("text, token", [
    ("vllm serve /m/t --speculative-config '{\"model\": \"/m/d\"", "never closed"),
    ("vllm serve /m/t --speculative-config '{model: /m/d}'", "is not JSON"),
    ("torchrun serve.py", "unknown entry point 'torchrun serve.py'"),
    ("python -m sglang.launch_router --x", "unknown entry point 'sglang.launch_router'"),
])
def test_a_line_that_cannot_be_read_is_a_usage_error_naming_the_token(text, token):
    with pytest.raises(UsageError, match=token.replace("(", r"\(").replace(".", r"\.")):
        read_line(text)


RULES = {"model-option-refused": {"rule": "model-option-refused", "location": "vllm/utils/__init__.py:1707",
                                  "message": "With `vllm serve`, you should provide the model as a positional argument"},
         "model-option-moved": {"rule": "model-option-moved", "message": None, "location": "vllm/utils/argparse_utils.py:201"},
         "positional-model-first": {"rule": "positional-model-first", "location": "vllm/utils/argparse_utils.py:229",
                                    "message": "`model` should be provided as the first positional argument",
                                    "when": "--served-model-name"}}
MORE = [{"name": "--trust-remote-code", "aliases": [], "value": "bool", "negatable": True, "location": "a.py:6"},
        {"name": "--served-model-name", "aliases": [], "value": "list", "nargs": "+", "item": "str", "location": "a.py:7"},
        {"name": "--cudagraph-capture-sizes", "aliases": [], "value": "list", "nargs": "+", "item": "int", "location": "a.py:8"}]


def with_rules(*names):
    return {**ARGS, "arguments": [*ARGS["arguments"], *MORE],
            "parser": {**ARGS["parser"], "serve_rules": [RULES[n] for n in names]}}


def printed(result, line):
    from compat.launch_line import LineEdit

    edits = [LineEdit(**{k: (tuple(v) if k == "aliases" else v) for k, v in e.items()}) for e in result.get("line_edits", [])]
    return fixed_words(line, edits)


def test_serve_refuses_the_model_option_where_the_parser_raises_and_the_model_moves_first(ctx, run):
    line = read_line(f"vllm serve -tp 8 --model /m/t {SPEC}")
    result = run_line(ctx, run, line.text, cli_arguments=with_rules("model-option-refused"))
    assert result["verdict"] == "fail" and "ValueError: With `vllm serve`, you should provide the model" in result["detail"]
    assert result["location"] == "vllm/utils/__init__.py:1707"
    assert printed(result, line)[:5] == ["vllm", "serve", "/m/t", "-tp", "8"]
    assert run_line(ctx, run, line.text, cli_arguments=with_rules("model-option-moved"))["verdict"] == "pass"
    assert run("launch-arguments", ctx("vllm", "0.18.0", report_changes={"cli_arguments": with_rules("model-option-moved")},
               options=Options(launch=read_line(f"python -m vllm.entrypoints.openai.api_server --model /m/t {SPEC}"))))[
        "verdict"] == "pass"  # the module form has no such rule


def test_a_moved_model_option_takes_the_positional_slot(ctx, run):
    result = run_line(ctx, run, f"vllm serve /m/t --model /m/u {SPEC}", cli_arguments=with_rules("model-option-moved"))
    assert result["verdict"] == "fail" and "unrecognized arguments: /m/t" in result["detail"]


def test_a_line_that_starts_with_an_option_and_names_served_model_name(ctx, run):
    line = read_line(f"vllm serve --served-model-name kimi -tp 8 /m/t {SPEC}")
    result = run_line(ctx, run, line.text, cli_arguments=with_rules("positional-model-first"))
    assert result["verdict"] == "fail" and "should be provided as the first positional argument" in result["detail"]
    assert printed(result, line)[:7] == ["vllm", "serve", "/m/t", "--served-model-name", "kimi", "-tp", "8"]
    assert run_line(ctx, run, f"vllm serve -tp 8 {SPEC}", cli_arguments=with_rules("positional-model-first"))["verdict"] == "pass"


def test_list_items_are_read_with_their_type(ctx, run):
    result = run_line(ctx, run, f"vllm serve /m/t {SPEC} --cudagraph-capture-sizes 1 2 x", cli_arguments=with_rules())
    assert result["verdict"] == "fail" and "argument --cudagraph-capture-sizes: invalid int value: 'x'" in result["detail"]
    assert run_line(ctx, run, f"vllm serve /m/t --cudagraph-capture-sizes 1 2 {SPEC}", cli_arguments=with_rules())[
        "verdict"] == "pass"


def test_an_option_its_own_action_refuses(ctx, run):
    """SGLang's deprecated options: the Action raises when the option is typed (the cli_arguments fact's "refused")."""
    refused = {"name": "--enable-ep-moe", "aliases": [], "value": "flag", "location": "server_args.py:2834",
               "refused": {"message": "ValueError: NOTE: --enable-ep-moe is deprecated.", "location": "server_args.py:3294"}}
    args = {**ARGS, "arguments": [*ARGS["arguments"], refused]}
    result = run_line(ctx, run, f"vllm serve /m/t --enable-ep-moe {SPEC}", cli_arguments=args)
    assert result["verdict"] == "fail" and "ValueError: NOTE: --enable-ep-moe is deprecated." in result["detail"]


@pytest.mark.parametrize("text", [
    f"vllm serve /m/t --trust-remote-code -tp 8 {SPEC} --foo bar",
    f"vllm serve -tp 8 --model /m/t {SPEC} --trust-remote-code",
    f"vllm serve /m/t {SPEC} --trust-remote-code --served-model-name kimi",
])
def test_every_flag_doctor_does_not_change_is_printed_back(ctx, run, text):
    """The fixes (an option dropped, the model moved first, a spec key) leave the user's other words as typed."""
    line = read_line(text)
    result = run_line(ctx, run, text, cli_arguments=with_rules("model-option-refused", "positional-model-first"))
    words = printed(result, line)
    kept = [w for w in line.args if w not in ("--foo", "bar", "--model", "/m/t")]
    assert [w for w in words[2:] if w in kept] == [w for w in kept if w in words[2:]]  # in their order
    assert "--trust-remote-code" in words and set(kept) <= set(words)


# -- a positional model on the api_server module: parsed, never served ---------------------------------------------
POSITIONAL = {"present": True, "serve_copies": "vllm/entrypoints/cli/serve.py:41", "module": "vllm/entrypoints/openai/api_server.py",
              "module_copies": None, "module_location": "vllm/entrypoints/openai/api_server.py:2000",
              "default_model": "Qwen/Qwen3-0.6B", "default_location": "vllm/config/__init__.py:279"}  # vLLM 0.10.2's probe
MODULE = "python3 -m vllm.entrypoints.openai.api_server"


def test_the_module_form_serves_the_default_model_for_a_positional_one(ctx, run):
    """The images of vLLM 0.10.0 - 0.11.0 start the module (docker/Dockerfile's ENTRYPOINT): a manifest whose args
    start with the model serves Qwen/Qwen3-0.6B there, with no error."""
    result = run_line(ctx, run, f"{MODULE} /m/t {SPEC}", positional_model=POSITIONAL)
    assert result["verdict"] == "fail" and "'Qwen/Qwen3-0.6B' starts instead" in result["detail"]
    fixed = fixed_words(read_line(f"{MODULE} /m/t {SPEC}"), _edits(result))
    assert fixed[3:] == ["--speculative-config", '{"method": "eagle3", "model": "/m/d", "num_speculative_tokens": 3}', "--model", "/m/t"]


def test_a_positional_beside_model_is_dropped_and_vllm_serve_takes_it(ctx, run):
    both = run_line(ctx, run, f"{MODULE} /m/other --model /m/t {SPEC}", positional_model=POSITIONAL)
    assert both["verdict"] == "fail" and "never served" in both["detail"] and "starts instead" not in both["detail"]
    assert run_line(ctx, run, f"vllm serve /m/t {SPEC}", positional_model=POSITIONAL)["verdict"] == "pass"
    assert run_line(ctx, run, f"{MODULE} --model /m/t {SPEC}", positional_model=POSITIONAL)["verdict"] == "pass"


def _edits(result):
    from compat.launch_line import LineEdit

    return [LineEdit(e["kind"], e.get("why", ""), e.get("start", 0), e.get("end", 0), e.get("option", ""),
                     tuple(e.get("aliases") or ()), e.get("key", ""), e.get("value")) for e in result["line_edits"]]
