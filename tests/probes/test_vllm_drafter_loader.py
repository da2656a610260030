"""The vLLM `drafter_loader` probe on small trees: the 0.10-style hand loop, a renamed and moved
drafter on AutoWeightsLoader + WeightsMapper (the 0.25+ shape), the MLA loop that skips unknown
names outside its stacked branch, and a release without EAGLE-3 drafters."""

from compat.probes.drafter_replay import config_value, fc_input_width, holds, land
from compat.probes.vllm.drafter_loader import drafter_loader
from probe_trees import line, write_tree

REGISTRY = "vllm/model_executor/models/registry.py"
UTILS = "vllm/model_executor/models/utils.py"

UTILS_SRC = '''
class AutoWeightsLoader:
    def __init__(self, module, skip_prefixes=None, skip_substrs=None):
        self.module = module
        self.ignore_unexpected_suffixes = []

    def _load_module(self, base_prefix, module, weights):
        for child_prefix, child_weights in weights:
            msg = f"There is no module or parameter named {child_prefix!r}"
            raise ValueError(msg)

    def load_weights(self, weights, *, mapper=None):
        self.ignore_unexpected_suffixes.append(".bias")
'''

OLD_LLAMA = '''
class LlamaModel(nn.Module):
    def __init__(self, *, vllm_config, start_layer_id=0, prefix=""):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.embed_tokens = VocabParallelEmbedding(self.config.vocab_size, self.config.hidden_size)
        self.layers = nn.ModuleList([LlamaDecoderLayer(self.config)])
        if hasattr(self.config, "target_hidden_size"):
            self.fc = torch.nn.Linear(self.config.target_hidden_size * 3, self.config.hidden_size, bias=False)
        else:
            self.fc = torch.nn.Linear(self.config.hidden_size * 3, self.config.hidden_size, bias=False)
        self.norm = RMSNorm(self.config.hidden_size, eps=self.config.rms_norm_eps)

    def load_weights(self, weights):
        stacked_params_mapping = [
            (".qkv_proj", ".q_proj", "q"),
            (".gate_up_proj", ".gate_proj", 0),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            if "midlayer." in name:
                name = name.replace("midlayer.", "layers.0.")
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                param = params_dict[name]  # marker: stacked lookup
                break
            else:
                param = params_dict[name]


class Eagle3LlamaForCausalLM(LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix=""):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.model = LlamaModel(vllm_config=vllm_config, prefix="model")
        self.lm_head = ParallelLMHead(self.config.draft_vocab_size, self.config.hidden_size)
        self.draft_id_to_target_id = nn.Parameter(torch.zeros(self.config.draft_vocab_size))  # marker: d2t param

    def load_weights(self, weights):
        model_weights = {}
        includes_draft_id_mapping = False
        for name, loaded_weight in weights:
            if "t2d" in name:  # marker: t2d
                continue
            if "d2t" in name:
                name = name.replace("d2t", "draft_id_to_target_id")
                includes_draft_id_mapping = True
            elif "lm_head" not in name:
                name = "model." + name  # marker: prefix
            model_weights[name] = loaded_weight
        skip_substrs = []
        if not includes_draft_id_mapping:
            skip_substrs.append("draft_id_to_target_id")
        loader = AutoWeightsLoader(self, skip_prefixes=None, skip_substrs=skip_substrs)
        loader.load_weights(model_weights.items())
'''

# Renamed classes, another file, the 0.25+ loader, conditional modules, an alias registered too.
NEW_FOO = '''
class FooInner(nn.Module):
    hf_to_vllm_mapper = WeightsMapper(
        orig_to_new_substr={"midlayer.": "layers.0."},
        orig_to_new_stacked={".q_proj": (".qkv_proj", "q")},
    )

    def __init__(self, *, vllm_config, start_layer_id=0, prefix=""):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        eagle_config = getattr(self.config, "eagle_config", None) or {}
        self.norm_before_fc = bool(eagle_config.get("norm_before_fc", getattr(self.config, "norm_before_fc", False)))
        self.layers = nn.ModuleList([FooLayer(i) for i in range(self.config.num_hidden_layers)])
        self.num_aux_hidden_states = getattr(self.config, "num_aux_hidden_states", None)
        if self.num_aux_hidden_states is None:
            layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
            self.num_aux_hidden_states = len(layer_ids) if layer_ids else 3
        target_hidden_size = getattr(self.config, "target_hidden_size", self.config.hidden_size)
        self.fc_input_size = target_hidden_size * self.num_aux_hidden_states
        if self.norm_before_fc:
            self.input_norm = RMSNorm(self.fc_input_size)  # marker: input_norm
        else:
            self.input_norm = None
        self.fc = ReplicatedLinear(input_size=self.fc_input_size, output_size=self.config.hidden_size, bias=False)
        self.norm = RMSNorm(self.config.hidden_size)

    def load_weights(self, weights):
        loader = AutoWeightsLoader(self)
        return loader.load_weights(weights, mapper=self.hf_to_vllm_mapper)


class FooDrafter(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        if getattr(self.config, "draft_vocab_size", None) is None:
            self.config.draft_vocab_size = self.config.vocab_size
        self.model = FooInner(vllm_config=vllm_config)
        self.lm_head = ParallelLMHead(self.config.draft_vocab_size, self.config.hidden_size)
        target_vocab_size = vllm_config.model_config.get_vocab_size()
        if self.config.draft_vocab_size != target_vocab_size:
            self.draft_id_to_target_id = nn.Parameter(torch.zeros(self.config.draft_vocab_size))
        else:
            self.draft_id_to_target_id = None

    def load_weights(self, weights):
        model_weights = {}
        for name, loaded_weight in weights:
            if "t2d" in name:
                continue
            if "d2t" in name:
                name = name.replace("d2t", "draft_id_to_target_id")
            elif "lm_head" not in name:
                name = "model." + name
            model_weights[name] = loaded_weight
        orig_to_new_substr = {}
        if not self.model.norm_before_fc:
            orig_to_new_substr["input_norm."] = None  # marker: conditional skip
        loader = AutoWeightsLoader(self)
        loader.load_weights(model_weights.items(), mapper=WeightsMapper(orig_to_new_substr=orig_to_new_substr))


FooDrafterV3 = FooDrafter
'''

MLA = '''
class MlaInner(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.layers = nn.ModuleList([MlaLayer(i) for i in range(self.config.num_hidden_layers)])
        self.fc = ReplicatedLinear(input_size=self.config.hidden_size * 3, output_size=self.config.hidden_size)

    def load_weights(self, weights):
        stacked_params_mapping = [(".gate_up_proj", ".gate_proj", 0)]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name not in name:
                    continue
                name = name.replace(weight_name, param_name)
                param = params_dict[name]
                break
            else:
                if name not in params_dict:
                    continue
                param = params_dict[name]


class Eagle3MlaForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.model = MlaInner(vllm_config=vllm_config)

    def load_weights(self, weights):
        for name, loaded_weight in weights:
            name = "model." + name
        AutoWeightsLoader(self).load_weights(weights)
'''


def _registry(entries: dict[str, tuple[str, str]]) -> str:
    rows = "\n".join(f'    "{arch}": ("{module}", "{cls}"),' for arch, (module, cls) in entries.items())
    return f"_SPECULATIVE_DECODING_MODELS = {{\n{rows}\n}}\n"


def test_old_llama_drafter_prefixes_names_and_raises_on_unknown_ones(tmp_path):
    tree = write_tree(tmp_path, "vllm", {
        REGISTRY: _registry({"Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
                             "LlamaForCausalLMEagle3": ("llama_eagle3", "Eagle3LlamaForCausalLM")}),
        "vllm/model_executor/models/llama_eagle3.py": OLD_LLAMA, UTILS: UTILS_SRC,
    }, strip_first_newline=True)
    fact = drafter_loader(tree)
    entry = fact["drafters"]["Eagle3LlamaForCausalLM"]
    path = "vllm/model_executor/models/llama_eagle3.py"
    assert entry["architectures"] == ["Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3"]
    assert entry["model_prefix"] == {"mode": "always", "unless": [{"contains": "lm_head"}, {"contains": "d2t"}],
                                     "location": f"{path}:{line(OLD_LLAMA, 'marker: prefix')}"}
    assert entry["unknown"]["result"] == "raise" and entry["unknown"]["by"] == "LlamaModel.load_weights"
    assert entry["unknown"]["location"] == f"{path}:{line(OLD_LLAMA, 'marker: stacked lookup')}"
    assert entry["vocab_map"]["t2d"] == {"fate": "skip", "location": f"{path}:{line(OLD_LLAMA, 'marker: t2d')}"}
    d2t = entry["vocab_map"]["d2t"]
    assert (d2t["to"], d2t["parameter_when"], d2t["only_when_vocab_differs"]) == ("draft_id_to_target_id", None, False)
    assert d2t["parameter_location"] == f"{path}:{line(OLD_LLAMA, 'marker: d2t param')}"
    assert entry["fc"]["fixed_aux_count"] == 3 and entry["fc"]["bias"] == [{"default": False}]
    assert [s["key"] for s in entry["fc"]["per_aux_width"]] == ["target_hidden_size", "hidden_size"]
    assert entry["layers"]["count"] == [{"default": 1}] and entry["layers"]["multi_layer"] is False
    assert entry["samples"] == {"model_prefixed": "raise", "midlayer": "load", "layers_0": "load", "layers_1_of_2": "raise"}
    assert fact["auto_weights_loader"]["result"] == "raise"
    assert fact["auto_weights_loader"]["ignored_suffixes"] == [".bias"]
    reads = {r["key"]: r for r in entry["config_reads"]}
    assert reads["draft_vocab_size"]["read_without_default"] is True
    assert reads["target_hidden_size"]["read_without_default"] is False


def test_a_renamed_moved_drafter_on_the_auto_loader(tmp_path):
    tree = write_tree(tmp_path, "vllm", {
        REGISTRY: _registry({"Eagle3FooForCausalLM": ("vllm.models.foo_eagle3", "FooDrafter"),
                             "Eagle3FooV3ForCausalLM": ("vllm.models.foo_eagle3", "FooDrafterV3")}),
        "vllm/models/foo_eagle3.py": NEW_FOO, UTILS: UTILS_SRC,
    }, strip_first_newline=True)
    drafters = drafter_loader(tree)["drafters"]
    assert set(drafters) == {"FooDrafter"}  # FooDrafterV3 = FooDrafter: one class, two registered names
    entry = drafters["FooDrafter"]
    assert entry["architectures"] == ["Eagle3FooForCausalLM", "Eagle3FooV3ForCausalLM"]
    assert entry["aliases"] == ["FooDrafterV3"]
    assert entry["inner_class"] == "FooInner"
    assert entry["unknown"]["by"] == "AutoWeightsLoader" and entry["unknown"]["result"] == "raise"
    assert entry["fc"]["aux_count"] == [{"key": "num_aux_hidden_states", "where": "top-level", "use": "value"},
                                        {"key": "eagle_aux_hidden_state_layer_ids", "where": "eagle_config", "use": "len"},
                                        {"default": 3}]
    assert entry["fc"]["fixed_aux_count"] is None
    assert entry["layers"]["multi_layer"] is True
    assert entry["vocab_map"]["d2t"]["only_when_vocab_differs"] is True
    skips = [s for s in entry["steps"] if s["op"] == "skip" and s["match"] == {"contains": "input_norm."}]
    assert skips[0]["location"] == f"vllm/models/foo_eagle3.py:{line(NEW_FOO, 'marker: conditional skip')}"
    assert skips[0]["when"][0]["config"][-1] == {"default": False} and skips[0]["when"][0]["truthy"] is False
    # replayed on one drafter: the modules, renames and conditions decide each name
    names = {"d2t", "midlayer.fc.weight"}
    on = {"norm_before_fc": True, "num_hidden_layers": 1, "vocab_size": 100, "draft_vocab_size": 100}
    assert land(entry, "input_norm.weight", on)["fate"] == "load"
    assert land(entry, "input_norm.weight", {**on, "norm_before_fc": False})["fate"] == "skip"
    assert land(entry, "d2t", on, names, target_vocab=100)["fate"] == "raise"  # no draft_id_to_target_id
    assert land(entry, "d2t", on, names, target_vocab=200)["fate"] == "load"
    assert land(entry, "d2t", on, names)["fate"] == "depends"  # target vocab unknown
    assert land(entry, "layers.1.mlp.weight", on)["fate"] == "raise"
    assert land(entry, "fc.bias", on)["fate"] == "skip"  # the loader's ignored_suffixes
    assert land(entry, "midlayer.mlp.weight", on) == {"fate": "load", "name": "model.layers.0.mlp.weight", "module": "model.layers"}


def test_the_mla_loop_skips_unknown_names_outside_its_stacked_branch(tmp_path):
    tree = write_tree(tmp_path, "vllm", {
        REGISTRY: _registry({"Eagle3MlaForCausalLM": ("mla_eagle3", "Eagle3MlaForCausalLM")}),
        "vllm/model_executor/models/mla_eagle3.py": MLA,
    })
    entry = drafter_loader(tree)["drafters"]["Eagle3MlaForCausalLM"]
    assert entry["unknown"] == {**entry["unknown"], "result": "mixed", "stacked": "raise", "other": "skip"}
    assert land(entry, "model.fc.weight")["fate"] == "skip"  # model.model.fc.weight: no such parameter
    assert land(entry, "layers.0.mlp.gate_proj.weight", {"num_hidden_layers": 1})["fate"] == "load"
    assert land(entry, "layers.3.mlp.gate_proj.weight", {"num_hidden_layers": 1})["fate"] == "raise"  # stacked branch


def test_a_release_without_eagle3_drafters(tmp_path):
    tree = write_tree(tmp_path, "vllm", {REGISTRY: _registry({"EagleLlamaForCausalLM": ("llama_eagle", "EagleLlamaForCausalLM")})})
    fact = drafter_loader(tree)
    assert fact == {"present": False, "reason": "no EAGLE-3 drafter in _SPECULATIVE_DECODING_MODELS", "drafters": {}}


def test_conditions_and_sources_evaluate_against_a_config():
    chain = [{"key": "norm_before_fc", "where": "eagle_config", "use": "value"},
             {"key": "norm_before_fc", "where": "top-level", "use": "value"}, {"default": False}]
    assert config_value(chain, {"eagle_config": {"norm_before_fc": True}}) is True
    assert config_value(chain, {"norm_before_fc": True}) is True
    assert config_value(chain, {}) is False
    ids = [{"key": "ids", "where": "eagle_config", "use": "len"}, {"default": 3}]
    assert config_value(ids, {"eagle_config": {"ids": [1, 2, 3, 4]}}) == 4
    when = [{"test": "x", "config": chain, "truthy": True}, {"test": "y"}]
    assert holds(when, {"norm_before_fc": False}) is False
    assert holds(when, {"norm_before_fc": True}) is None  # the second clause is not a config switch
    assert holds([{"test": "not seen", "unless_checkpoint_has": {"contains": "d2t"}}], {}, {"d2t"}) is False


def test_fc_width_under_each_release_rule(tmp_path):
    old = write_tree(tmp_path / "old", "vllm", {
        REGISTRY: _registry({"Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM")}),
        "vllm/model_executor/models/llama_eagle3.py": OLD_LLAMA,
    })
    new = write_tree(tmp_path / "new", "vllm", {
        REGISTRY: _registry({"Eagle3FooForCausalLM": ("vllm.models.foo_eagle3", "FooDrafter")}),
        "vllm/models/foo_eagle3.py": NEW_FOO,
    })
    old_entry = drafter_loader(old)["drafters"]["Eagle3LlamaForCausalLM"]
    new_entry = drafter_loader(new)["drafters"]["FooDrafter"]
    four_ids = {"hidden_size": 1024, "target_hidden_size": 7168, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58, 60]}}
    top_level_only = {"hidden_size": 1024, "target_hidden_size": 7168, "eagle_aux_hidden_state_layer_ids": [2, 30, 58, 60]}
    assert fc_input_width(old_entry, four_ids) == {"width": 21504, "per_aux": 7168, "aux_count": 3, "fixed_aux_count": 3}
    assert fc_input_width(new_entry, four_ids)["width"] == 4 * 7168
    assert fc_input_width(new_entry, top_level_only)["width"] == 3 * 7168  # top-level ids do not size this fc
    assert fc_input_width(new_entry, {"hidden_size": 1024, "num_aux_hidden_states": 2})["width"] == 2048
