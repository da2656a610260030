"""Where an engine's source comes from: the options every command shares, and the tree they name.

Paths on the command line are made absolute here, once, against the working directory the user
typed them in: `--python ./venv-serve/bin/python` then means the same thing in a subprocess started
elsewhere and in every command a fix prints. `--python` is parsed into an `Interpreter`
(compat/core/interpreter.py): a venv directory and its python name the same one.
"""

from __future__ import annotations

import argparse
import os

from compat import engines
from compat.core.argtypes import seconds

TYPE_CHECKING = False  # typing costs milliseconds to import at start-up; mypy reads this as True
if TYPE_CHECKING:
    from compat.core.interpreter import Interpreter
    from compat.core.tree import EngineTree

ENGINE_HELP = ("{engines}: the installed one; vllm==0.11.0, 'sglang>=0.5.8', vllm==latest: a release from "
               "the package index")  # {engines}: the engines compat knows (compat/engines/)
PYTHON_HELP = ("look for the installed engine in this interpreter (e.g. the serving venv's python; relative paths "
               "are fine)")


def absolute_path(value: str) -> str:
    """`./venv/bin/python` -> `/home/me/venv/bin/python`: absolute against the working directory, `~` expanded,
    symlinks kept (a venv's python is a symlink to the base interpreter: resolving it would leave the venv)."""
    return os.path.abspath(os.path.expanduser(value))


def add_python_argument(group: argparse.ArgumentParser | argparse._ArgumentGroup, *, help: str = PYTHON_HELP) -> None:
    """`--python PATH`, the one declaration: the value is an `Interpreter` (a python, or a venv directory for its
    bin/python), absolute against the working directory; None when not given (this interpreter)."""
    group.add_argument("--python", metavar="PATH", type=_interpreter, help=help)


def _interpreter(value: str) -> Interpreter:
    """`Interpreter.of`, imported when --python is given (not by every command's parser: pathlib, json, subprocesses)."""
    from compat.core.interpreter import Interpreter

    return Interpreter.of(value)


def _retries(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number, 0 or more: {value!r}")
    return int(value)


def add_source_arguments(parser: argparse.ArgumentParser, *, engine_help: str | None = None,
                         title: str = "engine source") -> argparse._ArgumentGroup:
    """--engine / --path / --python / --cache-dir / --offline and pip's network options, in one group."""
    group = parser.add_argument_group(title)
    group.add_argument("--engine", metavar="SPEC", help=(engine_help or ENGINE_HELP).format(engines=engines.choices_text()))
    held = " or ".join(f"{name}/" for name in engines.names())
    group.add_argument("--path", metavar="DIR", type=absolute_path, help=f"a source tree: DIR holds {held}")
    add_python_argument(group)
    group.add_argument("--cache-dir", metavar="DIR", type=absolute_path,
                       help="where fetched releases are kept (default: $XDG_CACHE_HOME/compat or ~/.cache/compat)")
    group.add_argument("--offline", action="store_true", help="never touch the network; use only cached releases")
    group.add_argument("--index-url", metavar="URL",
                       help="the package index releases are fetched from (as pip's; default: PIP_INDEX_URL, pip.conf, PyPI)")
    group.add_argument("--retries", metavar="N", type=_retries,
                       help="retry a failed request (HTTP 429/5xx, reset, timeout) up to N times, backing off "
                            "(as pip's; default: PIP_RETRIES, pip.conf, 5)")
    group.add_argument("--timeout", metavar="SEC", type=seconds,
                       help="give up on a connection or transfer after SEC seconds without data (as pip's; default: "
                            "PIP_TIMEOUT, pip.conf, 15)")
    return group


def use_network_options(args: argparse.Namespace) -> None:
    """--index-url / --retries / --timeout for every fetch of this run (doctor --releases fetches many)."""
    from compat.sources.settings import configure

    configure(index_url=getattr(args, "index_url", None), retries=getattr(args, "retries", None),
              timeout=getattr(args, "timeout", None))


def tree_from_args(args: argparse.Namespace, *, progress: bool) -> EngineTree:
    """The EngineTree the source options name (installed, released or a path)."""
    return open_source(args, python=args.python, progress=progress)


def open_source(args: argparse.Namespace, *, python: Interpreter | None, progress: bool) -> EngineTree:
    """The EngineTree of --engine / --path / --cache-dir / --offline, with the engine looked for in `python`
    (where the engine is may differ from the --python given: doctor names the serving venv of a release)."""
    from compat.sources import open_tree

    use_network_options(args)
    quiet = bool(getattr(args, "quiet", 0))
    return open_tree(args.engine, path=args.path, python=python, cache_dir=args.cache_dir,
                     offline=args.offline, progress=progress and not quiet)


def release_version(args: argparse.Namespace, engine: str | None = None) -> tuple[str, str | None, str | None, str]:
    """(engine, version, python, where) of the release the source options name, without fetching its tree.

    The installed engine's version (in --python), a --path tree's, or for `--engine vllm==X` / a range /
    latest the release the package index (or the cached listing, or a cached release) has: a version that
    does not exist is refused with the releases near it, exactly as `compat probe` refuses it."""
    from compat.core.errors import UsageError
    from compat.sources import open_path, parse_engine_spec

    use_network_options(args)
    spec = parse_engine_spec(args.engine) if args.engine else None
    if spec is not None and engine is not None and spec.engine != engine:
        raise UsageError(f"--engine {args.engine} names {spec.engine}, but the layout is loaded by {engine}",
                         hint=f"--engine {engine}==VERSION (or --to {spec.engine})")
    if args.path:
        if spec is not None and spec.released:
            raise UsageError("give either --path or a released --engine version, not both")
        tree = open_path(args.path, spec.engine if spec else engine)
        return tree.engine, tree.version, None, f"the tree {tree.root}"
    if spec is None:
        raise UsageError("name the engine release: --engine vllm==0.18.0, --engine vllm (installed) or --path DIR")
    if spec.specifier is None:  # not a release: the installed engine
        from compat.sources.installed import installed_interpreter, installed_tree

        tree = installed_tree(spec.engine, args.python)
        python = installed_interpreter(tree)
        return tree.engine, tree.version, python.path if python else None, f"installed in {python}"
    if args.python:
        raise UsageError("--python picks an installed engine; it cannot be combined with a released version")
    return (spec.engine, _released_version(spec.engine, spec.specifier or "latest", args.cache_dir, args.offline), None,
            "a release on the package index")


def _released_version(engine: str, specifier: str, cache_dir: str | None, offline: bool) -> str:
    from compat.sources.released import Resolver

    return Resolver.of(engine, specifier, cache_dir=cache_dir, offline=offline).version()
