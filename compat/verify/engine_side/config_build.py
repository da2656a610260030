"""Build an engine's configuration from launch lines the way its own entry point does, up to and excluding loading a
model: vLLM parses the line with its own `vllm serve` parser (or the api_server module's), then
`EngineArgs.from_cli_args(args).create_engine_config()`; SGLang its `prepare_server_args(argv)`. No weight is read,
nothing is downloaded (the caller sets HF_HUB_OFFLINE=1), no GPU is asked for beyond what the release's own
configuration code asks. The engine is imported once; every line of the job is built in this one process.

Runs in the engine's interpreter (compat is not installed there; stdlib and the engine only). As a script:

    python config_build.py JOB.json EVENTS.jsonl

JOB: {"engine": PACKAGE, "build": "engine_args" | "server_args", "lines": [{"label", "words": [...], "form": "serve" |
"module", "env": {}}]}: `build` is the engine unit's CONFIG_BUILD (compat/engines/<name>.py), which of the builds
below this engine's entry point makes; `engine` the package it imports.
EVENTS, one JSON line each: {"event": "importing" | "imported" | "result" | "done", ...}; "imported" carries the
engine's version and platform; "result" {"label", "ok", "seconds", "speculative": {method, model,
num_speculative_tokens} | null} or, when the build raised, "error": {"type", "message", "site", "function",
"frames"} (the innermost raise in the engine's files; for pydantic's ValidationError, the validator's own raise).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback

CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
PARSER_MODULES = ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.launchers.cli_args")
MAX_MESSAGE = 2000
ENGINE_PACKAGE = [""]  # the package whose frames are the engine's (set from the job)


class Events:
    def __init__(self, path: str) -> None:
        self.path = path

    def emit(self, event: str, **fields) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "t": round(time.time(), 3), **fields}, default=str) + "\n")


def _root(package: str) -> str:
    module = importlib.import_module(package)
    return os.path.dirname(os.path.dirname(os.path.abspath(str(module.__file__))))


def _frames(exc: BaseException, root: str) -> list[dict]:
    """The traceback's frames in the engine's own package (root: the folder holding it), innermost last."""
    out = []
    package = os.path.join(root, ENGINE_PACKAGE[0]) + os.sep
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(frame.filename)
        if path.startswith(package):
            out.append({"file": os.path.relpath(path, root).replace(os.sep, "/"), "line": frame.lineno,
                        "function": frame.name})
    return out


def _innermost(exc: BaseException) -> BaseException:
    """pydantic's ValidationError wraps what a validator raised: that error, with its own traceback."""
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":
        try:
            for item in errors():
                inner = (item.get("ctx") or {}).get("error")
                if isinstance(inner, BaseException) and inner.__traceback__ is not None:
                    return inner
        except Exception:  # an errors() that fails: the wrapper is what there is
            return exc
    return exc


def _error(exc: BaseException, root: str) -> dict:
    inner = _innermost(exc)
    frames = _frames(inner, root) or _frames(exc, root)
    last = frames[-1] if frames else None
    out = {"type": type(inner).__name__, "message": str(inner)[:MAX_MESSAGE], "site": None, "function": None,
           "frames": frames[-6:]}
    if inner is not exc:
        out["wrapped_in"] = type(exc).__name__
        out["wrapper_message"] = str(exc)[:MAX_MESSAGE]
    if last is not None:
        out["site"], out["function"] = f"{last['file']}:{last['line']}", last["function"]
    return out


# -- "engine_args": the serve command's parser, then EngineArgs (vLLM) ----------------------------------------
def _serve_parser(form: str):
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    if form == "serve":
        try:  # the `vllm` command's own parser with its serve subcommand (it moves --model in front, as `vllm serve`)
            from vllm.entrypoints.cli import serve as serve_module

            parser = FlexibleArgumentParser(description=ENGINE_PACKAGE[0])
            subparsers = parser.add_subparsers(required=False, dest="subparser")
            commands = {}
            for command in serve_module.cmd_init():
                command.subparser_init(subparsers)
                commands[command.name] = command
            return parser, commands.get("serve")
        except (ImportError, AttributeError):
            pass
    for name in PARSER_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module.make_arg_parser(FlexibleArgumentParser(description=ENGINE_PACKAGE[0])), None
    raise ImportError("no make_arg_parser in " + ", ".join(PARSER_MODULES))


def build_engine_args(line: dict) -> dict:
    from vllm.engine.arg_utils import EngineArgs

    parser, command = _serve_parser(line.get("form", "serve"))
    words = list(line["words"])
    args = parser.parse_args((["serve"] if command is not None else []) + words)
    if command is not None and hasattr(command, "validate"):
        command.validate(args)
    if getattr(args, "model_tag", None):
        args.model = args.model_tag
    config = EngineArgs.from_cli_args(args).create_engine_config()
    spec = config.speculative_config
    if spec is None:
        return {"speculative": None}
    model = getattr(getattr(spec, "draft_model_config", None), "model", None)
    return {"speculative": {"method": getattr(spec, "method", None), "model": model,
                            "num_speculative_tokens": getattr(spec, "num_speculative_tokens", None)}}


# -- "server_args": prepare_server_args (SGLang) --------------------------------------------------------------
def build_server_args(line: dict) -> dict:
    from sglang.srt.server_args import prepare_server_args

    args = prepare_server_args(list(line["words"]))
    return {"speculative": {"method": getattr(args, "speculative_algorithm", None),
                            "model": getattr(args, "speculative_draft_model_path", None),
                            "num_speculative_tokens": getattr(args, "speculative_num_steps", None)}}


def _current_platform() -> str | None:
    from vllm.platforms import current_platform

    return str(getattr(current_platform, "device_type", "") or "") or None


# build name (the unit's CONFIG_BUILD) -> (the build of one line, the engine's own name for the platform it found)
BUILDS = {"engine_args": (build_engine_args, _current_platform), "server_args": (build_server_args, None)}


def _platform(build: str) -> str | None:
    found = BUILDS[build][1]
    return found() if found is not None else None


def _inspect_here(engine: str) -> None:
    """vLLM inspects a model class it has not seen in a child process, so that importing it does not initialise CUDA
    in a process that will serve; this one serves nothing and exits, so it inspects in-process: the same answer, with
    one import of the engine instead of one per architecture (each ~15 s)."""
    try:
        registry = importlib.import_module(f"{engine}.model_executor.models.registry")
    except ImportError:
        return
    if callable(getattr(registry, "_run_in_subprocess", None)):
        setattr(registry, "_run_in_subprocess", lambda fn: fn())


def _version(engine: str) -> str | None:
    module = importlib.import_module(engine)
    return getattr(module, "__version__", None)


def main(job_path: str, events_path: str) -> int:
    job = json.loads(open(job_path, encoding="utf-8").read())
    events = Events(events_path)
    engine = job["engine"]
    for name, value in CPU_ENV.items():
        os.environ.setdefault(name, value)
    ENGINE_PACKAGE[0] = engine
    events.emit("importing", engine=engine)
    started = time.time()
    try:
        kind = job.get("build") or ""
        if kind not in BUILDS:
            raise LookupError(f"no configuration build {kind!r} here (expected one of {', '.join(BUILDS)})")
        build = BUILDS[kind][0]
        root = _root(engine)
        version, platform = _version(engine), _platform(kind)
    except Exception as exc:  # the engine does not import here: say so, one line
        events.emit("import_failed", type=type(exc).__name__, message=str(exc)[:MAX_MESSAGE])
        events.emit("done")
        return 0
    _inspect_here(engine)
    events.emit("imported", version=version, platform=platform, seconds=round(time.time() - started, 3))
    for line in job["lines"]:
        saved = dict(os.environ)
        os.environ.update(line.get("env") or {})
        t = time.time()
        result: dict = {"label": line.get("label"), "ok": True}
        try:
            result.update(build(line))
        except SystemExit as exc:  # argparse refused the line (it prints why on stderr)
            result.update(ok=False, error={"type": "SystemExit", "message": f"the parser exited ({exc.code})",
                                           "site": None, "function": None, "frames": []})
        except BaseException as exc:  # noqa: BLE001 - whatever the build raises is the answer
            if isinstance(exc, KeyboardInterrupt):
                raise
            result.update(ok=False, error=_error(exc, root))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        result["seconds"] = round(time.time() - t, 3)
        events.emit("result", **result)
    events.emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
