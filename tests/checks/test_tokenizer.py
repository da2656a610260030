"""tokenizer: a drafter that ships tokenizer files must ship the target's (read bounded, stdlib only)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from pathlib import Path

import pytest

from check_inputs import drafter, target

LLAMA3_SPECIALS = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|eot_id|>": 128009,
                   **{f"<|reserved_special_token_{i}|>": 128002 + i for i in range(254) if 128002 + i != 128009}}
QWEN_SPECIALS = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
TEMPLATE = "{% for m in messages %}{{ m['content'] }}{% endfor %}"


def write_tokenizer(directory: Path, *, base: int, specials: dict[str, int], bos: str | None, eos: str, pad: str | None = None,
                    generation: dict | None = None, template: bool = True, unigram: bool = False) -> Path:
    """The files HF writes for a fast tokenizer: a BPE (or Unigram) tokenizer.json with its added tokens,
    tokenizer_config.json (bos/eos/pad, added_tokens_decoder, chat_template), generation_config.json."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tokenizer.json").write_bytes(tokenizer_json(base, tuple(specials.items()), unigram))
    config = {"bos_token": bos, "eos_token": eos, "pad_token": pad, "tokenizer_class": "PreTrainedTokenizerFast",
              "added_tokens_decoder": {str(i): {"content": t, "special": True} for t, i in specials.items()}}
    if template:
        config["chat_template"] = TEMPLATE
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    if generation is not None:
        (directory / "generation_config.json").write_text(json.dumps(generation))
    return directory


@functools.lru_cache(maxsize=8)
def tokenizer_json(base: int, specials: tuple[tuple[str, int], ...], unigram: bool) -> bytes:
    vocab = [[f"t{i}", -1.0] for i in range(base)] if unigram else {f"t{i}\u0120\"q": i for i in range(base)}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for t, i in specials]
    body = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None, "pre_tokenizer": {"type": "ByteLevel"},
            "model": {"type": "Unigram" if unigram else "BPE", "vocab": vocab, "merges": ["t1 t2"] * 3}}
    return json.dumps(body, ensure_ascii=False).encode()


def pair(tmp_path, ctx, drafter_dir: Path | None = None, target_dir: Path | None = None):
    tgt = dataclasses.replace(target(model_type="llama", architecture="LlamaForCausalLM", layers=32, vocab=128256),
                              path=target_dir or tmp_path / "target")
    (tmp_path / "target").mkdir(exist_ok=True)
    d = drafter(tgt=tgt)
    d.path = drafter_dir or tmp_path / "drafter"
    d.path.mkdir(exist_ok=True)
    return ctx(tgt=tgt, draft=d)


def llama3(directory: Path, **changes) -> Path:
    kwargs = dict(base=128000, specials=LLAMA3_SPECIALS, bos="<|begin_of_text|>", eos="<|eot_id|>",
                  generation={"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})
    return write_tokenizer(directory, **{**kwargs, **changes})


def test_a_drafter_without_tokenizer_files_passes(tmp_path, ctx, run):
    result = run("tokenizer", pair(tmp_path, ctx))
    assert result["verdict"] == "pass" and "ships no tokenizer files" in result["detail"]


def test_a_copy_of_the_targets_tokenizer_passes(tmp_path, ctx, run):
    result = run("tokenizer", pair(tmp_path, ctx, llama3(tmp_path / "drafter"), llama3(tmp_path / "target")))
    assert result["verdict"] == "pass", result["detail"]
    assert result["detail"].startswith("byte-identical tokenizer.json vocabulary (128256 ids)")
    assert result["tokenizer"]["drafter"]["special_ids"] == {"bos": [128000], "eos": [128001, 128008, 128009], "pad": []}


def test_a_drafter_trained_for_another_tokenizer_fails_naming_sizes_and_ids(tmp_path, ctx, run):
    """A Qwen-tokenizer drafter next to a Llama-3 target: another vocabulary, other special ids."""
    qwen = write_tokenizer(tmp_path / "drafter", base=151643, specials=QWEN_SPECIALS, bos=None, eos="<|im_end|>",
                           pad="<|endoftext|>", generation={"eos_token_id": [151645, 151643]})
    result = run("tokenizer", pair(tmp_path, ctx, qwen, llama3(tmp_path / "target")))
    assert result["verdict"] == "fail" and result["fix"] is None
    assert "vocabulary size: drafter 151646 ids, target 128256" in result["detail"]
    assert "eos id: drafter [151645, 151643], target [128001, 128008, 128009]" in result["detail"]
    assert "special tokens only the drafter has: <|endoftext|> (151643), <|im_start|> (151644)" in result["detail"]


def test_the_same_special_token_under_another_id_is_another_vocabulary(tmp_path, ctx, run):
    moved = {**LLAMA3_SPECIALS, "<|eot_id|>": 128010}
    result = run("tokenizer", pair(tmp_path, ctx, llama3(tmp_path / "drafter", specials=moved), llama3(tmp_path / "target")))
    assert result["verdict"] == "fail"
    assert "special tokens under other ids: <|eot_id|> drafter 128010 / target 128009" in result["detail"]


def test_other_eos_ids_and_no_target_chat_template_warn(tmp_path, ctx, run):
    """A drafter shipping the base model's files (eos <|end_of_text|>) beside an instruct target without a template."""
    base = llama3(tmp_path / "drafter", eos="<|end_of_text|>", generation={"bos_token_id": 128000, "eos_token_id": 128001})
    instruct = llama3(tmp_path / "target", generation={"bos_token_id": 128000, "eos_token_id": 128009}, template=False)
    result = run("tokenizer", pair(tmp_path, ctx, base, instruct))
    assert result["verdict"] == "warn"
    assert "eos id: drafter 128001, target 128009" in result["detail"]
    assert "the target has no chat template" in result["detail"]


def test_ids_come_from_the_tokens_when_no_generation_config_names_them(tmp_path, ctx, run):
    d = llama3(tmp_path / "drafter", generation=None, eos="<|end_of_text|>")
    t = llama3(tmp_path / "target", generation=None)
    result = run("tokenizer", pair(tmp_path, ctx, d, t))
    assert result["verdict"] == "warn" and "eos id: drafter 128001, target 128009" in result["detail"]


def test_a_unigram_vocabulary_is_counted_too(tmp_path, ctx, run):
    d = write_tokenizer(tmp_path / "drafter", base=250, specials={"</s>": 250}, bos=None, eos="</s>", unigram=True)
    t = write_tokenizer(tmp_path / "target", base=300, specials={"</s>": 300}, bos=None, eos="</s>", unigram=True)
    result = run("tokenizer", pair(tmp_path, ctx, d, t))
    assert result["verdict"] == "fail" and "vocabulary size: drafter 251 ids, target 301" in result["detail"]


def test_a_config_only_target_is_said_and_the_drafter_checked_against_its_vocab_size(tmp_path, ctx, run):
    result = run("tokenizer", pair(tmp_path, ctx, llama3(tmp_path / "drafter")))
    assert result["verdict"] == "warn" and "the target directory has no tokenizer files" in result["detail"]
    big = write_tokenizer(tmp_path / "big", base=151643, specials=QWEN_SPECIALS, bos=None, eos="<|im_end|>")
    result = run("tokenizer", pair(tmp_path, ctx, big))
    assert result["verdict"] == "fail" and "151646 ids, more than the target's vocab_size 128256" in result["detail"]


# -- hostile files: said, never a crash, never read past the cap or out of the directory ----------------------
def test_a_link_out_of_the_drafter_is_not_read(tmp_path, ctx, run):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"eos_token": "x"}))
    d = llama3(tmp_path / "drafter")
    (d / "tokenizer_config.json").unlink()
    (d / "tokenizer_config.json").symlink_to(secret)
    result = run("tokenizer", pair(tmp_path, ctx, d, llama3(tmp_path / "target")))
    assert result["verdict"] == "warn" and "outside" in result["detail"] and "not read" in result["detail"]


@pytest.mark.parametrize("content", [b"[" * 200000, b'{"added_tokens": [{"id": 1, "content": "a"', b"\xff\xfe garbage",
                                     b'{"model": {"vocab": {"a": 1, "b": x}}}', b'{"model": {"vocab": 7}}'])
def test_broken_tokenizer_json_is_said(tmp_path, ctx, run, content):
    d = llama3(tmp_path / "drafter")
    (d / "tokenizer.json").write_bytes(content)
    result = run("tokenizer", pair(tmp_path, ctx, d, llama3(tmp_path / "target")))
    assert result["verdict"] in ("warn", "fail")
    assert "no model.vocab this reader understands" in result["detail"]


def test_a_tokenizer_json_past_the_cap_is_not_read(tmp_path, ctx, run, monkeypatch):
    from compat.checks import _tokenizer

    monkeypatch.setattr(_tokenizer, "TOKENIZER_JSON_BYTES", 1000)
    result = run("tokenizer", pair(tmp_path, ctx, llama3(tmp_path / "drafter"), llama3(tmp_path / "target")))
    assert result["verdict"] == "warn" and "more than the 1000-byte limit: not compared" in result["detail"]


def test_a_fifo_is_refused_without_waiting(tmp_path, ctx, run):
    d = llama3(tmp_path / "drafter")
    (d / "generation_config.json").unlink()
    os.mkfifo(d / "generation_config.json")
    started = time.monotonic()
    result = run("tokenizer", pair(tmp_path, ctx, d, llama3(tmp_path / "target")))
    assert time.monotonic() - started < 5 and "a FIFO, not a regular file" in result["detail"]


def test_a_10mb_tokenizer_json_is_walked_not_loaded(tmp_path):
    """A Qwen-sized vocabulary (151k entries, ~4 MB here): counted by the regex walk, ids of the asked tokens found."""
    from compat.checks._tokenizer import read_tokenizer

    d = write_tokenizer(tmp_path / "qwen", base=151643, specials=QWEN_SPECIALS, bos=None, eos="<|im_end|>",
                        pad="t7\u0120\"q")
    tok = read_tokenizer(d)
    assert tok.vocab_size == 151646 and tok.special_ids["pad"] == [7] and tok.special_ids["eos"] == [151645]
    assert tok.special_tokens == QWEN_SPECIALS and not tok.problems
