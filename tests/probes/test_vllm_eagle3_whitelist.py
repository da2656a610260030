"""The `eagle3_whitelist` probe: found by shape (renamed variable, inline form, moved file)."""


from compat.probes.vllm.eagle3_whitelist import eagle3_whitelist
from probe_trees import write_tree


def make_tree(tmp_path, files):
    return write_tree(tmp_path, "vllm", files)


RENAMED = """
    class SpeculativeConfig:
        def _verify_args(self):
            if self.draft_model_config:
                self.draft_model_config.check()
            models_with_aux_states = [
                "llama",
                "kimi_k2",
            ]
            if (
                self.method in ("eagle3", "extract_hidden_states")
                and self.target_model_config
                and not any(
                    m in self.target_model_config.hf_text_config.model_type
                    for m in models_with_aux_states
                )
            ):
                raise ValueError(
                    f"{self.method} is only supported for {models_with_aux_states}"  # noqa: E501
                    f" models. Got {self.target_model_config.hf_text_config.model_type=}"
                )
            return self
"""


def test_renamed_list_variable_is_found_by_shape(tmp_path):
    tree = make_tree(tmp_path, {"vllm/config/speculative.py": RENAMED})
    fact = eagle3_whitelist(tree)
    assert fact["present"] is True
    assert fact["variable"] == "models_with_aux_states"
    assert fact["model_types"] == ["llama", "kimi_k2"]
    assert fact["list_location"] == "vllm/config/speculative.py:6"
    assert fact["location"] == "vllm/config/speculative.py:18"  # the raise the traceback shows
    assert fact["condition_location"] == "vllm/config/speculative.py:10"  # the `if` that tests the list
    assert fact["match"] == "substring"
    assert fact["tested"] == "self.target_model_config.hf_text_config.model_type"
    assert fact["methods_gated"] == ["eagle3", "extract_hidden_states"]
    assert fact["raises"] == "ValueError"
    assert fact["error_text"] == (
        'f"{self.method} is only supported for {models_with_aux_states}" '
        'f" models. Got {self.target_model_config.hf_text_config.model_type=}"'
    )


def test_inline_form_of_0_10_0_in_one_big_config_module(tmp_path):
    tree = make_tree(tmp_path, {"vllm/config.py": """
        class ModelConfig:
            pass

        class SpeculativeConfig:
            def _verify_args(self):
                if self.method == "eagle3" and self.target_model_config and \\
                    "llama" not in self.target_model_config.hf_text_config.model_type:
                    raise ValueError(
                        "Eagle3 is only supported for Llama models. "
                        f"Got {self.target_model_config.hf_text_config.model_type=}")
                return self
    """})
    fact = eagle3_whitelist(tree)
    assert fact["present"] is True
    assert fact["location"] == "vllm/config.py:9" and fact["condition_location"] == "vllm/config.py:7"
    assert fact["variable"] is None
    assert fact["model_types"] == ["llama"]
    assert fact["match"] == "substring"
    assert fact["methods_gated"] == ["eagle3"]
    assert fact["error_text"].startswith('"Eagle3 is only supported for Llama models. " f"Got ')


def test_equality_membership_is_an_exact_match(tmp_path):
    tree = make_tree(tmp_path, {"vllm/config/speculative.py": """
        SUPPORTED = ("llama",)

        class SpeculativeConfig:
            def _verify_args(self):
                allowed = ["llama", "qwen3"]
                if self.method == "eagle3" and self.target_model_config.hf_text_config.model_type not in allowed:
                    raise ValueError("no")
    """})
    fact = eagle3_whitelist(tree)
    assert fact["match"] == "exact"
    assert fact["variable"] == "allowed"
    assert fact["model_types"] == ["llama", "qwen3"]


def test_draft_config_rewrites_are_not_a_whitelist(tmp_path):
    # hf_config_override raises on a draft model_type too, but that is not a target check.
    tree = make_tree(tmp_path, {
        "vllm/config/speculative.py": """
            class SpeculativeConfig:
                @staticmethod
                def hf_config_override(hf_config):
                    if hf_config.model_type in ("inkling_mm_model", "inkling_model"):
                        raise ValueError("no MTP weights")
                    return hf_config

                def _verify_args(self):
                    return self
        """,
        "vllm/v1/worker/gpu_model_runner.py": """
            class GPUModelRunner:
                def _setup_eagle3_aux_hidden_state_outputs(self):
                    if self.use_aux_hidden_state_outputs:
                        if not supports_eagle3(self.model):
                            raise RuntimeError("Model does not support EAGLE3 interface")
        """,
    })
    fact = eagle3_whitelist(tree)
    assert fact["present"] is False
    assert "supports_eagle3()" in fact["reason"]
    assert fact["location"] == "vllm/v1/worker/gpu_model_runner.py:6"  # the raise, not its `if` nor the def
    assert fact["load_time_checks"] == [
        {"function": "_setup_eagle3_aux_hidden_state_outputs", "location": "vllm/v1/worker/gpu_model_runner.py:6",
         "condition_location": "vllm/v1/worker/gpu_model_runner.py:5"}
    ]


def test_no_speculative_config_at_all(tmp_path):
    tree = make_tree(tmp_path, {"vllm/config/__init__.py": ""})
    fact = eagle3_whitelist(tree)
    assert fact == {"present": False, "reason": "no class SpeculativeConfig in vllm/"}
