"""Errors Python raises at an access or a call of the engine's, not a `raise` of its own: `'X' object has no attribute
'y'`, `f() got an unexpected keyword argument 'k'`, `f() missing 1 required positional argument: 'a'`, `KeyError:
'k'`. No template of the release holds these messages; the site is the release's line that makes that access on
that kind of object:

- with a traceback, its innermost frame in the engine (Python, or torch's `Module.__getattr__`, raised there);
- without one (a title, a message), the lines of the release that make the access (the call-sites fact, calls.py),
  ranked by what the release says of the class the message names: a line in that class's own methods that reads an
  attribute the class sets only under the opposite `if` first, then one the class never sets, then any other.

What the class has is read from the release (classes.py): where it is defined, its bases, whether and under which
condition it sets the attribute, which other classes define the method, the names it has instead; for a call, what
the callee takes. An error of a config object (`'LlamaConfig' object has no attribute ...`) is a key its config.json
lacks. explain says what it searched for when nothing in the release makes the access.
"""

from __future__ import annotations

import ast
import difflib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from compat.core.tree import EngineTree, UnparseableFile
from compat.explain.calls import Access, CallIndex
from compat.explain.classes import (ClassInfo, Definition, definitions, fields, find_class, guards_at, having, hierarchy,
                                    members, parameters)
from compat.explain.sites import Site

PYTHON_ERRORS = ("AttributeError", "TypeError", "KeyError")
_ATTRIBUTE = re.compile(r"(?:'(?P<owner>[\w.]+)' object|type object '(?P<type>[\w.]+)'|module '(?P<module>[\w.]+)') "
                        r"has no attribute '(?P<name>\w+)'")
_KEYWORD = re.compile(r"(?P<function>[\w.<>]+)\(\) got an unexpected keyword argument '(?P<name>\w+)'")
_MISSING = re.compile(r"(?P<function>[\w.<>]+)\(\) missing \d+ required (?:positional |keyword-only )?arguments?: "
                      r"'(?P<name>\w+)'")
_TAKES = re.compile(r"(?P<function>[\w.<>]+)\(\) takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ "
                    r"(?:was|were) given")
_KEY = re.compile(r"""^\s*(?:'(?P<single>[^']*)'|"(?P<double>[^"]*)")""")  # the key, perhaps the user's words after
TRIVIAL_BASES = ("object", "Module", "nn.Module", "ABC", "Protocol", "Generic", "NamedTuple")
# Python's own types: no class of the engine (`'NoneType' object has no attribute 'x'`: a value that was None)
BUILTIN_TYPES = frozenset({"NoneType", "str", "bytes", "int", "float", "bool", "list", "dict", "tuple", "set", "object",
                           "function", "method", "module", "type", "Tensor", "generator", "coroutine"})
MAX_CANDIDATES = 6


@dataclass(frozen=True)
class Problem:
    """What Python said: the kind of failure, the class or function it names, and the name it could not find."""

    kind: str  # "attribute" | "keyword" | "missing" | "positional" | "key"
    name: str  # the attribute, keyword, argument or key
    owner: str | None = None  # the class named (`EagleProposer`), or the owner of the function (`Qwen2Model`)
    function: str | None = None  # the function named by a TypeError (`Qwen2Model.forward`)
    module: str | None = None  # the module an AttributeError names (`module 'vllm.envs' has no attribute ...`)

    @property
    def keys(self) -> tuple[str, ...]:
        """The call-sites keys that make this access."""
        if self.kind == "attribute":
            return (self.name,)
        if self.kind == "keyword":
            return (f"{self.name}=", f"{{{self.name!r}}}")
        if self.kind == "key":
            return (f"[{self.name!r}]",)
        method = (self.function or "").rpartition(".")[2]
        if method == "__init__" and self.owner:
            return (f"{self.owner}(",)
        return (method, f"{method}(") if method else ()


@dataclass
class Finding:
    """Where the release makes the access, and what it says of the class."""

    problem: Problem
    site: Access | None = None
    code: str | None = None  # the site's line of code
    located_by: str = "message names"  # "traceback" when the frames gave the line
    candidates: list[tuple[Access, str]] = field(default_factory=list)  # lines it may be, each with its code
    owner: ClassInfo | None = None
    outside: list[str] = field(default_factory=list)  # bases of the owner the release does not define
    defined: list[Definition] = field(default_factory=list)  # where the class (or a base) defines the name
    others: list[Definition] = field(default_factory=list)  # other classes that define it
    close: list[str] = field(default_factory=list)  # the owner's names close to it
    guards: tuple[tuple[str, bool], ...] = ()  # the `if`s the site is under
    takes: tuple[list[str], str] | None = None  # what the callee takes, and where (a TypeError)
    searched: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"kind": self.problem.kind, "name": self.problem.name, "class": self.problem.owner,
                "function": self.problem.function, "site": self.site.location if self.site else None,
                "code": self.code, "located_by": self.located_by,
                "class_at": self.owner.location if self.owner else None, "bases_outside": self.outside,
                "defined": [{"as": d.kind, "at": d.location, "by": d.owner, "when": d.condition() or None}
                            for d in self.defined],
                "defined_by_others": [{"class": d.owner, "at": d.location} for d in self.others],
                "close_names": self.close, "searched": list(self.searched),
                "could_be": [{"site": a.location, "function": a.function, "code": code} for a, code in self.candidates]}


def problem_of(exception: str | None, message: str) -> Problem | None:
    name = (exception or "").rpartition(".")[2]
    if name == "AttributeError":
        found = _ATTRIBUTE.search(message)
        if found and found.group("module"):
            return Problem("attribute", found.group("name"), module=found.group("module"))
        if found:
            owner = found.group("owner") or found.group("type")
            return Problem("attribute", found.group("name"), owner.rpartition(".")[2])
    elif name == "TypeError":
        for kind, pattern in (("keyword", _KEYWORD), ("missing", _MISSING), ("positional", _TAKES)):
            found = pattern.search(message)
            if found:
                function = found.group("function")
                owner = function.rpartition(".")[0].rpartition(".")[2] or None
                return Problem(kind, found.groupdict().get("name") or function.rpartition(".")[2], owner, function)
    elif name == "KeyError":
        found = _KEY.match(message)
        if found:
            return Problem("key", found.group("single") if found.group("single") is not None else found.group("double"))
    return None


def locate(problem: Problem, tree: EngineTree, calls: Callable[[], CallIndex], frame_site: Access | None = None) -> Finding:
    """The line of the release that makes the access (the traceback's, else the best of its call sites)."""
    out = Finding(problem, searched=problem.keys)
    if problem.owner and problem.owner not in BUILTIN_TYPES:
        out.owner = find_class(tree, problem.owner)
    chain: list[ClassInfo] = []
    if out.owner is not None:
        chain, outside = hierarchy(tree, out.owner)
        out.outside = [b for b in outside if b not in TRIVIAL_BASES]
        if problem.kind == "attribute":
            out.defined = [d for info in chain for d in definitions(info, problem.name)]
            out.close = difflib.get_close_matches(problem.name, [m for info in chain for m in members(info)], n=3, cutoff=0.6)
        elif problem.function:
            method = problem.function.rpartition(".")[2]
            takes = next((parameters(info, method) for info in chain if parameters(info, method) is not None), None)
            if takes is not None:
                owner_of = next(info for info in chain if parameters(info, method) is not None)
                out.takes = (takes[0], f"{owner_of.file}:{takes[1]}")
            elif method == "__init__" and (made := fields(chain[0])) is not None:  # a dataclass's generated __init__
                out.takes = (made[0], f"{chain[0].file}:{made[1]}")
            if out.takes is not None and problem.kind == "keyword":
                out.close = difflib.get_close_matches(problem.name, out.takes[0], n=3, cutoff=0.5)
    if problem.kind == "attribute" and not any(d.kind == "method" for d in out.defined):
        under = posixpath.dirname(out.owner.file) if out.owner is not None else tree.engine
        out.others = [d for d in having(tree, problem.name, under) if d.owner not in {c.name for c in chain}]
    if frame_site is not None:
        out.site, out.located_by = frame_site, "traceback"
        out.code = _code(tree, frame_site)
        out.guards = guards_at(tree, frame_site.file, frame_site.line)
        return out
    ranked = _ranked(problem, tree, calls(), chain, out.defined, out.takes[0] if out.takes else None)
    if ranked and (len(ranked) == 1 or ranked[0][0] > ranked[1][0]):
        score, access, code = ranked[0]
        out.site, out.code = access, code
        out.guards = guards_at(tree, access.file, access.line)
        ranked = [r for r in ranked[1:] if r[0] >= 2]  # others of the class's own lines that can raise it too
    out.candidates = [(access, code) for _, access, code in ranked[:MAX_CANDIDATES]]
    return out


def _ranked(problem: Problem, tree: EngineTree, calls: CallIndex, chain: list[ClassInfo],
            defined: list[Definition], takes: list[str] | None = None) -> list[tuple[int, Access, str]]:
    """The release's lines making the access, best first: in the class's own methods, reading it where the class does
    not set it (under the opposite `if`), then where it never does, then the others; a line under the same `if` the
    class sets it under cannot raise it and is left out."""
    names = {info.name for info in chain}
    found = []
    for key in problem.keys:
        for access in calls.of(key):
            code = _code(tree, access) or ""
            own = (access.function or "").partition(".")[0] in names
            reads_self = f"self.{problem.name}" in code
            score = 1
            if problem.kind == "attribute" and own and reads_self and not any(d.always for d in defined):
                guards = guards_at(tree, access.file, access.line)
                sets = [d for d in defined if d.kind == "set"]
                if sets and all(d.guards and _opposite(guards, d.guards) for d in sets):
                    score = 4  # read under the `if` whose other branch sets it
                elif any(d.guards and set(d.guards) <= set(guards) for d in sets):
                    continue  # read only where it is set
                else:
                    score = 3 if not sets else 2
            elif problem.kind == "attribute" and chain and reads_self:
                score = 0  # another class's own attribute: not the object the message names
            elif problem.kind == "keyword" and takes is not None:
                score = _fits_callee(tree, access, problem.name, takes)
            found.append((score, access, code))
    found = [f for f in found if f[0] > 0]
    found.sort(key=lambda f: (-f[0], f[1].file, f[1].line))
    return found


def _fits_callee(tree: EngineTree, access: Access, name: str, takes: list[str]) -> int:
    """How well the call (or the dict of arguments) at the line fits the callee the message names: every other
    argument it passes is one the callee takes (2), or it passes one the callee does not (0: another callee)."""
    try:
        module = tree.parse(access.file)
    except (UnparseableFile, OSError):
        return 1
    accepted = {t.lstrip("*") for t in takes}
    for node in ast.walk(module):
        passed = None
        if isinstance(node, ast.Call) and any(k.arg == name and k.lineno == access.line for k in node.keywords):
            passed = [k.arg for k in node.keywords if k.arg]
        elif isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == name and k.lineno == access.line
                                                for k in node.keys):
            passed = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        if passed is not None:
            others = [p for p in passed if p != name]
            if any(p not in accepted for p in others) and not any(t.startswith("**") for t in takes):
                return 0
            return 2 if others else 1
    return 1


def _opposite(at: tuple[tuple[str, bool], ...], when: tuple[tuple[str, bool], ...]) -> bool:
    """The line is under an `if` whose other branch is where the class sets the attribute."""
    return any((test, not branch) in at for test, branch in when)


def _code(tree: EngineTree, access: Access) -> str | None:
    try:
        lines = tree.text(access.file).split("\n")
    except OSError:
        return None
    return lines[access.line - 1].strip() if 0 < access.line <= len(lines) else None


def site_of(finding: Finding, exception: str, message: str) -> Site | None:
    """The finding's line as a site of the release (an access, not a raise: no template of the release says it)."""
    access = finding.site
    if access is None:
        return None
    return Site("access", exception, None, message, None, access.function, access.location, access.line)


# -- in words ----------------------------------------------------------------------------------------------------
def cause_of(finding: Finding, engine: str, version: str | None, exception: str | None) -> str:
    """What the release says of the access: where it is made, what the class has, what else has it."""
    problem, release = finding.problem, f"{engine} {version or ''}".strip()
    site = finding.site
    where = (f" at {site.location}" + (f" in {site.function}" if site.function else "")
             + (f" (`{finding.code}`)" if finding.code else "")) if site is not None else ""
    said = (f"Python raised {exception}{where}, not a raise of {engine}'s" if exception else
            f"the names the text gives meet{where}")
    if problem.kind == "attribute":
        article = "an" if (problem.owner or "x")[0].lower() in "aeiou" else "a"
        of = f"the module {problem.module}" if problem.module else f"{article} {problem.owner}"
        parts = [f"{said}: the line reads `{problem.name}` of {of}", _owner_words(finding, engine, release)]
        if finding.others:
            parts.append(f"the classes of {release} that define `{problem.name}`: "
                         + ", ".join(f"{d.owner} ({d.location})" for d in finding.others))
        if finding.close:
            parts.append(f"{problem.owner} has " + ", ".join(f"`{name}`" for name in finding.close))
    elif problem.kind == "key":
        parts = [f"{said}: the key '{problem.name}' is not in what the line looks it up in"]
    else:
        parts = [f"{said}: {problem.function}() " + {"keyword": f"was given `{problem.name}=`",
                                                     "missing": f"was not given `{problem.name}`",
                                                     "positional": "was given more positional arguments"}[problem.kind]]
        if finding.takes is not None:
            parts.append(f"in {release} it takes ({', '.join(finding.takes[0])}) ({finding.takes[1]})")
            if finding.close:
                parts.append("the names it takes close to it: " + ", ".join(f"`{name}`" for name in finding.close))
        elif problem.owner:
            parts.append(f"{release} defines no {problem.function}" if finding.owner is None else
                         f"{problem.owner} ({finding.owner.location}) and its bases define no "
                         f"{problem.function.rpartition('.')[2] if problem.function else ''} in {release}")
    if site is None:
        parts.append(_unplaced(finding, release))
    return "; ".join(p for p in parts if p)


def _owner_words(finding: Finding, engine: str, release: str) -> str:
    problem, owner = finding.problem, finding.owner
    if problem.module:
        return _module_words(finding, release)
    if owner is None:
        if problem.owner == "NoneType":
            return f"the object was None: what the line reads `{problem.name}` of was never set, or its lookup found nothing"
        if problem.owner in BUILTIN_TYPES:
            return f"the object was a {problem.owner}, not what the line expects there"
        if (problem.owner or "").endswith("Config"):
            return (f"{release} defines no class {problem.owner}: it is a config object (transformers' or the "
                    f"checkpoint's), so `{problem.name}` is a key its config.json does not have")
        return f"{release} defines no class {problem.owner} (another package's, or another release's)"
    if not finding.defined:
        bases = f" (its bases outside {engine}, not read: {', '.join(finding.outside)})" if finding.outside else ""
        return f"{owner.name} ({owner.location}) and its bases define no `{problem.name}` in {release}{bases}"
    always = [d for d in finding.defined if d.always]
    if always:
        return (f"{always[0].owner} defines `{problem.name}` ({always[0].location}): the object there was not a "
                f"{owner.name} as {release} builds one (another class in its place, or another release's code)")
    said = []
    for d in finding.defined:
        if d.guards:
            said.append(f"{d.owner} sets `{problem.name}` only when `{d.condition()}` ({d.location}, in {d.method})")
        else:
            said.append(f"{d.owner} sets `{problem.name}` only in {d.method} ({d.location}), which had not run")
    opposite = [test for test, branch in finding.guards if any((test, not branch) in d.guards for d in finding.defined)]
    if opposite:
        said.append(f"the line reads it under `if {opposite[0]}:`, where it was never set")
    return "; ".join(said)


def _module_words(finding: Finding, release: str) -> str:
    module, name = finding.problem.module or "", finding.problem.name
    return (f"the module {module} had no `{name}` where it ran, though {release}'s code reads it: another release's "
            "module was installed beside this one's code, or the name is made at run time")


def _unplaced(finding: Finding, release: str) -> str:
    if finding.candidates:
        return (f"the text has no traceback to say which line: {len(finding.candidates)} lines of {release} make "
                "this access (listed)")
    return (f"no line of {release}'s speculative-decoding code makes this access (searched for "
            + ", ".join(f"`{key}`" for key in finding.searched) + ")")


# -- the evidence's errors ---------------------------------------------------------------------------------------
MAX_LINES = 5  # lines without a traceback looked up (a paste's; a log's error lines)


def read(evidence, tree: EngineTree, files: list[str]) -> None:
    """Each error Python raised at an access of the engine's gets its finding (`event.access`) and, when the line is
    known, its site: a traceback's events in place, and the lines of a paste (or a log's error lines) that say one
    and matched nothing, which become events (and leave `evidence.unmatched`)."""
    from compat.explain.analysis import SHORT_INPUT, Event, record_event
    from compat.explain.calls import calls_of
    from compat.explain.titles import message_of

    index: list[CallIndex] = []

    def calls() -> CallIndex:
        if not index:
            index.append(calls_of(tree, files))
        return index[0]

    engine = evidence.engine
    for event in evidence.events:
        if event.site is not None and event.located_by == "message" and _python_words(event):
            event.site, event.alternatives = None, []  # a raise that only repeats Python's words, of another class
        tb = event.traceback
        if event.site is None and tb is None and event.located_by == "message":
            exception, message = message_of(event.text)
            problem = problem_of(exception, message)
            if problem is not None:
                event.access = finding = locate(problem, tree, calls)
                event.site, event.located_by = site_of(finding, exception or "", message), finding.located_by
            continue
        if event.site is not None or event.user_frame is not None or tb is None:
            continue
        problem = problem_of(event.exception, tb.message)
        inner = tb.innermost(engine)
        if problem is None or inner is None:
            continue
        frame, relpath = inner
        finding = locate(problem, tree, calls, Access(problem.keys[0] if problem.keys else problem.name, relpath,
                                                      frame.line, frame.function))
        event.access = finding
    short = evidence.lines <= SHORT_INPUT
    seen = {("site", e.site.location) if e.site is not None else ("text", e.text): e for e in evidence.events}
    taken = 0
    for pair in list(evidence.unmatched):
        line, error_like = pair
        if taken >= MAX_LINES or not (short or error_like):
            continue
        exception, message = message_of(line.text)
        problem = problem_of(exception, message)
        if problem is None:
            continue
        taken += 1
        finding = locate(problem, tree, calls)
        evidence.unmatched.remove(pair)
        record_event(evidence, seen, Event(line.number, line.text.strip(), exception,
                                           site_of(finding, exception or "", message), finding.located_by,
                                           process=line.process, access=finding))
    evidence.events.sort(key=lambda e: e.line)


def _python_words(event) -> bool:
    """The event's raise site is a template of Python's own message (`'{}' object has no attribute '{}'`, raised by a
    class's __getattr__), and the class the text names is not that class: the text is Python's, not that raise's."""
    from compat.explain.titles import message_of

    site = event.site
    generic = problem_of(site.exception, site.template.replace("{}", "X"))
    if generic is None:
        return False
    problem = problem_of(*message_of(event.text))
    owner = (site.function or "").partition(".")[0]
    return problem is not None and problem.owner != owner


# -- across releases ---------------------------------------------------------------------------------------------
def still_made(finding: Finding, tree: EngineTree) -> bool:
    """Does this release make the access the same way: its function still holds the site's line, and the class still
    lacks what it lacked here?"""
    site, code = finding.site, finding.code
    if site is None or not code or not tree.exists(site.file):
        return False
    try:
        module = tree.parse(site.file)
    except UnparseableFile:
        return False
    function = _function_named(module, site.function or "")
    if function is None:
        return False
    lines = tree.text(site.file).split("\n")[function.lineno - 1:function.end_lineno or function.lineno]
    if not any(line.strip() == code for line in lines):
        return False
    problem = finding.problem
    if problem.kind == "attribute" and problem.owner and finding.owner is not None and not finding.defined:
        info = find_class(tree, problem.owner)
        if info is not None and any(d.always for c in hierarchy(tree, info)[0] for d in definitions(c, problem.name)):
            return False
    return True


def first_working(finding: Finding, later: list[str], tree_of: Callable[[str], EngineTree | None]) -> tuple[str, str] | None:
    """The first of the `later` releases (ascending) that no longer makes the access so, by bisection, and how."""
    if finding.site is None or not finding.code or not later:  # no line of this release to follow
        return None

    def made(version: str) -> bool:
        tree = tree_of(version)
        return tree is None or still_made(finding, tree)  # a release that cannot be had is not said to work

    if made(later[-1]):
        return None
    low, high = 0, len(later) - 1
    while low < high:
        mid = (low + high) // 2
        if made(later[mid]):
            low = mid + 1
        else:
            high = mid
    tree = tree_of(later[low])
    problem = finding.problem
    if tree is not None and problem.kind == "attribute" and problem.owner and finding.owner is not None \
            and not finding.defined and (info := find_class(tree, problem.owner)) is not None \
            and any(d.always for c in hierarchy(tree, info)[0] for d in definitions(c, problem.name)):
        return later[low], f"{problem.owner} defines `{problem.name}` there"
    return later[low], f"`{finding.code}` is no longer in {finding.site.function}"


def _function_named(module: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    def walk(node: ast.AST, scope: tuple[str, ...]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = (*scope, child.name)
                if ".".join(name) == qualname and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    return child
                found = walk(child, name)
                if found is not None:
                    return found
        return None

    return walk(module, ())
