"""The serving venv holds the packages the method imports beyond the engine's own dependencies (the method_packages
fact, read from the release: a `has_x()` check in the method's config branch that raises, an import on the straight
path of a function of the method's proposer or worker, an ImportError that raises). Suffix decoding on vLLM 0.11.1
to 0.33.0 runs on Snowflake's Arctic Inference ("Arctic Inference is required for suffix decoding. Install via `pip
install arctic-inference==0.1.1`", raised at start-up); 0.34.0's GPU suffix speculator needs nothing.

With a serving interpreter (`--python`, the installed engine's, a fleet host's) the venv is asked (`-E`, with a
timeout): the module is found and, when the release prints a pinned install line, the distribution's version meets
it. Without one the answer is unknown: the check carries the command that asks (a VenvQuestion), and the verdict is
"depends on the serving venv", never "works as is".
"""

from __future__ import annotations

import shlex
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat.checks import ANY_METHOD, FAIL, PASS, WARN, Ctx, Result, VenvQuestion, check
from compat.checks._method import release_name
from compat.core.interpreter import InterpreterError
from compat.methods import get_method


@check("method-venv", "venv: the serving venv has the packages the method needs", order=72, needs=("method packages",),
       methods=ANY_METHOD)
def method_venv(ctx: Ctx) -> Result:
    name, needs = _requirements(ctx)
    fact = ctx.fact("method_packages")
    if not needs:
        return Result(PASS, f"this release imports no package beyond its own dependencies for {name}", fact.get("location"))
    where = needs[0].get("location")
    python = ctx.options.fixes_python
    if python is None:
        command = ask_command("python", needs)
        install = "; ".join(dict.fromkeys(n["install"] for n in needs if n.get("install")))
        return Result(WARN, f"unknown: {name} needs {_listed(needs)} in the serving venv, which doctor was not given: "
                      f"without it the server refuses at start-up ({where}"
                      + (f": {install}" if install else "") + f"); check it with: {command} (or give --python)",
                      where, venv=VenvQuestion(tuple(n["module"] for n in needs), command))
    try:
        found = python.run_json(_probe_code(needs), what=f"whether {_listed(needs)} is installed")
    except InterpreterError as err:  # the interpreter failed: say so, do not guess
        command = ask_command(str(python), needs)
        return Result(WARN, f"unknown: cannot ask {python} for {_listed(needs)}: {err}", where,
                      venv=VenvQuestion(tuple(n["module"] for n in needs), command))
    problems = [p for p in (_problem(n, found.get(n["module"]) or {}) for n in needs) if p]
    if problems:
        install = " ".join(shlex.quote(_install(n)) for n in needs)
        return Result(FAIL, f"{python}: " + "; ".join(problems) + f": the server refuses {name} at start-up ({where})",
                      where, remedy=f"{python} -m pip install {install}")
    return Result(PASS, f"{python} has {_listed(needs, found)} ({where})", where)


def _requirements(ctx: Ctx) -> tuple[str, list[dict[str, Any]]]:
    """(the method's name in this release, what it needs from the serving venv)."""
    fact = ctx.fact("method_packages")
    names = [n for n in (ctx.method.launched, getattr(release_name(ctx, ctx.method.family), "name", None)) if n]
    per = fact.get("methods")
    if isinstance(per, dict):  # vLLM: per method name
        name = next((n for n in names if n in per), names[0] if names else ctx.method.family)
        return name, list(per.get(name) or [])
    workers = fact.get("workers") or {}  # SGLang: per worker file, by the algorithm names it holds
    spellings = {n.lower() for n in names} | {e.name.lower() for e in get_method(ctx.method.family).engine_names(ctx.engine)}
    found = [r for path, reqs in workers.items() for r in reqs
             if any(s in path.rsplit("/", 1)[-1] for s in spellings)]
    return (names[0] if names else ctx.method.family), found


def _listed(needs: list[dict[str, Any]], found: dict[str, Any] | None = None) -> str:
    out = []
    for n in needs:
        version = (found or {}).get(n["module"], {}).get("version")
        out.append(n["module"] + (f" {version}" if version else f" ({n['requires']})" if n.get("requires") else ""))
    return ", ".join(out)


def _install(need: dict[str, Any]) -> str:
    return (need.get("distribution") or need["module"]) + (need.get("requires") or "")


def _probe_code(needs: list[dict[str, Any]]) -> str:
    pairs = [(n["module"], n.get("distribution") or n["module"]) for n in needs]
    return ("import importlib.util as u, importlib.metadata as m, json\n"
            "def v(d):\n    try:\n        return m.version(d)\n    except Exception:\n        return None\n"
            f"print(json.dumps({{mod: {{'found': u.find_spec(mod) is not None, 'version': v(dist)}} "
            f"for mod, dist in {pairs!r}}}))")


def ask_command(python: str, needs: list[dict[str, Any]]) -> str:
    """One line that prints, for each package, whether the venv has it and which version."""
    inner = "; ".join(f'print("{n["module"]}", u.find_spec("{n["module"]}") is not None and m.version('
                      f'"{n.get("distribution") or n["module"]}"))' for n in needs)
    return f"{shlex.quote(python)} -E -c " + shlex.quote(f"import importlib.util as u, importlib.metadata as m; {inner}")


def _problem(need: dict[str, Any], found: dict[str, Any]) -> str | None:
    if not found.get("found"):
        return f"no {need['module']}"
    wanted, version = need.get("requires"), found.get("version")
    if not wanted or not version:
        return None
    try:
        ok = Version(version) in SpecifierSet(wanted)
    except (InvalidSpecifier, InvalidVersion):
        return None
    return None if ok else f"{need.get('distribution') or need['module']} {version}, the release asks for {wanted}"
