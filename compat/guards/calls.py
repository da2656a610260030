"""The calls, names and attributes of the walk: functions of the program followed with their arguments, methods and
properties of the objects it builds, constructors of its classes (fields, defaults, pydantic bounds, construction),
isinstance against the release's classes, and what the caller models (`Rules`). statements.py walks the
statements of the functions followed here.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from compat.guards.expressions import Evaluator, parse
from compat.guards.frames import Flow, Frame
from compat.guards.outcome import FunctionRef, Native, Outcome, Raised, Refused, Rules, Site
from compat.guards.program import Function, Program
from compat.guards.values import Obj, Unknown, join

MAX_DEPTH = 16  # nested calls followed
_PY_TYPES = ("int", "float", "str", "bool", "list", "tuple", "dict", "set")


class Calls(Evaluator):
    """The walk's calls (the statement walk, `block`, is statements.Interpreter's)."""

    program: Program
    rules: Rules
    outcome: Outcome

    def block(self, statements: list, frame: Frame) -> Flow:  # pragma: no cover - statements.Interpreter's
        raise NotImplementedError

    def __init__(self, program: Program, rules: Rules) -> None:
        super().__init__(strict=True)
        self.program = program
        self.rules = rules
        self.outcome = Outcome()
        self.frame: Frame | None = None
        self.depth = 0
        self.calls: list[tuple[str, str | None]] = []  # the calls followed to here: (call's source, caller's owner name)

    # -- entry ----------------------------------------------------------------------------------------------
    def call(self, key: str, args: list[Any], kwargs: dict[str, Any], *, certain: bool, why: tuple[str, ...]) -> Any:
        function = self.program.functions.get(key)
        if function is None:
            return Unknown(f"{key}(...)")
        if function.body is None or self.depth >= MAX_DEPTH:
            owner = args[0] if args and function.owned else None
            for effect in function.effects:
                holder, _, attr = effect.partition(".")
                if isinstance(owner, Obj) and attr and attr != "*":
                    owner.set(attr, Unknown(f"set by {key}()"))
            if key not in self.outcome.unread:
                self.outcome.unread.append(key)
            return Unknown(f"{key}(...)")
        frame = Frame(function, self._bind(function, args, kwargs), certain, why)
        outer, self.frame = self.frame, frame
        self.depth += 1
        try:
            flow = self.block(function.body, frame)
        finally:
            self.depth -= 1
            self.frame = outer
        if flow.normal is None and not flow.returns and flow.raised is not None:
            if certain:
                raise Refused(flow.raised)
            return Unknown(f"{key}(...) raises")
        values = [value for _, value in flow.returns] + ([None] if flow.normal is not None else [])
        result = values[0] if values else None
        for value in values[1:]:
            result = join(result, value, f"{key}(...)")
        return result

    def _bind(self, function: Function, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound: dict[str, Any] = {}
        extra = dict(kwargs)
        for i, name in enumerate(function.params):
            if i < len(args):
                bound[name] = args[i]
            elif name in extra:
                bound[name] = extra.pop(name)
            elif name in function.defaults:
                bound[name] = self.value(parse(function.defaults[name]))
            else:
                bound[name] = Unknown(name)
        if function.kwarg:
            bound[function.kwarg] = extra
        return bound

    # -- statements -----------------------------------------------------------------------------------------
    def name(self, name: str, node: ast.Name) -> Any:
        frame = self.frame
        if frame is not None and name in frame.locals:
            return frame.locals[name]
        if name in self.rules.names:
            return self.rules.names[name]
        if name in self.program.constants:
            return copy.deepcopy(self.program.constants[name])
        if name in self.program.classes or name in self.program.functions:
            return FunctionRef(name)
        return Unknown(name)

    def _is_builtin(self, name: str) -> bool:
        frame = self.frame
        return not (frame is not None and name in frame.locals) and name not in self.program.functions

    def _builtin_setattr(self, node, args, kwargs, scope):
        if len(args) == 3 and isinstance(args[0], Obj) and isinstance(args[1], str):
            args[0].set(args[1], args[2])
        elif len(args) == 3 and isinstance(args[0], Obj):
            args[0].closed = False  # a name not known: any attribute may have changed
        return None

    def _builtin_get_args(self, node, args, kwargs, scope):
        """typing.get_args of a `Literal[...]` alias, which the program holds as the list of its strings."""
        return tuple(args[0]) if len(args) == 1 and isinstance(args[0], list) else Unknown(ast.unparse(node))

    def _builtin_isinstance(self, node, args, kwargs, scope):
        """Of an object of the release's: a class the program built it from, or a transformers config class whose
        `model_type` the config's is (a config.json read as LlamaConfig is no EAGLEConfig)."""
        if len(args) == 2 and isinstance(args[0], (type(None), bool, int, float, str, list, tuple)):
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            if all(ast.unparse(k) not in _PY_TYPES for k in kinds):
                return False  # a plain Python value is no instance of a class of the release's
        if len(args) != 2 or not isinstance(args[0], Obj):
            return super()._builtin_isinstance(node, args, kwargs, scope)
        obj = args[0]
        kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
        answers: list[Any] = []
        for kind in kinds:
            name = ast.unparse(kind)
            spec = self.program.classes.get(name)
            if obj.kind == name:
                answers.append(True)
            elif name in _PY_TYPES:
                answers.append(False)
            elif obj.kind == "hf_config" and spec is not None and spec.model_type is not None:
                answers.append(obj.get("model_type", None, with_default=True) == spec.model_type)
            elif obj.kind in self.program.classes and spec is not None:
                answers.append(name in self.program.classes[obj.kind].bases)
            else:
                answers.append(Unknown(f"isinstance({obj.label}, {name})"))
        if any(a is True for a in answers):
            return True
        return next((a for a in answers if isinstance(a, Unknown)), False)

    def _builtin_callable(self, node, args, kwargs, scope):
        if len(args) != 1 or isinstance(args[0], (Unknown, Obj)):
            return Unknown(ast.unparse(node))
        return isinstance(args[0], (FunctionRef, Native))

    def _Attribute(self, node, scope):
        owner = self.value(node.value, scope)
        if isinstance(owner, FunctionRef) and f"{owner.key}.{node.attr}" in self.program.functions:
            return FunctionRef(f"{owner.key}.{node.attr}")  # Class.method, used as a value or called
        if isinstance(owner, Obj) and node.attr not in owner.attrs and owner.kind in self.program.classes:
            key = f"{owner.kind}.{node.attr}"
            function = self.program.functions.get(key)
            if function is not None and function.is_property:
                return self._follow(key, [owner], {}, node)
            if function is not None:
                return FunctionRef(key)
        return super()._Attribute(node, scope)

    def call_function(self, node: ast.Call, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        callee = node.func
        name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else ""
        if isinstance(callee, ast.Attribute):
            owner = func
            if isinstance(owner, Obj):
                method = owner.attrs.get(name)
                if isinstance(method, Native):
                    return method.fn(*args, **kwargs)
                if owner.kind in self.program.classes and f"{owner.kind}.{name}" in self.program.functions:
                    key = f"{owner.kind}.{name}"
                    function = self.program.functions[key]
                    first = [owner] if function.method else [FunctionRef(owner.kind)] if function.classmethod else []
                    return self._follow(key, [*first, *args], kwargs, node)
            if isinstance(owner, FunctionRef):
                return self._call_ref(FunctionRef(f"{owner.key}.{name}"), args, kwargs, node)
        if isinstance(callee, ast.Name) and callee.id in self.rules.first and callee.id in self.rules.calls:
            return self.rules.calls[callee.id](self, args, kwargs)
        target = self.value(callee) if isinstance(callee, ast.Name) else None
        if isinstance(target, FunctionRef):
            return self._call_ref(target, args, kwargs, node)
        if isinstance(target, Native):
            return target.fn(*args, **kwargs)
        if name == "__init__" and isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Call) \
                and ast.unparse(callee.value.func) == "super":
            return self._super_init(kwargs)
        rule = self.rules.calls.get(ast.unparse(callee)) or self.rules.calls.get(name)
        if rule is not None:
            return rule(self, args, kwargs)
        return Unknown(f"{ast.unparse(callee)}(...)")

    def _super_init(self, kwargs: dict[str, Any]) -> Any:
        """`super().__init__(**kwargs)` of a transformers config class (its base a `...Config`): the keywords become
        attributes, as PretrainedConfig's __init__ sets them (modelled: models.py)."""
        frame = self.frame
        if frame is None or not frame.function.method or not frame.function.params:
            return None
        owner = frame.locals.get(frame.function.params[0])
        spec = self.program.classes.get(owner.kind) if isinstance(owner, Obj) else None
        if isinstance(owner, Obj) and spec is not None and any(b.endswith("Config") for b in spec.bases):
            for key, value in kwargs.items():
                if key != "model_type" or spec.model_type is None:
                    owner.set(key, value)
        return None

    def _call_ref(self, ref: FunctionRef, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Any:
        if ref.key in self.program.classes:
            spec = self.program.classes[ref.key]
            rule = self.rules.calls.get(ref.key)
            if rule is not None and spec.init is None and not spec.fields:  # a class not read, that is modelled
                return rule(self, args, kwargs)
            return self.construct(ref.key, args, kwargs)
        function = self.program.functions.get(ref.key)
        if function is None:
            rule = self.rules.calls.get(ref.key.rpartition(".")[2])
            return rule(self, args, kwargs) if rule is not None else Unknown(f"{ref.key}(...)")
        if function.classmethod:  # Class.m(...): the class comes first
            args = [FunctionRef(ref.key.rpartition(".")[0]), *args]
        return self._follow(ref.key, args, kwargs, node)

    def call_value(self, func: Any, args: list[Any]) -> Any:
        """A function held as a value (a FunctionRef, a Native), called: what modelled rules use."""
        if isinstance(func, FunctionRef):
            return self._call_ref(func, args, {}, ast.Constant(None))
        if isinstance(func, Native):
            return func.fn(*args)
        return Unknown("a call of an unknown function")

    def _follow(self, key: str, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Any:
        frame = self.frame
        certain = frame.certain if frame is not None else True
        why = frame.why if frame is not None else ()
        owner = frame.function.params[0] if frame is not None and frame.function.owned and frame.function.params else None
        self.calls.append((ast.unparse(node), owner))
        try:
            return self.call(key, args, kwargs, certain=certain, why=why)
        finally:
            self.calls.pop()

    # -- construction of a class the program holds ----------------------------------------------------------
    def construct(self, cls: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        spec = self.program.classes[cls]
        frame = self.frame
        if spec.init is not None:  # a class built like a function: its __init__ run on a new object
            made = Obj(cls, kind=cls, closed=True)
            made.set("model_type", spec.model_type) if spec.model_type is not None else None
            self._follow(spec.init, [made, *args], kwargs, ast.Constant(None))
            return made
        if not spec.fields and not spec.construction:
            return Unknown(f"{cls}(...)")
        obj = Obj(cls, kind=cls, closed=spec.closed)
        site_file = spec.file
        for name, entry in spec.fields.items():
            if name in kwargs:
                obj.set(name, kwargs[name])
            elif "default" in entry:
                default = entry["default"]
                obj.set(name, copy.deepcopy(default) if not isinstance(default, dict) or "expr" not in default
                        else self.value(parse(default["expr"])))
            else:
                obj.set(name, Unknown(f"{cls}.{name}"))
        unknown_keys = [k for k in kwargs if k not in spec.fields]
        if unknown_keys and self.rules.extra_keys == "forbid":  # refused where it is built, as pydantic does
            where = (frame.function.file, frame.line, frame.function.key) if frame is not None else (site_file, spec.line, cls)
            self._refuse_here(frame, Site(*where, "ValidationError",
                                          f"{len(unknown_keys)} validation error(s) for {cls}: {', '.join(unknown_keys)}: "
                                          f"Unexpected keyword argument (no such field in {site_file}:{spec.line})"))
        for name, entry in spec.fields.items():
            value = obj.attrs.get(name)
            if name not in kwargs or isinstance(value, (Unknown, Obj)) or value is None or isinstance(value, bool):
                continue
            for bound, test, words in (("gt", lambda v, b: v > b, "greater than"), ("ge", lambda v, b: v >= b, "greater than or equal to"),
                                       ("lt", lambda v, b: v < b, "less than"), ("le", lambda v, b: v <= b, "less than or equal to")):
                if bound in entry and isinstance(value, (int, float)) and not test(value, entry[bound]):
                    # pydantic refuses it where the object is built (the field's declaration named in the message)
                    where = (frame.function.file, frame.line, frame.function.key) if frame is not None else \
                        (site_file, entry["line"], f"{cls}.{name}")
                    self._refuse_here(frame, Site(*where, "ValidationError",
                                                  f"1 validation error for {cls}: {name}: Input should be {words} "
                                                  f"{entry[bound]} (given {value!r}; the field: {site_file}:{entry['line']})"))
        for key in spec.construction:
            self.call(key, [obj], {}, certain=frame.certain if frame is not None else True,
                      why=frame.why if frame is not None else ())
        return obj

    def may_raise(self, site: Site, why: str) -> None:
        """A raise of the release's that these values may reach, for a reason modelled code gives (models.py)."""
        frame = self.frame
        self.outcome.maybe.append(Raised(site, (frame.why if frame is not None else ()) + (why,)))

    def _refuse_here(self, frame: Frame | None, site: Site) -> None:
        if frame is None or frame.certain:
            raise Refused(Raised(site))
        self.outcome.maybe.append(Raised(site, frame.why))


