"""compat.probes.model_loader: any registered class read as a loader (small trees written here), and name_eval, which
runs the release's own name helpers on one name (never importing them)."""

import pytest

from compat.probes.drafter_coverage import missing_modules
from compat.probes.drafter_replay import land
from compat.probes.model_loader import class_loader
from compat.probes.name_eval import Unsupported, evaluate, helper_source, refusal
from probe_trees import line, write_tree

REGISTRY = '''
_SPECULATIVE_DECODING_MODELS = {
    "MedusaModel": ("medusa", "Medusa"),
    "MTPModel": ("mtp", "MTP"),
}
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
}
'''

MEDUSA = '''
class ResidualBlock(nn.Module):
    def __init__(self, config):
        self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(config.num_hidden_layers)])


class Medusa(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        config = vllm_config.speculative_config.draft_model_config.hf_config
        self.config = config
        self.blocks = nn.ModuleList([ResidualBlock(config) for _ in range(config.num_heads)])
        self.lm_heads = nn.ModuleList([ParallelLMHead(2, 2) for i in range(config.num_heads)])

    @staticmethod
    def _remap(name):
        parts = name.split(".")
        if len(parts) >= 3 and parts[0].isdigit() and parts[1].isdigit():
            return f"blocks.{parts[0]}.layers.{parts[1]}." + ".".join(parts[3:])
        return name

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        loaded_params = set()
        for name, loaded_weight in weights:
            name = self._remap(name)
            if name in params_dict:
                loaded_params.add(name)
        return loaded_params
'''

MTP = '''
def spec_layer(config, weight_name):
    base = config.num_hidden_layers
    for i in range(config.num_nextn_predict_layers):
        if weight_name.startswith(f"model.layers.{base + i}."):
            return base + i
    return None


class Predictor(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        config = vllm_config.model_config.hf_config
        self.first = config.num_hidden_layers
        self.count = config.num_nextn_predict_layers
        self.layers = torch.nn.ModuleDict({str(i): PredictorLayer(config) for i in range(self.first, self.first + self.count)})


class MTP(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        self.config = vllm_config.model_config.hf_config
        self.model = Predictor(vllm_config=vllm_config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        loaded = set()
        for name, loaded_weight in weights:
            layer = spec_layer(self.config, name)
            if layer is None:
                continue
            param = params_dict[name]
            loaded.add(name)
        for idx in range(self.model.first, self.model.first + self.model.count):
            if idx not in {1}:
                raise ValueError(f"MTP layer {idx} missing")  # marker: raise
        return loaded
'''

LLAMA = '''
class LlamaModel(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        config = vllm_config.model_config.hf_config
        self.embed_tokens = VocabParallelEmbedding(2, 2)
        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers, lambda prefix: None)


class LlamaForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        config = vllm_config.model_config.hf_config
        self.model = self._init_model(vllm_config=vllm_config)
        self.lm_head = ParallelLMHead(2, 2)
        if config.tie_word_embeddings:
            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)

    def _init_model(self, vllm_config):
        return LlamaModel(vllm_config=vllm_config)

    def load_weights(self, weights):
        loader = AutoWeightsLoader(self)
        return loader.load_weights(weights)
'''

UTILS = '''
class AutoWeightsLoader:
    def _load_module(self, base_prefix, module, weights):
        for child_prefix, child_weights in weights:
            msg = f"There is no module or parameter named {child_prefix!r}"
            raise ValueError(msg)
'''


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path, "vllm", {"vllm/model_executor/models/registry.py": REGISTRY,
                                         "vllm/model_executor/models/medusa.py": MEDUSA,
                                         "vllm/model_executor/models/mtp.py": MTP,
                                         "vllm/model_executor/models/llama.py": LLAMA,
                                         "vllm/model_executor/models/utils.py": UTILS}, strip_first_newline=True)


def test_a_helper_the_loop_calls_is_run_on_each_name(tree):
    entry = class_loader(tree, "MedusaModel")
    assert entry["class"] == "Medusa" and entry["returns_loaded"]["returns"] is True
    assert entry["unknown"]["result"] == "skip"  # `if name in params_dict:` collects, the rest is dropped
    config = {"num_heads": 2, "num_hidden_layers": 1}
    assert land(entry, "0.0.linear.weight", config) == {"fate": "load", "name": "blocks.0.layers.0.weight", "module": "blocks"}
    assert land(entry, "odd.weight", config)["fate"] == "skip"


def test_a_selection_helper_and_a_layer_dict_keyed_from_the_config(tree):
    entry = class_loader(tree, "MTPModel")
    config = {"num_hidden_layers": 4, "num_nextn_predict_layers": 1}
    assert land(entry, "model.layers.3.mlp.weight", config)["fate"] == "skip"  # not an MTP layer: the helper gives None
    assert land(entry, "model.layers.4.enorm.weight", config)["module"] == "model.layers"
    fates = {n: land(entry, n, config) for n in ("model.layers.3.mlp.weight",)}
    assert missing_modules(entry, fates, config) == [{"module": "model.layers", "location": "vllm/model_executor/models/mtp.py:14",
                                                      "builds": "PredictorLayer", "indices": [4]}]
    assert entry["completeness"]["location"] == f"vllm/model_executor/models/mtp.py:{line(MTP, 'marker: raise')}"


def test_a_whole_causal_lm_ties_its_head_to_the_embedding_when_the_config_says_so(tree):
    entry = class_loader(tree, "LlamaForCausalLM")
    modules = {m["path"]: m for m in entry["modules"]}
    assert modules["model.layers"]["kind"] == "list" and modules["lm_head"]["tied_to"] == "model.embed_tokens"
    names = ["model.embed_tokens.weight", "model.layers.0.q.weight"]
    for tied, lacking in ((True, []), (False, ["lm_head"])):
        config = {"num_hidden_layers": 1, "tie_word_embeddings": tied}
        fates = {n: land(entry, n, config) for n in names}
        assert [m["module"] for m in missing_modules(entry, fates, config)] == lacking


def test_an_unregistered_name_says_so(tree):
    assert class_loader(tree, "Nope")["error"] == "no class is registered under Nope in this release"


def test_name_eval_runs_string_surgery_and_config_reads_only():
    import ast

    func = ast.parse("def f(config, name):\n    if name.startswith(f'x.{config.n}.'):\n        return name.upper()\n"
                     "    return None").body[0]
    helper = helper_source(func)
    assert evaluate(helper, {"name": "x.3.w"}, {"n": 3}) == "X.3.W"
    assert evaluate(helper, {"name": "x.2.w"}, {"n": 3}) is None
    with pytest.raises(Unsupported, match="config has no n"):  # a config without the key: unknown, never a guess
        evaluate(helper, {"name": "x.3.w"}, {})
    engine = helper_source(ast.parse("def g(name):\n    return torch.cat(name)").body[0])
    with pytest.raises(Unsupported, match="unknown name torch"):
        evaluate(engine, {"name": "a"}, {})


def test_name_eval_runs_a_layer_id_helper_with_re():
    import ast

    # SGLang's models/llama.py get_layer_id, which LlamaForCausalLM.load_weights calls on every name (0.4.x-0.5.x)
    source = ("def get_layer_id(weight_name):\n    match = re.search(r'layers\\.(\\d+)\\.', weight_name)\n"
              "    if match:\n        return int(match.group(1))\n    return None")
    helper = helper_source(ast.parse(source).body[0])
    assert evaluate(helper, {"weight_name": "model.layers.12.mlp.w"}, {}) == 12
    assert evaluate(helper, {"weight_name": "model.midlayer.mlp.w"}, {}) is None
    compiled = helper_source(ast.parse("def h(name):\n    return re.compile('x').search(name)").body[0])
    with pytest.raises(Unsupported, match="call re.compile"):  # only the module's functions on strings are run
        evaluate(compiled, {"name": "x"}, {})


def test_refusal_runs_a_prologue_statement_by_statement():
    source = ("if hasattr(self.config, 'n'):\n    n = self.config.n\n    assert n == self.config.layers, 'only one'\n"
              "x = engine_call()\nassert x\n")
    assert refusal(source, {"n": 1, "layers": 61}, 10) == ("only one", 12)
    assert refusal(source, {"n": 1, "layers": 1}, 10) is None  # `x` is unknown: its assert is passed over
