"""method-vocab: a draft model shares the target's vocabulary (vLLM builds the draft with the target's tokenizer)."""

from method_inputs import QWEN3_8B, ctx

QWEN3_06B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936, "hidden_size": 1024}
LLAMA_1B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256, "hidden_size": 2048}
HEADS = {"lm_head.weight": ("BF16", (151936, 1024)), "model.embed_tokens.weight": ("BF16", (151936, 1024))}


def test_a_draft_of_the_targets_family(run):
    result = run("method-vocab", ctx("vllm", "0.34.0", QWEN3_06B, HEADS, method="draft_model"))
    assert result["verdict"] == "pass" and result["detail"] == f"vocab_size {QWEN3_8B['vocab_size']}, the target's"


def test_a_draft_of_another_vocabulary(run):
    result = run("method-vocab", ctx("sglang", "0.5.23", LLAMA_1B, HEADS, method="STANDALONE"))
    assert result["verdict"] == "fail" and "draft model 128256, target 151936" in result["detail"]
