"""compat explain knows the methods' failures (SGLang's arg_groups/speculative_hook.py messages, UNO's and the Gemma4
assistant's, are catalogued too, but explain does not index that file yet) (network: the releases from the user cache): each message as the
release raises it (its file and line found by explain), the cause in the catalogue, the method's fix."""

import json

import pytest

from cli_helpers import compat

pytestmark = pytest.mark.network

CASES = [  # (release, the message as the release's code writes it, catalogue id, a word of the fix)
    ("vllm==0.34.0", "ValueError: P-EAGLE (parallel drafting EAGLE-3) is not supported.", "method-peagle-removed",
     ">=0.22.0,<=0.33.0"),
    ("vllm==0.33.0", "ImportError: Arctic Inference is required for suffix decoding. Install via `pip install "
                     "arctic-inference==0.1.1`.", "method-suffix-needs-arctic-inference", "arctic-inference"),
    ("sglang==0.5.23", "ValueError: Unknown speculative algorithm name: EAGLE4", "method-unknown-name", "--method"),
    ("vllm==0.34.0", "ValueError: speculative_config requested method='eagle3', but the draft model '/m/d' is a 'dflash' "
                     "checkpoint (model_type='qwen3', architectures=['DFlashDraftModel']). Pass a matching method or a "
                     "matching draft checkpoint. Use method='dflash' if that is what you intended.",
     "method-drafter-mismatch", "method="),
]


@pytest.mark.parametrize("release, message, cause_id, fix_word", CASES, ids=[c[2] for c in CASES])
def test_a_methods_failure_is_explained(release, message, cause_id, fix_word):
    run = compat("explain", message, "--engine", release, "--json")
    finding = json.loads(run.out)["findings"][0]
    assert finding["cause_id"] == cause_id, finding
    assert finding["site"] and finding["site"].split(":")[0].endswith(".py")  # found in the release's own source
    assert fix_word in json.dumps(finding["fix"])
