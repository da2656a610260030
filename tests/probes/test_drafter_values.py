"""probes/drafter_values.py: fallback chains and config reads followed through code as written."""

import ast

from compat.probes.drafter_code import ModuleCode, methods
from compat.probes.drafter_config_reads import config_reads
from compat.probes.drafter_values import Scope, resolve, self_attribute, sources
from probe_trees import line, write_tree

MODULE = '''
def _aux_count(config):
    eagle_config = getattr(config, "eagle_config", None)
    if isinstance(eagle_config, dict):
        ids = eagle_config.get("ids")
    else:
        ids = getattr(eagle_config, "ids", None)
    if ids is None:
        ids = getattr(config, "ids", None)
    if ids is None:
        return 3
    return len(ids)


class Inner:
    def __init__(self, config):
        self.config = config
        count = getattr(config, "num_aux", None)
        if count is None:
            nested = getattr(config, "eagle_config", None) or {}
            layer_ids = nested.get("layer_ids")
            count = len(layer_ids) if layer_ids else 3
        if hasattr(config, "target_hidden_size"):
            per_aux = config.target_hidden_size
        else:
            per_aux = config.hidden_size
        self.width = per_aux * count
        self.helper_count = _aux_count(config)
        self.truthy = getattr(config, "target_hidden_size", None) or config.hidden_size
        self.norm = bool(nested.get("norm", getattr(config, "norm", False)))  # marker: norm

    def later(self):
        return self.width
'''


def _scope(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/m.py": MODULE}, strip_first_newline=True)
    code = ModuleCode(tree, "vllm/m.py")
    cls = code.classes["Inner"]
    return code, cls


def _attr(code, cls, name, method="__init__"):
    func = methods(cls)[method]
    return sources(self_attribute(Scope(code, func, cls), name, 10 ** 9))


def test_none_fallback_and_hasattr_branches_multiply(tmp_path):
    code, cls = _scope(tmp_path)
    scope = Scope(code, methods(cls)["__init__"], cls)
    width = self_attribute(scope, "width", 10 ** 9)
    assert width[0] == "mul"
    per_aux, count = (sources(f) for f in width[1])
    assert per_aux == [{"key": "target_hidden_size", "where": "top-level", "use": "value"},
                       {"key": "hidden_size", "where": "top-level", "use": "value"}]
    assert count == [{"key": "num_aux", "where": "top-level", "use": "value"},
                     {"key": "layer_ids", "where": "eagle_config", "use": "len"}, {"default": 3}]


def test_a_helper_function_with_early_returns(tmp_path):
    code, cls = _scope(tmp_path)
    assert _attr(code, cls, "helper_count") == [
        {"key": "ids", "where": "eagle_config", "use": "len"},  # dict .get and getattr on the nested config: one key
        {"key": "ids", "where": "top-level", "use": "len"},
        {"default": 3},
    ]


def test_or_drops_the_none_default_and_self_attributes_resolve_from_other_methods(tmp_path):
    code, cls = _scope(tmp_path)
    assert _attr(code, cls, "truthy") == [{"key": "target_hidden_size", "where": "top-level", "use": "value"},
                                         {"key": "hidden_size", "where": "top-level", "use": "value"}]
    # read in another method, `self.width` is what __init__ assigned
    later = methods(cls)["later"]
    value = resolve(later.body[0].value, Scope(code, later, cls))
    init = methods(cls)["__init__"]
    assert value == self_attribute(Scope(code, init, cls), "width", 10 ** 9) and value[0] == "mul"


def test_a_nested_key_with_a_top_level_default(tmp_path):
    code, cls = _scope(tmp_path)
    assert _attr(code, cls, "norm") == [{"key": "norm", "where": "eagle_config", "use": "value"},
                                        {"key": "norm", "where": "top-level", "use": "value"}, {"default": False}]


def test_unresolvable_expressions_say_what_they_are(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/m.py": "def f(x):\n    y = x.call() + 2\n    return y\n"})
    code = ModuleCode(tree, "vllm/m.py")
    func = code.functions["f"]
    assert resolve(ast.parse("y").body[0].value, Scope(code, func), 3) == ("unknown", "x.call() + 2")


def test_config_reads_lists_each_key_with_how_it_is_read(tmp_path):
    code, _ = _scope(tmp_path)
    reads = {(r["key"], r["where"]): r for r in config_reads(code)}
    assert reads[("num_aux", "top-level")]["access"] == ["getattr"]
    assert reads[("norm", "top-level")]["default"] is False
    assert reads[("norm", "eagle_config")]["access"] == ["get"]
    assert reads[("norm", "eagle_config")]["location"] == f"vllm/m.py:{line(MODULE, 'marker: norm')}"
    assert reads[("target_hidden_size", "top-level")]["access"] == ["attribute", "getattr", "hasattr"]
    assert reads[("hidden_size", "top-level")]["access"] == ["attribute"]
    assert reads[("ids", "eagle_config")]["access"] == ["get", "getattr"]
    assert ("layer_ids", "eagle_config") in reads and ("ids", "top-level") in reads
