"""An expression of the release's code evaluated against values (compat/guards/expressions.py): three-valued, the
unknown carrying what it comes from, objects read attribute by attribute."""

from __future__ import annotations

import pytest

from compat.guards.expressions import Evaluator, parse
from compat.guards.values import Obj, Unknown, join


class Names(Evaluator):
    def __init__(self, names, **kw):
        super().__init__(**kw)
        self.names = names

    def name(self, name, node):
        return self.names.get(name, Unknown(name))


def value(text, **names):
    return Names(names).value(parse(text))


def truth(text, **names):
    return Names(names).truth(parse(text))


@pytest.mark.parametrize("text, expected", [
    ("x is not None and y > 2", False),   # a false part decides an `and`, whatever y is
    ("x is None or y > 2", True),  # a true part decides an `or`
    ("not (x in ('a', 'b'))", True),
    ("len(items) == 3 and all(i > 0 for i in items)", True),
    ("any(m in kind for m in ['llama', 'qwen'])", True),
])
def test_what_the_known_part_decides(text, expected):
    assert truth(text, x=None, items=[1, 2, 3], kind="qwen3") is expected


def test_an_unknown_part_that_could_decide_is_unknown_and_says_which():
    got = truth("x is None and y > 2", x=None)
    assert isinstance(got, Unknown) and "y" in got.why


def test_or_is_a_value_as_in_python():
    assert value("w or m", w="", m="/models/t") == "/models/t"
    assert isinstance(value("w or m", w=Unknown("w"), m="x"), Unknown)


def test_a_config_json_object_answers_getattr_and_hasattr():
    cfg = Obj("hf_config", {"model_type": "llama", "vocab_size": 512}, closed=True)
    assert value("getattr(c, 'n_predict', None)", c=cfg) is None  # a key the file lacks is absent
    assert value("hasattr(c, 'vocab_size')", c=cfg) is True
    assert isinstance(value("c.n_predict", c=cfg), Unknown)  # read without a default: a class default may answer
    opened = Obj("model_config", {"model": "m"})
    assert isinstance(value("getattr(o, 'n_predict', None)", o=opened), Unknown)


def test_methods_of_strings_dicts_and_lists():
    assert value("m.lower().startswith('eagle')", m="EAGLE3-x") is True
    assert value("{k.replace('-', '_'): v for k, v in d.items()}", d={"a-b": 1}) == {"a_b": 1}
    assert value("f'{n=} and {s!r}'", n=3, s="x") == "n=3 and 'x'"


def test_paths_that_met_keep_only_what_they_agree_on():
    a = Obj("cfg", {"method": "mtp", "model": "m"})
    b = Obj("cfg", {"method": "eagle", "model": "m"})
    met = join(a, b, "cfg")
    assert met.attrs["model"] == "m" and isinstance(met.attrs["method"], Unknown)


def test_explain_reads_an_and_as_the_engine_raised():
    """explain's guards: the engine raised, so a part it cannot evaluate is taken as it was then."""
    evaluator = Names({"method": "eagle3"}, and_as_raised=True)
    assert evaluator.value(parse("method == 'eagle3' and target.model_type not in listed")) is True
    assert evaluator.value(parse("method == 'eagle' and target.model_type not in listed")) is False
