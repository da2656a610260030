"""The SGLang `drafter_loader` probe on small trees: the first drafter (handing names to
LlamaForCausalLM.load_weights), the 0.4.9 loop (`name` else `model.name`), the 0.5.12 loop
(legacy_name_map, N layers, fc from the id count), a renamed MLA drafter in a file of its own,
and a release without one."""

from compat.probes.drafter_replay import land
from compat.probes.sglang.drafter_loader import drafter_loader
from probe_trees import line, write_tree

MODELS = "sglang/srt/models"

BASE_LLAMA = '''
class LlamaForCausalLM(nn.Module):
    def load_weights(self, weights):
        stacked_params_mapping = [(".qkv_proj", ".q_proj", "q")]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if "rotary_emb.inv_freq" in name:
                continue
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                if name.endswith(".bias") and name not in params_dict:
                    continue
                param = params_dict[name]
                break
            else:
                if name in params_dict.keys():
                    param = params_dict[name]
                else:
                    logger.warning(f"Parameter {name} not found in params_dict")


EntryClass = [LlamaForCausalLM]
'''

FIRST = '''
from sglang.srt.models.llama import LlamaForCausalLM


class LlamaModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
        self.midlayer = LlamaDecoderLayer(config, 0, quant_config, prefix)
        if hasattr(config, "target_hidden_size"):
            self.fc = torch.nn.Linear(config.target_hidden_size * 3, config.hidden_size)
        else:
            self.fc = torch.nn.Linear(config.hidden_size * 3, config.hidden_size)
        self.norm = RMSNorm(config.hidden_size)


class LlamaForCausalLMEagle3(LlamaForCausalLM):
    def __init__(self, config, quant_config=None, prefix=""):
        self.config = config
        if self.config.num_hidden_layers != 1:
            raise ValueError("EAGLE3 currently only supports 1 layer")  # marker: one layer
        self.model = LlamaModel(config, quant_config=quant_config)
        if self.config.tie_word_embeddings:
            self.lm_head = self.model.embed_tokens
        else:
            self.lm_head = ParallelLMHead(config.draft_vocab_size, config.hidden_size)

    def load_weights(self, weights):
        for name, loaded_weight in weights:
            if "d2t" in name:
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])  # marker: hot ids
            if "d2t" not in name and "t2d" not in name and "lm_head" not in name:
                new_name = f"model.{name}"
                super().load_weights([(new_name, loaded_weight)])
            elif "lm_head" in name:
                super().load_weights([(name, loaded_weight)])


EntryClass = [LlamaForCausalLMEagle3]
'''

LOOP = '''
        params_dict = dict(self.named_parameters())
        stacked_params_mapping = [(".qkv_proj", ".q_proj", "q")]
        for name, loaded_weight in weights:
            {legacy}
            if "d2t" in name:
                self.hot_token_id = loaded_weight + torch.arange(loaded_weight.shape[0])
                continue
            if "t2d" in name:
                continue
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                param_name = f"model.{name}" if name not in params_dict else name
                if param_name in params_dict:
                    param = params_dict[param_name]
                break
            else:
                param_name = name if name in params_dict else f"model.{name}"
                if param_name in params_dict:
                    param = params_dict[param_name]
'''

OWN_LOOP = '''
class LlamaModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        if hasattr(config, "target_hidden_size"):
            self.hidden_size_in = config.target_hidden_size
        else:
            self.hidden_size_in = config.hidden_size
        self.fc = torch.nn.Linear(self.hidden_size_in * 3, config.hidden_size, bias=getattr(config, "bias", False))
        self.midlayer = LlamaDecoderLayer(config, 0, quant_config, prefix)
        self.norm = RMSNorm(config.hidden_size)


class LlamaForCausalLMEagle3(LlamaForCausalLM):
    def __init__(self, config, quant_config=None, prefix=""):
        if config.num_hidden_layers != 1:
            raise ValueError("EAGLE3 currently only supports 1 layer")
        self.model = LlamaModel(config)
        self.lm_head = ParallelLMHead(config.draft_vocab_size, config.hidden_size)
        self.hot_token_id = None

    def load_weights(self, weights):
''' + LOOP.replace("{legacy}", "pass") + '''

EntryClass = [LlamaForCausalLMEagle3]
'''

MULTI = '''
class LlamaModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        self.hidden_size_in = getattr(config, "target_hidden_size", None) or config.hidden_size
        self.num_aux_hidden_states = getattr(config, "num_aux_hidden_states", None)
        if self.num_aux_hidden_states is None:
            eagle_config = getattr(config, "eagle_config", None) or {}
            layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
            self.num_aux_hidden_states = len(layer_ids) if layer_ids else 3
        self.fc = torch.nn.Linear(self.hidden_size_in * self.num_aux_hidden_states, config.hidden_size)
        use_fc_norm = getattr(config, "fc_norm", None) or getattr(config, "use_aux_norm", False)
        if use_fc_norm:
            self.fc_norm = nn.ModuleList([RMSNorm(self.hidden_size_in) for _ in range(self.num_aux_hidden_states)])
        else:
            self.fc_norm = None
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size)


class LlamaForCausalLMEagle3(LlamaForCausalLM):
    def __init__(self, config, quant_config=None, prefix=""):
        self.model = LlamaModel(config)
        self.lm_head = ParallelLMHead(config.draft_vocab_size, config.hidden_size)

    def load_weights(self, weights):
        legacy_name_map = {"midlayer": "layers.0", "aux_norm_low": "fc_norm.0"}
''' + LOOP.replace("{legacy}", "for legacy, new in legacy_name_map.items():\n                if legacy in name:\n                    name = name.replace(legacy, new)") + '''

EntryClass = [LlamaForCausalLMEagle3]
'''

MLA = '''
def _aux_layer_count(config):
    eagle_config = getattr(config, "eagle_config", None)
    if isinstance(eagle_config, dict):
        layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
    else:
        layer_ids = getattr(eagle_config, "eagle_aux_hidden_state_layer_ids", None)
    if layer_ids is None:
        layer_ids = getattr(config, "eagle_aux_hidden_state_layer_ids", None)
    if layer_ids is None:
        return 3
    return len(layer_ids)


class MlaModel(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        hidden = getattr(config, "target_hidden_size", None) or config.hidden_size
        self.fc = ColumnParallelLinear(hidden * _aux_layer_count(config), config.hidden_size, bias=getattr(config, "bias", False))
        if config.num_hidden_layers != 1:
            raise ValueError("only one layer")
        self.midlayer = MlaLayer(config)
        self.norm = RMSNorm(config.hidden_size)


class Eagle3MyMlaForCausalLM(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        self.model = MlaModel(config)
        self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if name == "d2t" or name.endswith(".d2t"):
                self.hot_token_id = loaded_weight
                continue
            mapped_name = re.sub(r"^layers\\.0\\.", "midlayer.", name)
            if not mapped_name.startswith("lm_head."):
                mapped_name = f"model.{mapped_name}"
            if mapped_name not in params_dict:
                logger.warning("skipping unexpected weight %s", name)  # marker: warn
                continue
            param = params_dict[mapped_name]


EntryClass = [Eagle3MyMlaForCausalLM]
'''


def _tree(tmp_path, files):
    return write_tree(tmp_path, "sglang", files, strip_first_newline=True)


def test_the_first_drafter_hands_prefixed_names_to_the_target_loader(tmp_path):
    tree = _tree(tmp_path, {f"{MODELS}/llama.py": BASE_LLAMA, f"{MODELS}/llama_eagle3.py": FIRST})
    entry = drafter_loader(tree)["drafters"]["LlamaForCausalLMEagle3"]
    assert entry["delegates_to"] == {"class": "LlamaForCausalLM", "location": f"{MODELS}/llama.py:1"}
    assert entry["unknown"] == {**entry["unknown"], "result": "mixed", "stacked": "raise", "other": "warn",
                                "by": "LlamaForCausalLM.load_weights"}
    assert entry["vocab_map"]["d2t"] == {"fate": "consume", "into": "hot_token_id",
                                         "location": f"{MODELS}/llama_eagle3.py:{line(FIRST, 'marker: hot ids') - 1}"}
    assert entry["vocab_map"]["t2d"]["fate"] == "skip"  # neither branch of the if/elif loads it
    assert entry["layers"]["rejects"]["error"] == "EAGLE3 currently only supports 1 layer"
    assert entry["layers"]["rejects"]["location"] == f"{MODELS}/llama_eagle3.py:{line(FIRST, 'marker: one layer')}"
    assert entry["fc"]["bias"] == [{"default": True}]  # torch.nn.Linear's own default
    assert entry["samples"] == {"model_prefixed": "warn", "midlayer": "load", "layers_0": "warn", "layers_1_of_2": "warn"}
    assert land(entry, "midlayer.self_attn.q_proj.weight")["fate"] == "load"
    assert land(entry, "model.midlayer.self_attn.q_proj.weight")["fate"] == "raise"  # KeyError in the stacked branch
    tied = land(entry, "lm_head.weight", {"tie_word_embeddings": True})
    assert tied == {"fate": "load", "name": "lm_head.weight", "module": "model.embed_tokens", "tied": "lm_head"}


def test_the_049_loop_takes_both_spellings_and_drops_unknown_names(tmp_path):
    tree = _tree(tmp_path, {f"{MODELS}/llama_eagle3.py": OWN_LOOP})
    entry = drafter_loader(tree)["drafters"]["LlamaForCausalLMEagle3"]
    assert entry["model_prefix"]["mode"] == "if_missing"
    assert entry["unknown"]["result"] == "skip"
    assert entry["samples"] == {"model_prefixed": "load", "midlayer": "load", "layers_0": "skip", "layers_1_of_2": "skip"}
    assert entry["fc"]["bias"] == [{"key": "bias", "where": "top-level", "use": "value"}, {"default": False}]
    assert land(entry, "fc.bias", {"bias": True})["fate"] == "load"
    assert land(entry, "fc.bias", {})["fate"] == "skip"  # no bias parameter, and this loop drops unknown names
    assert entry["layers"]["multi_layer"] is False


def test_the_0512_loop_maps_midlayer_to_layers_and_builds_n_layers(tmp_path):
    tree = _tree(tmp_path, {f"{MODELS}/llama_eagle3.py": MULTI})
    entry = drafter_loader(tree)["drafters"]["LlamaForCausalLMEagle3"]
    renames = [(s["from"], s["to"]) for s in entry["steps"] if s["op"] == "rename" and not s.get("stacked")]
    assert renames == [("midlayer", "layers.0"), ("aux_norm_low", "fc_norm.0")]
    assert entry["layers"]["multi_layer"] is True and entry["layers"]["rejects"] is None
    assert entry["samples"] == {"model_prefixed": "load", "midlayer": "load", "layers_0": "load", "layers_1_of_2": "load"}
    assert entry["fc"]["aux_count"][0] == {"key": "num_aux_hidden_states", "where": "top-level", "use": "value"}
    fc_norm = next(m for m in entry["modules"] if m["path"] == "model.fc_norm")
    assert [s.get("key") for s in fc_norm["when"][0]["config"]] == ["fc_norm", "use_aux_norm", None]
    assert land(entry, "aux_norm_low.weight", {"use_aux_norm": True})["fate"] == "load"
    assert land(entry, "aux_norm_low.weight", {})["fate"] == "skip"  # not built, and this loop drops what it cannot place


def test_a_renamed_mla_drafter_in_its_own_file(tmp_path):
    tree = _tree(tmp_path, {f"{MODELS}/my_mla_eagle3.py": MLA})
    entry = drafter_loader(tree)["drafters"]["Eagle3MyMlaForCausalLM"]
    assert entry["module"] == "sglang.srt.models.my_mla_eagle3"
    assert entry["fc"]["aux_count"] == [{"key": "eagle_aux_hidden_state_layer_ids", "where": "eagle_config", "use": "len"},
                                        {"key": "eagle_aux_hidden_state_layer_ids", "where": "top-level", "use": "len"},
                                        {"default": 3}]
    assert entry["fc"]["per_aux_width"] == [{"key": "target_hidden_size", "where": "top-level", "use": "value"},
                                            {"key": "hidden_size", "where": "top-level", "use": "value"}]
    assert entry["model_prefix"]["unless"] == [{"startswith": "lm_head."}]
    assert entry["unknown"] == {**entry["unknown"], "result": "warn",
                                "location": f"{MODELS}/my_mla_eagle3.py:{line(MLA, 'param = params_dict[mapped_name]')}"}
    assert entry["layers"]["rejects"]["error"] == "only one layer"
    assert entry["samples"] == {"model_prefixed": "warn", "midlayer": "load", "layers_0": "load", "layers_1_of_2": "warn"}
    assert entry["vocab_map"]["d2t"]["fate"] == "consume"


def test_a_release_without_eagle3_drafters(tmp_path):
    tree = _tree(tmp_path, {f"{MODELS}/llama.py": BASE_LLAMA})
    assert drafter_loader(tree) == {"present": False, "drafters": {},
                                    "reason": "no EAGLE-3 drafter class in an EntryClass of sglang/srt/models"}
