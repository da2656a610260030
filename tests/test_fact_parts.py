"""A probe report kept split by fact (compat/fact_parts.py) and read lazily (compat/core/lazy_json.py): a reader decodes
only the facts it reads, each once per process; the entry is still one JSON document, written atomically, and a
corrupt one is ignored and rewritten, however it was damaged and whenever the damage is found."""

from __future__ import annotations

import copy
import json
import pickle
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "patches"))

from patch_trees import write_mini_vllm  # noqa: E402

from compat import fact_parts, facts, report  # noqa: E402
from compat.core.lazy_json import Deferred, LazyDict, dumps_indented  # noqa: E402
from compat.core.tree import EngineTree, SourceInfo  # noqa: E402
from compat.report import build_report  # noqa: E402

VALUES = {"small": {"a": [1, 2, {"b": None}]}, "text": "é\n\"quoted\"", "empty": {}, "none": [],
          "big": {"sites": [{"message": f"error {n}", "location": f"vllm/x.py:{n}"} for n in range(3000)]}}


@pytest.fixture(autouse=True)
def isolated_facts(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPAT_FACTS_DIR", str(tmp_path / "facts"))
    monkeypatch.delenv("COMPAT_FACTS_CACHE", raising=False)
    monkeypatch.setattr(facts, "RACY_SECONDS", 0)
    fact_parts.forget_all()
    yield
    fact_parts.forget_all()


def released(folder: Path, version: str = "0.11.0") -> EngineTree:
    write_mini_vllm(folder, version)
    (folder / "release.json").write_text(json.dumps({"engine": "vllm", "version": version, "sha256": "ab" * 32}))
    return EngineTree("vllm", folder, version, SourceInfo("released", str(folder), {"cached": True}))


def test_an_entry_is_one_json_document_whose_first_line_indexes_its_parts(tmp_path):
    text, texts = fact_parts.encode("k" * 32, "0.2.0", VALUES, {"probe_errors": ["x"]})
    whole = json.loads(text)
    assert whole["parts"] == VALUES and whole["meta"] == {"probe_errors": ["x"]} and whole["size"] == len(text.encode())
    path = tmp_path / "entry.json"
    path.write_text(text)
    entry = fact_parts.read(str(path), "k" * 32)
    assert entry is not None and entry.names == list(VALUES)
    for name, value in VALUES.items():
        assert json.loads(entry.text(name)) == value and entry.text(name).decode() == texts[name]
        assert entry.value(name) == value
    assert fact_parts.read(str(path), "another key") is None


def test_only_the_parts_read_are_decoded_each_once(tmp_path):
    path = tmp_path / "entry.json"
    path.write_text(fact_parts.encode("k", "0", VALUES, {})[0])
    fact_parts.DECODES.clear()
    entry = fact_parts.known_entry(str(path), "k")
    assert entry is fact_parts.known_entry(str(path), "k")  # read once per process
    entry.value("small"), entry.value("small"), entry.value("text")
    assert fact_parts.DECODES == {(str(path), ""): 1, (str(path), "small"): 1, (str(path), "text"): 1}


@pytest.mark.parametrize("damage", ["cut", "grown", "first line", "inside a small part", "inside the big part"])
def test_a_damaged_entry_is_ignored_and_rewritten_whenever_the_damage_shows(tmp_path, monkeypatch, damage):
    monkeypatch.setattr(fact_parts, "SMALL", 400)  # the mini tree's larger facts are read apart, as error_sites is
    tree = released(tmp_path / "rel")
    first = build_report(tree)
    plain = {k: v for k, v in first.items() if k != "probe_seconds"}
    path = facts.slot(tree).path
    data = path.read_bytes()
    big = max(fact_parts.read(str(path), facts.slot(tree).key).index.items(), key=lambda item: item[1][1])
    fact_parts.forget_all()  # another process: nothing read yet
    if damage == "cut":
        path.write_bytes(data[:-10])
    elif damage == "grown":
        path.write_bytes(data + b" ")
    elif damage == "first line":
        path.write_bytes(b"[" + data[1:])
    else:  # the same size, a part no longer JSON: found only when that part is read
        name = "version_in_source" if damage == "inside a small part" else big[0]
        offset = fact_parts.read(str(path), facts.slot(tree).key).index[name][0]
        path.write_bytes(data[:offset] + b"?" + data[offset + 1:])
    again = build_report(released(tmp_path / "rel"))
    assert {k: v for k, v in again.items() if k != "probe_seconds"} == plain
    assert path.read_bytes() == data  # rewritten whole


def test_an_entry_replaced_after_its_index_was_read_is_read_again(tmp_path, monkeypatch):
    monkeypatch.setattr(fact_parts, "SMALL", 400)
    first = build_report(released(tmp_path / "rel"))
    fact_parts.forget_all()
    lazy = build_report(released(tmp_path / "rel"))  # its index read, its large facts not yet
    path = facts.slot(released(tmp_path / "rel")).path
    entry = fact_parts.known_entry(str(path), facts.slot(released(tmp_path / "rel")).key)
    large = next(name for name, (_, length) in entry.index.items() if length > 400)
    copied = path.with_name("copy")
    copied.write_bytes(path.read_bytes())
    copied.replace(path)  # another process rewrote it: another file at the same path
    assert lazy[large] == first[large]


def test_the_report_is_a_dict_to_every_reader(tmp_path):
    tree = released(tmp_path / "rel")
    first = build_report(tree)
    second = build_report(released(tmp_path / "rel"))
    assert isinstance(second, dict) and list(second) == list(first)
    first["probe_seconds"] = second["probe_seconds"]
    plain = json.loads(json.dumps(second))
    assert plain == second == first and dict(second) == plain and {**second} == plain
    assert copy.deepcopy(second) == plain and pickle.loads(pickle.dumps(second)) == plain
    assert type(copy.copy(second)) is dict


def test_a_document_prints_its_deferred_values_as_json_dumps_would():
    values = copy.deepcopy(VALUES)
    lazy = LazyDict(schema="x/1")
    for name, value in values.items():
        text = fact_parts.part_text(value)
        dict.__setitem__(lazy, name, Deferred(lambda value=value: value, lambda text=text: text))
    lazy["small"]["a"].append(3)  # a value decoded is encoded again: it may have changed
    assert dumps_indented(lazy) == json.dumps({"schema": "x/1", **values}, indent=2)
    assert '3\n    ]' in dumps_indented(lazy)


def test_a_released_tree_read_twice_is_decoded_once(tmp_path, monkeypatch):
    build_report(released(tmp_path / "rel"))
    fact_parts.forget_all()
    fact_parts.DECODES.clear()
    monkeypatch.setattr(report, "_probe", lambda tree: pytest.fail("probed again"))
    for _ in range(3):
        rep = build_report(released(tmp_path / "rel"))
        rep["eagle3_whitelist"], rep.get("version_in_source")
    assert set(fact_parts.DECODES.values()) == {1}
    assert {part for _, part in fact_parts.DECODES} == {"", "eagle3_whitelist", "version_in_source"}
