"""Where an engine's source comes from: the options every command shares, and the tree they name."""

from __future__ import annotations

import argparse

ENGINE_HELP = ("vllm or sglang: the installed one; vllm==0.11.0, 'sglang>=0.5.8', vllm==latest: a release from "
               "the package index")


def add_source_arguments(parser: argparse.ArgumentParser, *, engine_help: str | None = None) -> None:
    """--engine / --path / --python / --cache-dir / --offline, in one group."""
    group = parser.add_argument_group("engine source")
    group.add_argument("--engine", metavar="SPEC", help=engine_help or ENGINE_HELP)
    group.add_argument("--path", metavar="DIR", help="a source tree: DIR holds vllm/ or sglang/")
    group.add_argument("--python", metavar="PATH",
                       help="look for the installed engine in this interpreter (e.g. the serving venv's python)")
    group.add_argument("--cache-dir", metavar="DIR",
                       help="where fetched releases are kept (default: $XDG_CACHE_HOME/compat or ~/.cache/compat)")
    group.add_argument("--offline", action="store_true", help="never touch the network; use only cached releases")


def tree_from_args(args, *, progress: bool):
    """The EngineTree the source options name (installed, released or a path)."""
    from compat.sources import open_tree

    return open_tree(args.engine, path=args.path, python=args.python, cache_dir=args.cache_dir,
                     offline=args.offline, progress=progress)
