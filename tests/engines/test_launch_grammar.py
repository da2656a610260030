"""The launch grammar is the engine unit's: compat/launch_line.py reads a line by the unit's fields (TARGET_OPTIONS,
DRAFTER_OPTIONS, OPTION_ALIASES, ABBREVIATED_OPTIONS, SPEC_CONFIG_OPTIONS, SPEC_SHORTCUTS, SPEC_SETTING_OPTIONS,
SPEC_OPTION_PREFIX, ...), never by an engine's name. A made-up engine written into a temporary folder on
compat.engines' path, with option names no real engine has, is read by them; no file of compat changes for it.
LMDeploy's line is read as its release's source reads it."""

from __future__ import annotations


import pytest

from compat import engines
from compat.launch_line import LineEdit, fixed_words, read_line


def _unit(name: str, **fields: object) -> str:
    base = dict(NAME=name, DISPLAY_NAME=name.upper(), IMPORT_NAME=name, ORDER=40, DISTRIBUTIONS=(name,),
                INDEX_NAME=name, VERSION_FILES=(f"{name}/version.py",), REPOSITORY=f"https://example.invalid/{name}",
                VERSION_IN_LOG=r"v(\d+\.\d+\.\d+)", SERVER_OWNED_BY=name, METRICS_PREFIX=f"{name}:",
                DEFAULT_RELEASES=">=1.0", LAYER_IDS_FED_BY="runners", SERVER_ACCEPTANCE="counters",
                DRAFT_SETTINGS_FROM="draft", DRAFT_SHAPE="chain", TARGET_GATE="interface")
    base.update(fields)
    return "\n".join(f"{k} = {v!r}" for k, v in base.items()) + "\n"


def test_a_flags_engine_is_read_by_its_units_option_names(extra_folder):
    """`--model-id`, `--draft`/`--draft-id`, `--draft-method`, `--draft-len`: none of them SGLang's or LMDeploy's."""
    (extra_folder / "tgi.py").write_text(_unit(
        "tgi", LAUNCH_COMMANDS=(("tgi-launch",),), SPEC_FORM="flags", MODEL_OPTION="--model-id",
        TARGET_OPTIONS=("--model-id",), DRAFTER_OPTIONS=("--draft-id", "--draft"), OPTION_ALIASES={"--draft": "--draft-id"},
        SPEC_SETTING_OPTIONS={"method": "--draft-method", "num_speculative_tokens": "--draft-len"},
        SPEC_OPTION_PREFIX="--draft-", ABBREVIATED_OPTIONS=("--draft-method", "--draft-len")))
    line = read_line("tgi-launch --model-id /t --draft /d --draft-meth eagle3 --draft-len=4 --speculative-algorithm X")
    assert (line.engine, line.target, line.drafter) == ("tgi", "/t", "/d")
    assert (line.method, line.setting("num_speculative_tokens")) == ("eagle3", "4")  # --draft-meth: its abbreviation
    assert line.spec == {"--draft-method": "eagle3", "--draft-len": "4"}  # SGLang's --speculative-algorithm: not its
    converted = LineEdit("set", "the converted drafter", option="--draft-id", aliases=("--draft",), value="/c")
    assert fixed_words(line, [converted])[:5] == ["tgi-launch", "--model-id", "/t", "--draft", "/c"]


def test_a_config_engine_is_read_by_its_units_config_options(extra_folder):
    """One JSON object under `--spec` (not --speculative-config), a shortcut `--spec-n` merged after it."""
    (extra_folder / "xs.py").write_text(_unit(
        "xs", LAUNCH_COMMANDS=(("xs", "serve"),), SPEC_FORM="config", TARGET_OPTIONS=("--model",),
        SPEC_CONFIG_OPTIONS=("--spec",), SPEC_SHORTCUTS={"--spec-n": "num_speculative_tokens"},
        LAUNCH_EXAMPLE="xs serve ./t --spec '{\"model\": \"./d\"}'"))
    line = read_line('xs serve /t --spec \'{"method": "eagle3", "model": "/d"}\' --spec-n 2 '
                     '--speculative-config \'{"model": "/other"}\'')
    assert (line.engine, line.target, line.drafter, line.method) == ("xs", "/t", "/d", "eagle3")
    assert line.spec == {"method": "eagle3", "model": "/d", "num_speculative_tokens": 2} and line.spec_option == "--spec"
    edited = fixed_words(line, [LineEdit("spec", "method", key="method", value="mtp")])
    assert edited[3:5] == ["--spec", '{"method":"mtp","model":"/d","num_speculative_tokens":2}']


@pytest.mark.parametrize("text,steps", [
    # lmdeploy/cli/utils.py:846 (0.18.0): --speculative-num-draft-tokens, "The number of speculative tokens to
    # generate per step"; get_speculative_config passes it as SpeculativeConfig's num_speculative_tokens (:100)
    ("lmdeploy serve api_server /t --backend pytorch --speculative-algorithm eagle3 --speculative-draft-model /d "
     "--speculative-num-draft-tokens 5", "5"),
    ("lmdeploy serve api_server /t --backend pytorch --speculative_algorithm eagle3 --speculative-draft-model /d "
     "--speculative-num=2", "2"),  # FlexibleArgumentParser: underscores as dashes, a unique prefix taken
])
def test_lmdeploys_draft_tokens_are_its_num_speculative_tokens(text, steps):
    line = read_line(text)
    assert (line.engine, line.target, line.drafter, line.method) == ("lmdeploy", "/t", "/d", "eagle3")
    assert line.setting("num_speculative_tokens") == steps and line.setting("topk") is None


def test_doctor_takes_an_lmdeploy_lines_draft_tokens():
    """doctor's number of draft tokens (the checks' num_speculative_tokens) is the line's, not its default 3."""
    from compat.commands.doctor import _line_numbers

    line = read_line("lmdeploy serve api_server /t --speculative-algorithm eagle3 --speculative-draft-model /d "
                     "--speculative-num-draft-tokens 5")
    assert _line_numbers(line, 3, 1) == (5, 1)
    sglang = read_line("python -m sglang.launch_server --model-path /t --speculative-algorithm EAGLE3 "
                       "--speculative-draft-model-path /d --speculative-num-steps 4 --speculative-eagle-topk 2 "
                       "--speculative-num-draft-tokens 8")
    assert _line_numbers(sglang, 3, 1) == (4, 2)  # steps, not the tree's verified tokens


def test_the_units_declare_the_grammar_their_releases_spell():
    vllm, sglang, lmdeploy = engines.get("vllm"), engines.get("sglang"), engines.get("lmdeploy")
    assert vllm.spec_config_options[0] == "--speculative-config" and not sglang.spec_config_options
    assert dict(vllm.spec_shortcuts)["--spec-tokens"] == "num_speculative_tokens"
    assert dict(vllm.spec_legacy_options)["--speculative-model"] == "model"
    assert sglang.drafter_options[0] == "--speculative-draft-model-path" and sglang.option_named("--model") == "--model-path"
    assert lmdeploy.drafter_options == ("--speculative-draft-model",) and lmdeploy.target_options == ()
    assert lmdeploy.setting_option("num_speculative_tokens") == "--speculative-num-draft-tokens"
    assert sglang.setting_option("num_speculative_tokens") == "--speculative-num-steps"
    assert sglang.draft_option("attention_backend") == ("--speculative-draft-attention-backend",
                                                         ("--attention-backend", "--decode-attention-backend"))
    assert vllm.draft_option("tensor_parallel_size")[0] == "draft_tensor_parallel_size"  # a --speculative-config key
    assert lmdeploy.draft_option("quantization") == ("", ())  # its draft takes the target's engine config, no option
    for unit in engines.all_engines():  # each example line is read as its own engine's, with a target and a drafter
        line = read_line(unit.launch_example)
        assert (line.engine, line.target, line.drafter) == (unit.name, "./target", "./drafter"), unit.name


def test_the_converted_drafter_takes_lmdeploys_option():
    """doctor's line with a converted drafter: LMDeploy's --speculative-draft-model gets the new path (it has no
    --speculative-draft-model-path, SGLang's, which was appended before)."""
    from compat.checks import Ctx, Options
    from compat.checks._launch import launch_from_line

    line = read_line("lmdeploy serve api_server /t --backend pytorch --speculative-algorithm eagle3 "
                     "--speculative-draft-model /d --speculative-num-draft-tokens 3")
    ctx = Ctx({"engine": "lmdeploy", "version": "0.18.0"}, None, None, Options(launch=line))  # no target or drafter read
    argv = launch_from_line(ctx, [], drafter_path="/converted")["argv"]
    assert argv[argv.index("--speculative-draft-model") + 1] == "/converted"
    assert "--speculative-draft-model-path" not in argv and "/d" not in argv


def test_doctors_help_names_each_engines_option_for_the_draft_tokens(monkeypatch):
    import contextlib
    import io

    from compat import cli

    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps at the terminal's width: one line per option
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit, match="^0$"):
        cli.main(["doctor", "--help"])
    text = " ".join(out.getvalue().split())
    assert "(vLLM num_speculative_tokens; SGLang --speculative-num-steps; LMDeploy --speculative-num-draft-tokens)" in text
