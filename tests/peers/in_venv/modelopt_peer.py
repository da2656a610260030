"""Inside the peers venv: nvidia-modelopt's own EAGLE-3 export, and its own check of an exported directory.

    modelopt_peer.py export OUT      a tiny Llama base converted by mtsp.convert (EAGLE3_DEFAULT_CFG, a reduced
                                     draft vocab with a real d2t), exported by export_speculative_decoding
    modelopt_peer.py check DIR...    EagleExporter._check_valid_sd on each model.safetensors, and the keys of
                                     hf_spec_configs' template that config.json lacks
stdout (last line): JSON.
"""

import copy
import json
import sys
from types import SimpleNamespace

import torch
from safetensors.torch import load_file


def export(out: str) -> dict:
    from transformers import LlamaConfig, LlamaForCausalLM

    import modelopt.torch.speculative as mtsp
    from modelopt.torch.export.unified_export_hf import export_speculative_decoding
    from modelopt.torch.speculative.config import EAGLE3_DEFAULT_CFG

    torch.manual_seed(0)
    base = LlamaForCausalLM(LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=8, num_attention_heads=4,
                                        num_key_value_heads=4, head_dim=16, vocab_size=256, max_position_embeddings=4096))
    conf = copy.deepcopy(EAGLE3_DEFAULT_CFG["config"])
    conf["eagle_architecture_config"].update({"draft_vocab_size": 128, "eagle_aux_hidden_state_layer_ids": [2, 4, 5],
                                              "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 4,
                                              "head_dim": 16})
    mtsp.convert(base, [("eagle", conf)])
    used = torch.randperm(256)[:128].sort().values  # what load_draft_vocab_cache would put there
    base.eagle_module.d2t.copy_(used - torch.arange(128))
    export_speculative_decoding(base, export_dir=out)
    return {"exported": out}


def check(path: str) -> dict:
    from modelopt.torch.export.plugins.hf_spec_configs import kimik2_eagle_template_config, llama_eagle_template_config
    from modelopt.torch.export.plugins.hf_spec_export import EagleExporter

    config = json.load(open(f"{path}/config.json"))
    decoder = "kimik2" if config.get("architectures") == ["Eagle3DeepseekV2ForCausalLM"] else "llama"
    exporter = EagleExporter.__new__(EagleExporter)  # its check, without a training model to export
    exporter.eagle_decoder_type, exporter.num_hidden_layers = decoder, config.get("num_hidden_layers") or 1
    exporter.model = SimpleNamespace(eagle_config=SimpleNamespace(
        use_aux_hidden_state=(config.get("eagle_config") or {}).get("use_aux_hidden_state", False)))
    try:
        exporter._check_valid_sd(load_file(f"{path}/model.safetensors"))
        error = None
    except AssertionError as exc:
        error = str(exc)
    template = kimik2_eagle_template_config if decoder == "kimik2" else llama_eagle_template_config
    missing = sorted(k for k in template if k not in config)
    missing += sorted(f"eagle_config.{k}" for k in template["eagle_config"] if k not in (config.get("eagle_config") or {}))
    return {"decoder": decoder, "check_error": error, "missing_template_keys": missing}


if sys.argv[1] == "export":
    print(json.dumps(export(sys.argv[2])))
else:
    print(json.dumps({p: check(p) for p in sys.argv[2:]}))
