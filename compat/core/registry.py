"""One loader for the rule folders: probes, checks, patches, checkpoint layouts and commands.

A rule folder is a package whose modules not starting with `_` are its rules, one per file (pyupgrade's
`_plugins/`); modules starting with `_` hold what several rules share. The folder's `__init__.py`
declares, in plain sight, the contract its rules meet: a `Contract` of `Field`s, each with its name, the
type its value must have and, for an optional field, its default. It then asks a `Folder` for its rules:

    CONTRACT = Contract("patch", (
        Field("ID", str, doc="what --select / --skip and the record use"),
        Field("ORDER", int, default=50, doc="where it applies among the engine's patches"),
        ...
    ), key="ID")
    FOLDER = Folder("compat.patches.vllm", CONTRACT)
    FOLDER.rules()   # every patch module with its checked values (defaults filled in)

Two kinds of folders use it:

- module rules (patches, checkpoint layouts, commands): the fields are module-level names; a module that
  lacks a required one, or holds a value of the wrong type, fails with a `ContractError` naming the module
  and the field. `Rule.values` holds every field, the defaults of the absent ones included (the module
  itself is left as written);
- registered rules (probes, checks): a decorator in the folder's `__init__.py` takes the fields as its
  arguments and checks them with `Contract.values`; `Folder.rules()` imports every module, which registers.

A folder is read once per process, and again when its package's `__path__` changes (a test or a plugin
adding a folder): doctor asks for the checks and patches of every release it looks at, hundreds of times in
one run. `Folder.rule(name)` imports a single module (the command line imports only the command it runs).
"""

from __future__ import annotations

import collections.abc  # loaded at start-up anyway (functools imports collections)
import importlib
import os
import sys
from types import ModuleType

TYPE_CHECKING = False  # typing costs milliseconds at start-up, and the command line imports this module
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = ["FUNCTION", "REQUIRED", "Field", "Contract", "ContractError", "Rule", "Folder"]

# The kind of a field that holds a function (anything callable): collections.abc.Callable, which isinstance
# accepts, spelled as the plain type a Field takes.
FUNCTION: type = getattr(collections.abc, "Callable")


class _Required:
    """The default of a field that has none: the rule must give it."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class ContractError(RuntimeError):
    """A rule does not meet its folder's contract: `owner` (a module) and `field` name what to fix."""

    def __init__(self, what: str, owner: str, field: str, problem: str) -> None:
        self.what = what
        self.owner = owner
        self.field = field
        self.problem = problem
        super().__init__(f"{what} {owner}: {field} {problem}")


class Field:
    """One field of a contract: its name, the type(s) its value must have, its default when optional.

    `kind` is a type or a tuple of types (`FUNCTION` for a function); a value equal to the default is
    always accepted (`add_args = None` says "no options" as well as leaving it out does).
    """

    __slots__ = ("name", "kind", "default", "doc")

    def __init__(self, name: str, kind: type | tuple[type, ...], default: Any = REQUIRED, doc: str = "") -> None:
        self.name = name
        self.kind = kind
        self.default = default
        self.doc = doc

    def __repr__(self) -> str:
        default = "" if self.required else f", default={self.default!r}"
        return f"Field({self.name!r}, {self.kind_name()}{default})"

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def kind_name(self) -> str:
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        return " or ".join("a function" if k is FUNCTION else k.__name__ for k in kinds)

    def accepts(self, value: object) -> bool:
        if not self.required and value is self.default:
            return True
        return isinstance(value, self.kind)


class Contract:
    """What every rule of one folder defines: its fields, and the one that names a rule (`key`, unique)."""

    __slots__ = ("what", "fields", "key")

    def __init__(self, what: str, fields: tuple[Field, ...], *, key: str | None = None) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names) or (key is not None and key not in names):
            raise ValueError(f"contract of {what}: fields {names}, key {key!r}")
        self.what = what
        self.fields = fields
        self.key = key

    def __repr__(self) -> str:
        return f"Contract({self.what!r}, {[f.name for f in self.fields]})"

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    def values(self, owner: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """`given` checked against the fields, with the defaults of the absent optional ones filled in."""
        unknown = sorted(set(given) - {f.name for f in self.fields})
        if unknown:
            raise ContractError(self.what, owner, unknown[0], f"is not a field of a {self.what} "
                                f"(the fields: {', '.join(f.name for f in self.fields)})")
        out: dict[str, Any] = {}
        for f in self.fields:
            if f.name not in given:
                if f.required:
                    raise ContractError(self.what, owner, f.name, f"is missing: a {self.what} must define it "
                                        f"({f.kind_name()}{': ' + f.doc if f.doc else ''})")
                out[f.name] = f.default
                continue
            value = given[f.name]
            if not f.accepts(value):
                raise ContractError(self.what, owner, f.name, f"is {value!r} ({type(value).__name__}): "
                                    f"a {self.what}'s {f.name} is {f.kind_name()}")
            out[f.name] = value
        return out

    def read(self, module: ModuleType) -> dict[str, Any]:
        """The module's values of the contract's fields (module-level names; other names are its own)."""
        given = {f.name: getattr(module, f.name) for f in self.fields if hasattr(module, f.name)}
        return self.values(module.__name__, given)


class Rule:
    """One rule module and the values of its contract's fields (defaults filled in)."""

    __slots__ = ("module", "values")

    def __init__(self, module: ModuleType, values: dict[str, Any]) -> None:
        self.module = module
        self.values = values

    def __repr__(self) -> str:
        return f"Rule({self.module.__name__})"

    def __getitem__(self, field: str) -> Any:
        return self.values[field]

    @property
    def name(self) -> str:
        """The module's own name (its file name without `.py`)."""
        return self.module.__name__.rpartition(".")[2]


class Folder:
    """The rules of one package, read through its contract; once per process and package path.

    `check(rule)` is the folder's own rule about a module (a command is named after its file, a patch
    sits under its engine's folder); it raises ContractError.
    """

    def __init__(self, package: str, contract: Contract | None = None,
                 check: Callable[[Rule], None] | None = None, *, subpackages: bool = True) -> None:
        self.package = package
        self.contract = contract
        self.check = check
        self.subpackages = subpackages  # False: a sub-package is a rule folder of its own (checkpoints/blocks/), not a rule
        self._read: dict[tuple[str, ...], tuple[Rule, ...]] = {}

    def __repr__(self) -> str:
        return f"Folder({self.package!r})"

    def paths(self) -> tuple[str, ...]:
        """The package's `__path__` now (a test or a plugin may add a folder to it)."""
        package = sys.modules.get(self.package) or importlib.import_module(self.package)
        return tuple(package.__path__)

    def names(self) -> list[str]:
        """The rule modules' names, nothing imported: in path order, each folder's sorted (pkgutil's order)."""
        seen: dict[str, None] = {}
        for folder in self.paths():
            try:
                entries = sorted(os.listdir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.endswith(".py"):
                    name = entry[:-3]
                elif self.subpackages and os.path.isfile(os.path.join(folder, entry, "__init__.py")):
                    name = entry
                else:
                    continue
                if name.isidentifier() and not name.startswith("_"):
                    seen.setdefault(name, None)
        return list(seen)

    def rule(self, name: str) -> Rule:
        """Module `name` of the folder, imported alone and checked."""
        module = importlib.import_module(f"{self.package}.{name}")
        rule = Rule(module, self.contract.read(module) if self.contract is not None else {})
        if self.check is not None:
            self.check(rule)
        return rule

    def rules(self) -> tuple[Rule, ...]:
        """Every rule of the folder, imported and checked, in `names()` order; read once per package path."""
        paths = self.paths()
        rules = self._read.get(paths)
        if rules is None:
            rules = tuple(self.rule(name) for name in self.names())
            self._unique(rules)
            self._read[paths] = rules
        return rules

    def modules(self) -> tuple[ModuleType, ...]:
        return tuple(rule.module for rule in self.rules())

    def _unique(self, rules: tuple[Rule, ...]) -> None:
        contract = self.contract
        if contract is None or contract.key is None:
            return
        key = contract.key
        claimed: dict[Any, Rule] = {}
        for rule in rules:
            other = claimed.setdefault(rule[key], rule)
            if other is not rule:
                raise ContractError(contract.what, rule.module.__name__, key,
                                    f"{rule[key]!r} is claimed by {other.module.__name__} too: two {contract.what}s "
                                    f"cannot share it")
