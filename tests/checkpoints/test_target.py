"""compat/target.py: one reader of the target model, text_config first, hostile files refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from compat.core.errors import RefusedError, UsageError
from compat.target import read_target

KIMI_K25 = {  # the shape of moonshotai/Kimi-K2.5's config.json (fields that matter here)
    "architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
    "auto_map": {"AutoConfig": "configuration_kimi_k25.KimiK25Config"},
    "vocab_size": 163840,  # some wrappers repeat a field at the top; text_config still wins
    "text_config": {"model_type": "kimi_k2", "architectures": ["DeepseekV3ForCausalLM"], "num_hidden_layers": 61,
                    "hidden_size": 7168, "vocab_size": 163840, "max_position_embeddings": 262144},
}


def write(tmp_path, config, name="model") -> object:
    path = tmp_path / name
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return path


def test_kimi_k25_reads_the_language_model_from_text_config(tmp_path):
    target = read_target(write(tmp_path, KIMI_K25))
    assert target.path == tmp_path / "model" and target.config_path == tmp_path / "model" / "config.json"
    assert (target.model_type, target.top_model_type) == ("kimi_k2", "kimi_k25")
    assert target.architecture == "KimiK25ForConditionalGeneration"
    assert target.architectures == ["KimiK25ForConditionalGeneration", "DeepseekV3ForCausalLM"]
    assert (target.num_hidden_layers, target.hidden_size, target.vocab_size, target.max_position_embeddings) == (61, 7168, 163840, 262144)
    assert target.family == "deepseek" and target.needs_remote_code
    assert target.names == ["kimi_k2", "kimi_k25", "KimiK25ForConditionalGeneration"]


def test_text_config_wins_over_a_disagreeing_top_level(tmp_path):
    config = {**KIMI_K25, "num_hidden_layers": 1, "hidden_size": 1024}  # a vision tower's numbers at the top
    target = read_target(write(tmp_path, config))
    assert (target.num_hidden_layers, target.hidden_size) == (61, 7168)


def test_field_missing_from_text_config_comes_from_the_top(tmp_path):
    config = {"architectures": ["X"], "model_type": "x", "max_position_embeddings": 4096,
              "text_config": {"model_type": "llama", "num_hidden_layers": 8}}
    target = read_target(write(tmp_path, config))
    assert (target.max_position_embeddings, target.num_hidden_layers, target.model_type) == (4096, 8, "llama")


def test_flat_llama_config_and_config_json_path(tmp_path):
    path = write(tmp_path, {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32,
                            "hidden_size": 4096, "vocab_size": 128256, "max_position_embeddings": True})
    target = read_target(path / "config.json")
    assert target.path == path and target.family == "llama" and not target.needs_remote_code
    assert target.max_position_embeddings is None  # a bool is not a length
    assert (target.model_type, target.top_model_type, target.num_hidden_layers) == ("llama", "llama", 32)


def test_no_config_is_a_usage_error_naming_the_path(tmp_path):
    with pytest.raises(UsageError, match=str(tmp_path / "empty")):
        (tmp_path / "empty").mkdir()
        read_target(tmp_path / "empty")


@pytest.mark.parametrize("text, needle", [("[1, 2]", "not a JSON object"), ("{nope", "not valid JSON"),
                                          ("[" * 100000, "nested too deeply"), ("{\"a\": " + "9" * 5000 + "}", "not valid JSON")])
def test_bad_json_refused(tmp_path, text, needle):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(text)
    with pytest.raises(RefusedError, match=needle):
        read_target(tmp_path / "m")


def test_special_files_refused_at_once(tmp_path):
    """config.json -> /dev/zero, or a FIFO nobody writes: refused without reading (the child would hang or fill memory)."""
    zero, fifo = tmp_path / "zero", tmp_path / "fifo"
    zero.mkdir(), fifo.mkdir()
    (zero / "config.json").symlink_to("/dev/zero")
    os.mkfifo(fifo / "config.json")
    code = ("import sys\nfrom compat.target import read_target\nfrom compat.core.errors import RefusedError\n"
            "try:\n    read_target(sys.argv[1])\nexcept RefusedError as e:\n    print(e)\n")
    for path, needle in ((zero, "outside"), (fifo, "is a FIFO, not a regular file")):
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
        assert needle in proc.stdout and proc.returncode == 0, proc


def test_huggingface_cache_snapshot_links_are_followed_into_blobs(tmp_path):
    repo = tmp_path / "models--moonshotai--Kimi-K2.5"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "abc123").write_text(json.dumps(KIMI_K25))
    snapshot = repo / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").symlink_to("../../blobs/abc123")
    assert read_target(snapshot).num_hidden_layers == 61
