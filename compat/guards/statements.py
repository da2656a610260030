"""The release's validation code walked with the user's values: a small abstract interpreter over the statements a
spec_validation probe read (probes/_validation.py gives their form).

Statements run in order: assignments set locals and the attributes of the release's objects (`self.method =
"eagle3"`), an `if` whose test is known takes its branch, a `raise` or a failed `assert` ends the path. An `if`
whose test is unknown runs both branches and joins what they leave (values.join): a raise on such a path is a raise
that may happen (`Outcome.maybe`, with what was unknown on the way), never a pass and never a guess. When every path
still open raises, the release refuses (`Outcome.refused`): the first raise reached with every test on its way known,
or the raises every path ends in.

Calls are followed when the program holds the function (a method of the same class, a module function the probe
read); a function kept as its effects only makes what it assigns unknown; a constructor of a class the program holds
(`SpeculativeConfig(**d)`) builds the object from its fields and runs its construction; calls the caller models
(`Rules.calls`: a model's config built from a path, the platform's `is_cuda()`) answer as the caller says; any other
call's result is unknown (and is taken to assign nothing the guards read: docs/doctor.md says where this matters).
"""

from __future__ import annotations

import ast
from typing import Any

from compat.guards.calls import Calls
from compat.guards.frames import Flow, Frame, merge
from compat.guards.expressions import parse
from compat.guards.outcome import Outcome, Raised, Refused, Rules, Site
from compat.guards.program import Program, render
from compat.guards.values import Obj, PythonRaises, Unknown

MAX_STEPS = 40000  # statements run per evaluation: past this, what is left is unknown
MAX_UNROLL = 256  # iterations of a loop over a known list run one by one


class Interpreter(Calls):

    def run(self, key: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> Outcome:
        try:
            self.outcome.result = self.call(key, args, kwargs or {}, certain=True, why=())
        except Refused as stop:
            self.outcome.refused = stop.raised
        return self.outcome

    def build(self, cls: str, kwargs: dict[str, Any]) -> Outcome:
        """Construct a class of the program (its fields from kwargs and defaults, then its construction)."""
        try:
            self.outcome.result = self.construct(cls, [], kwargs)
        except Refused as stop:
            self.outcome.refused = stop.raised
        return self.outcome

    def block(self, statements: list, frame: Frame) -> Flow:
        flow = Flow(frame)
        for statement in statements:
            if flow.normal is None:
                break
            self.outcome.steps += 1
            if self.outcome.steps > MAX_STEPS:
                self._maybe(flow.normal, statement[1], None, "the walk stopped (too long)", flow.normal.why + ("too long",))
                flow.normal = None
                break
            self.frame = flow.normal
            flow.normal.line = statement[1]
            try:
                try:
                    sub = self.statement(statement, flow.normal)
                except PythonRaises as python:  # the release's code raises there itself (None > 1: TypeError)
                    sub = self._raise(flow.normal, statement[1], python.exception, None, _expression(statement),
                                      rendered=python.message)
            except Refused as stop:
                if flow.normal.certain:
                    raise
                sub = Flow(None, raised=stop.raised)
            flow.normal = sub.normal
            flow.returns += sub.returns
            flow.breaks += sub.breaks
            flow.continues += sub.continues
            if sub.normal is None and sub.raised is not None and not sub.left:
                flow.raised = sub.raised
        return flow

    def statement(self, s: list, frame: Frame) -> Flow:
        kind = s[0]
        if kind == "if":
            return self._if(s, frame)
        if kind == "=":
            value = self.value(parse(s[3]))
            for target in s[2]:
                self.assign(parse(target), value, frame)
            return Flow(frame)
        if kind == "call":
            self.value(parse(s[2]))
            return Flow(frame)
        if kind == "raise":
            return self._raise(frame, s[1], s[2], s[3])
        if kind == "assert":
            test = self.truth(parse(s[2]))
            if test is True:
                return Flow(frame)
            if isinstance(test, Unknown):
                self._maybe(frame, s[1], "AssertionError", s[3], frame.why + (test.why or s[2],))
                return Flow(frame)
            return self._raise(frame, s[1], "AssertionError", s[3] or repr(f"assert {s[2]}"), f"not ({s[2]})")
        if kind == "return":
            return Flow(None, returns=[(frame, self.value(parse(s[2])) if s[2] is not None else None)])
        if kind == "for":
            return self._for(s, frame)
        if kind == "try":
            return self._try(s, frame)
        if kind == "continue":
            return Flow(None, continues=[frame])
        if kind == "break":
            return Flow(None, breaks=[frame])
        return Flow(frame)

    def _if(self, s: list, frame: Frame) -> Flow:
        test = self.truth(parse(s[2]))
        if not isinstance(test, Unknown):
            taken = s[2] if test else f"not ({s[2]})"
            before = frame.tests
            frame.tests = before + (taken,)
            flow = self.block(s[3] if test else s[4], frame)
            for end in [flow.normal, *flow.breaks, *flow.continues]:
                if end is not None:
                    end.tests = before
            return flow
        why = test.why or s[2]
        first_frame, second_frame = frame.fork(why), frame.fork(f"not ({why})")
        first_frame.tests += (s[2],)
        second_frame.tests += (f"not ({s[2]})",)
        first = self.block(s[3], first_frame)
        second = self.block(s[4], second_frame)
        met = self._meet(frame, [first, second])
        if met.normal is not None:
            met.normal.tests = frame.tests
        return met

    def _meet(self, frame: Frame, flows: list[Flow]) -> Flow:
        normals = [f.normal for f in flows if f.normal is not None]
        left = any(f.left for f in flows)
        out = Flow(None, [r for f in flows for r in f.returns], [b for f in flows for b in f.breaks],
                   [c for f in flows for c in f.continues])
        if normals:
            out.normal = merge(normals, frame.certain and not left, frame.why if not left else normals[0].why)
        elif not left and all(f.raised is not None for f in flows):
            raised = [f.raised for f in flows if f.raised is not None]
            out.raised = Raised(raised[0].site, (), tuple(r.site for r in raised[1:]))
            if frame.certain:
                raise Refused(out.raised)
        return out

    def _for(self, s: list, frame: Frame) -> Flow:
        items = self.value(parse(s[3])) if s[3] != "_loop_" else Unknown("a while loop")
        if isinstance(items, dict):
            items = list(items)
        target = parse(s[2]) if s[2] != "_" else None
        if isinstance(items, (list, tuple, str)) and len(items) <= MAX_UNROLL:
            out = Flow(frame)
            current: Frame | None = frame
            for item in items:
                if current is None:
                    break
                if target is not None:
                    self.assign(target, item, current)
                body = self.block(s[4], current)
                out.returns += body.returns
                nexts = [f for f in [body.normal, *body.continues] if f is not None]
                current = merge(nexts, current.certain and not body.returns, current.why) if nexts else None
                if body.breaks:
                    ends = body.breaks + ([current] if current is not None else [])
                    return Flow(merge(ends, frame.certain and not body.returns, frame.why), out.returns)
                if current is None and body.raised is not None and not body.left:
                    out.raised = body.raised
            out.normal = current
            return out
        why = items.why if isinstance(items, Unknown) else s[3]
        once = frame.fork(f"the items of {why}")
        if target is not None:
            self.assign(target, Unknown(f"an item of {s[3]}"), once)
        body = self.block(s[4], once)
        ends = [f for f in [frame, body.normal, *body.continues, *body.breaks] if f is not None]
        return Flow(merge(ends, frame.certain and not body.returns, frame.why), body.returns)

    def _try(self, s: list, frame: Frame) -> Flow:
        flows = [self.block(s[2], frame.fork("what the try may raise"))]
        for _, handler in s[3]:
            flows.append(self.block(handler, frame.fork("the try raised")))
        met = self._meet(frame, flows) if any(f.normal is not None or f.left for f in flows) else flows[0]
        if len(s) > 4 and met.normal is not None:
            tail = self.block(s[4], met.normal)
            tail.returns = met.returns + tail.returns
            return tail
        return met

    def _raise(self, frame: Frame, line: int, exception: str | None, message: str | None, test: str | None = None, *,
               rendered: str | None = None) -> Flow:
        site = Site(frame.function.file, line, frame.function.key, exception,
                    rendered if rendered is not None else self.message(message))
        guard = frame.tests + ((test,) if test else ())
        # the raise's own test first: what it compares is what a fix changes, not the branch that led there
        reads, compared = self._reads(frame, tuple(reversed(guard)) + ((message,) if message else ()))
        for text, owner in self.calls:  # what the callers handed down: `f(self.x)` reads x
            for node in ast.walk(parse(text)) if owner else ():
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == owner \
                        and node.attr not in reads:
                    reads += (node.attr,)
        if frame.certain:
            raise Refused(Raised(site, guard=guard, reads=reads, compared=compared))
        raised = Raised(site, frame.why, guard=guard, reads=reads, compared=compared)
        if not frame.function.quiet:
            self.outcome.maybe.append(raised)
        return Flow(None, raised=raised)

    def _reads(self, frame: Frame, texts: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, Any]]:
        """The attributes of the function's first parameter (`self.x`) the guard reads, and what each is compared with."""
        params = frame.function.params
        owner = params[0] if params and frame.function.owned else None
        reads: dict[str, None] = {}
        compared: dict[str, Any] = {}
        for text in texts:
            try:
                tree = ast.parse(text, mode="eval")
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == owner:
                    reads[node.attr] = None
                elif isinstance(node, ast.Name) and owner is None and node.id in params:
                    reads[node.id] = None
                if isinstance(node, ast.Compare) and len(node.comparators) == 1:
                    for mine, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                        if isinstance(mine, ast.Attribute) and isinstance(mine.value, ast.Name) and mine.value.id == owner:
                            value = self.value(other)
                            if not isinstance(value, (Unknown, Obj)):
                                compared.setdefault(mine.attr, value)
        return tuple(reads), compared

    def _maybe(self, frame: Frame, line: int, exception: str | None, message: str | None, why: tuple[str, ...]) -> None:
        if frame.function.quiet:
            return
        site = Site(frame.function.file, line, frame.function.key, exception, self.message(message))
        self.outcome.maybe.append(Raised(site, why))

    def message(self, source: str | None) -> str:
        if source is None:
            return ""
        try:
            return render(parse(source), self.value)
        except (SyntaxError, RecursionError, ValueError):
            return source

    # -- assignment -----------------------------------------------------------------------------------------
    def assign(self, target: ast.expr, value: Any, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame.locals[target.id] = value
        elif isinstance(target, ast.Attribute):
            owner = self.value(target.value)
            if isinstance(owner, Obj):
                owner.set(target.attr, value)
        elif isinstance(target, ast.Subscript):
            owner, key = self.value(target.value), self.value(target.slice)
            if isinstance(owner, dict) and not isinstance(key, (Unknown, Obj, list, dict)):
                owner[key] = value
            elif isinstance(target.value, ast.Name):
                frame.locals[target.value.id] = Unknown(ast.unparse(target.value))
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for element, item in zip(target.elts, value):
                    self.assign(element, item, frame)
            else:
                for element in target.elts:
                    self.assign(element, Unknown(ast.unparse(element)), frame)

    def bind(self, name: str, value: Any) -> None:
        if self.frame is not None:
            self.frame.locals[name] = value

    # -- names, attributes, calls ---------------------------------------------------------------------------
def evaluate(program: Program, rules: Rules, key: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> Outcome:
    """Walk `key` of the program with these arguments: what the release does with them."""
    return Interpreter(program, rules).run(key, args, kwargs)


def _expression(statement: list) -> str | None:
    """The expression a statement evaluates first (an if's test, an assignment's value): where Python raised."""
    kind = statement[0]
    if kind in ("if", "assert", "call", "return"):
        return statement[2]
    if kind == "=":
        return statement[3]
    return None


__all__ = ["Interpreter", "evaluate"]
