"""compat/core/registry.py: the one loader of the rule folders, and the contract each folder declares.

The folders here are real packages written into tmp_path and put on sys.path; nothing is stubbed.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from compat.core.registry import FUNCTION, REQUIRED, Contract, ContractError, Field, Folder

CONTRACT = Contract("widget", (
    Field("NAME", str, doc="what the user types"),
    Field("ORDER", int, default=50, doc="where it is listed"),
    Field("hook", FUNCTION, default=None),
    Field("run", FUNCTION),
), key="NAME")


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A new package `widgets_<n>` in tmp_path; returns (name, folder, write(module, source))."""
    name = f"widgets_{abs(hash(tmp_path)) % 10 ** 8}"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(module: str, source: str, where: Path = folder) -> None:
        (where / f"{module}.py").write_text(textwrap.dedent(source))

    yield name, folder, write
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def test_rules_are_read_with_their_defaults_and_helpers_are_left_out(package):
    name, _, write = package
    write("alpha", "NAME = 'alpha'\ndef run(): return 1\n")
    write("beta", "NAME = 'beta'\nORDER = 10\ndef run(): return 2\ndef hook(): pass\n")
    write("_shared", "raise AssertionError('a helper module is not a rule: never imported by the folder')\n")
    rules = Folder(name, CONTRACT).rules()
    assert [r.name for r in rules] == ["alpha", "beta"]
    assert rules[0].values["ORDER"] == 50 and rules[0]["hook"] is None  # declared defaults, filled in
    assert rules[1]["ORDER"] == 10 and callable(rules[1]["hook"])
    assert not hasattr(rules[0].module, "ORDER")  # the module is left as written


def test_a_missing_field_names_the_module_and_the_field(package):
    name, _, write = package
    write("alpha", "NAME = 'alpha'\n")
    with pytest.raises(ContractError, match=f"^widget {name}.alpha: run is missing: a widget must define it") as err:
        Folder(name, CONTRACT).rules()
    assert err.value.owner == f"{name}.alpha" and err.value.field == "run"
    assert str(err.value) == f"widget {name}.alpha: run is missing: a widget must define it (a function)"


def test_a_field_of_the_wrong_type_is_refused(package):
    name, _, write = package
    write("alpha", "NAME = 'alpha'\nORDER = 'first'\ndef run(): pass\n")
    with pytest.raises(ContractError, match=r"widget .*\.alpha: ORDER is 'first' \(str\): a widget's ORDER is int"):
        Folder(name, CONTRACT).rules()


def test_an_optional_field_may_say_its_default(package):
    name, _, write = package
    write("alpha", "NAME = 'alpha'\nhook = None\ndef run(): pass\n")
    assert Folder(name, CONTRACT).rules()[0]["hook"] is None


def test_two_rules_claiming_one_key_are_refused(package):
    name, _, write = package
    write("alpha", "NAME = 'same'\ndef run(): pass\n")
    write("beta", "NAME = 'same'\ndef run(): pass\n")
    with pytest.raises(ContractError, match=r"NAME 'same' is claimed by .*\.alpha too"):
        Folder(name, CONTRACT).rules()


def test_the_folder_check_runs_on_every_rule(package):
    name, _, write = package
    write("alpha", "NAME = 'beta'\ndef run(): pass\n")

    def named_after_its_file(rule):
        if rule["NAME"] != rule.name:
            raise ContractError("widget", rule.module.__name__, "NAME", "is not the file's name")

    with pytest.raises(ContractError, match="is not the file's name"):
        Folder(name, CONTRACT, check=named_after_its_file).rules()


def test_read_once_per_path_and_again_when_a_folder_is_added(package, tmp_path):
    name, folder, write = package
    write("alpha", "NAME = 'alpha'\ndef run(): pass\n")
    widgets = Folder(name, CONTRACT)
    first = widgets.rules()
    write("beta", "NAME = 'beta'\ndef run(): pass\n")
    assert widgets.rules() is first  # the same path: not read again (a file added meanwhile is not seen)

    extra = tmp_path / "more"
    extra.mkdir()
    write("gamma", "NAME = 'gamma'\ndef run(): pass\n", where=extra)
    package_module = sys.modules[name]
    package_module.__path__.append(str(extra))
    assert [r.name for r in widgets.rules()] == ["alpha", "beta", "gamma"]  # a new path: read again
    package_module.__path__.remove(str(extra))
    assert widgets.rules() is first  # back to the first path: its reading still holds


def test_one_rule_is_imported_alone(package):
    name, _, write = package
    write("alpha", "NAME = 'alpha'\ndef run(): pass\n")
    write("beta", "raise AssertionError('not imported')\n")
    widgets = Folder(name, CONTRACT)
    assert widgets.names() == ["alpha", "beta"]
    assert widgets.rule("alpha")["NAME"] == "alpha"
    assert f"{name}.beta" not in sys.modules


def test_decorator_fields_are_checked_by_the_same_contract():
    contract = Contract("probe", (Field("key", str), Field("order", int, default=50)))
    assert contract.values("m", {"key": "k"}) == {"key": "k", "order": 50}
    with pytest.raises(ContractError, match="probe m: colour is not a field of a probe"):
        contract.values("m", {"key": "k", "colour": "red"})


def test_a_contract_names_its_key_among_its_fields():
    with pytest.raises(ValueError, match=r"^contract of widget: fields \['NAME'\], key 'ID'$"):
        Contract("widget", (Field("NAME", str),), key="ID")
    assert repr(REQUIRED) == "REQUIRED" and Field("X", int).required and not Field("X", int, default=0).required


# -- the five folders declare their contracts, and every rule there meets it --------------------------------

def test_every_rule_folder_declares_its_contract_and_its_rules_meet_it():
    from compat import checkpoints, checks, commands, patches, probes

    for package in (checkpoints, checks, commands, patches, probes):
        assert isinstance(package.CONTRACT, Contract), package.__name__
    assert {f.name for f in patches.CONTRACT.fields} >= {"ID", "VERSIONS", "ORDER", "REQUIRES", "OPTIONS", "find_files"}
    assert patches.CONTRACT.field("ORDER").default == 50 and commands.CONTRACT.field("ORDER").default == 50
    assert probes.CONTRACT.field("order").default == 50
    assert [p.id for p in patches.all_patches("vllm")][0] == "vllm-eagle3-whitelist"  # ORDER 10, read as declared
    assert len(commands.command_names()) == len(commands.FOLDER.names())
    assert set(checkpoints.all_layouts()) == {r["NAME"] for r in checkpoints.FOLDER.rules()}
