"""What selects the path that raised, read from a guard and its neighbours (compat/explain/levers.py): offline, on
small trees written here in the shapes the engines' guards take (each cited where the engines write it so); the real
releases' guards are read in tests/explain/test_upstream_pastes.py."""

from __future__ import annotations

import sys
from pathlib import Path

from compat.explain.levers import Vocabulary, levers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "probes"))
from probe_trees import line, write_tree  # noqa: E402

VOCABULARY = Vocabulary(frozenset({"--speculative-algorithm", "--attention-backend", "--dtype"}),
                        frozenset({"method", "num_speculative_tokens", "model"}), "vllm/config/speculative.py",
                        "--speculative-draft-model-path")

# SGLang's spec-v2 switch read through a local (sglang/srt/managers/scheduler.py reads envs.SGLANG_ENABLE_SPEC_V2), a
# dtype the kernel needs, a platform check, a server argument compared.
WORKER = '''
import os
import torch

class Worker:
    def __init__(self, server_args, config):
        self.server_args = server_args
        self.use_v2 = envs.SGLANG_ENABLE_SPEC_V2.get()

    def start(self, hidden_states):
        overlap = os.environ.get("SGLANG_DISABLE_OVERLAP")
        if self.use_v2 and not overlap:  # RAISE-V2
            raise ValueError("spec v2 needs the overlap scheduler")
        if hidden_states.dtype != torch.bfloat16:  # RAISE-DTYPE
            raise TypeError("only bfloat16")
        if current_platform.is_rocm():  # RAISE-ROCM
            raise NotImplementedError("not on ROCm")
        if self.server_args.attention_backend == "triton":  # RAISE-BACKEND
            raise ValueError("triton is not supported")
'''


def _tree(tmp_path):
    return write_tree(tmp_path, "sglang", {"sglang/srt/worker.py": WORKER}, strip_first_newline=True)


def _levers(tree, marker: str, test: str):
    at = line(WORKER, marker)
    return levers(tree, VOCABULARY, "sglang/srt/worker.py", at, [(test, True)])


def test_an_environment_variable_read_through_the_class_init_and_a_local(tmp_path):
    tree = _tree(tmp_path)
    found = {(lever.kind, lever.name): lever for lever in _levers(tree, "RAISE-V2", "self.use_v2 and not overlap")}
    v2 = found[("environment variable", "SGLANG_ENABLE_SPEC_V2")]
    assert v2.code == "envs.SGLANG_ENABLE_SPEC_V2.get()" and v2.at == f"sglang/srt/worker.py:{line(WORKER, 'self.use_v2 =')}"
    assert "takes its value from it" in v2.when and "set (true)" in v2.when
    overlap = found[("environment variable", "SGLANG_DISABLE_OVERLAP")]
    assert "unset (false)" in overlap.when  # the engine raises when it is not set


def test_the_dtype_the_code_needs(tmp_path):
    (lever,) = _levers(_tree(tmp_path), "RAISE-DTYPE", "hidden_states.dtype != torch.bfloat16")
    assert lever.kind == "dtype" and lever.name == "bfloat16" and "is not torch.bfloat16" in lever.when


def test_the_platform(tmp_path):
    (lever,) = _levers(_tree(tmp_path), "RAISE-ROCM", "current_platform.is_rocm()")
    assert lever.kind == "platform" and lever.name == "is_rocm"


def test_a_launch_option_of_the_releases_parser(tmp_path):
    (lever,) = _levers(_tree(tmp_path), "RAISE-BACKEND", "self.server_args.attention_backend == 'triton'")
    assert lever.kind == "option" and lever.name == "--attention-backend" and lever.when.endswith("is 'triton'")


def test_a_name_that_is_no_setting_says_nothing(tmp_path):
    assert _levers(_tree(tmp_path), "RAISE-BACKEND", "len(hidden_states) > 3") == []


def test_the_draft_model_an_access_reads(tmp_path):
    (lever,) = levers(_tree(tmp_path), VOCABULARY, "sglang/srt/worker.py", line(WORKER, "RAISE-V2"), [],
                      receiver="self.draft_runner.model")
    assert lever.kind == "draft model" and lever.name == "--speculative-draft-model-path"
