"""A release's own server argument parser, built from its source and run on launch lines (run as a script).

    python release_parser.py ROOT < {"engine": "vllm"|"sglang", "version": V, "cli_module": "vllm.entrypoints...",
                                     "entries": {"serve"|"module": [[word, ...], ...]}}

prints {"entries": {ENTRY: {"built": "<how the parser was built>" | null, "error": "...", "outcomes": [...]}},
"stubbed": [...]} where each outcome is {"ok": bool, "error": argparse's message or the exception the release
raised, "target": ..., "spec": ...}.

The parser is the release's: vLLM's `vllm serve` subparser as vllm/entrypoints/cli/main.py builds it
(FlexibleArgumentParser, subparsers, ServeSubcommand.subparser_init -> make_arg_parser -> FrontendArgs and
EngineArgs.add_cli_args), or the api_server module's `make_arg_parser(FlexibleArgumentParser())`; SGLang's
`prepare_server_args` parser (argparse.ArgumentParser + ServerArgs.add_cli_args). Nothing is installed: the
release's tree is put first on sys.path and the imports its code makes of what this interpreter lacks (and of the
GPU kernels, Triton and Ray) get a permissive stub module. Stubs stand for packages the argument definitions
only import (a class in an annotation, a function called at import time); the arguments, their types, choices,
actions and the parser's own rewriting are the release's code, run by the real argparse.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import io
import json
import os
import sys
import tempfile
import types
from contextlib import redirect_stderr, redirect_stdout

# Accelerator runtimes stay absent (never stubbed): a platform probe that imports one must find it missing.
ABSENT = {"libtpu", "amdsmi", "pynvml", "transformers_neuronx", "neuronx_distributed_inference", "torch_xla", "tpu_inference",
          "intel_extension_for_pytorch", "oneccl_bindings_for_pytorch", "habana_frameworks", "vllm_ascend", "torch_npu"}
STUB_VERSION = "999.0"  # a stubbed package's version: new enough for every version gate
HEAVY = {"ray", "torchvision", "torchaudio", "flashinfer", "vllm_flash_attn", "deep_gemm", "sgl_kernel"}


PATCHED_DUNDERS = {"__func__", "__class_validators__"}


class _Meta(type):
    """A stub class: any attribute is another stub class, calling it with one function returns the function."""

    def __getattr__(cls, name):
        if name in PATCHED_DUNDERS:  # what an engine's patch of a stubbed class takes apart
            return cls
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if f"{cls.__module__}.{cls.__name__}.{name}" in MODELLED:
            return MODELLED[f"{cls.__module__}.{cls.__name__}.{name}"]()
        return _stub_class(f"{cls.__module__}.{cls.__name__}", name)

    def __call__(cls, *args, **kwargs):
        if "_stub" not in cls.__dict__:  # the release's subclass of a stub: its own __init__
            return super().__call__(*args, **kwargs)
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # a decorator
        return super().__call__()

    def __getitem__(cls, item):
        return cls

    def __setitem__(cls, item, value):
        pass

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False


class Stub(metaclass=_Meta):
    _stub = True

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):  # msgspec.Struct-style class keywords
        pass

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        from pydantic_core import core_schema

        return core_schema.any_schema()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Stub()

    def __call__(self, *args, **kwargs):
        return args[0] if len(args) == 1 and callable(args[0]) and not kwargs else Stub()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __getitem__(self, item):
        return Stub()

    def __setitem__(self, item, value):
        pass

    def __add__(self, other):
        return other

    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__

    def __lt__(self, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __eq__(self, other):
        return isinstance(other, Stub)

    def __ne__(self, other):
        return not isinstance(other, Stub)

    def __hash__(self):
        return id(self)

    def __int__(self):
        return 0

    __index__ = __len__ = __int__

    def __float__(self):
        return 0.0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _stub_class(module: str, name: str) -> type:
    return _Meta(name, (Stub,), {"__module__": module, "_stub": True})


class _NoGpuDriver:
    """triton.runtime.driver on a machine without a GPU: asking for the active driver raises, as Triton does."""

    @property
    def active(self):
        raise RuntimeError("0 active drivers ([]). There should only be one.")


def _no_active_driver():
    return _NoGpuDriver().active


# What a stub answers as the real package would on this machine (no GPU), where an answer steers the import.
MODELLED = {"triton.runtime.driver": _NoGpuDriver, "triton.runtime.driver.active": _no_active_driver}


class StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if f"{self.__name__}.{name}" in MODELLED:
            return MODELLED[f"{self.__name__}.{name}"]()
        value = _stub_class(self.__name__, name)
        setattr(self, name, value)
        return value


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stubs what the release's own code imports and this interpreter lacks (or must not load: HEAVY)."""

    def __init__(self, root: str, metadata: str):
        self.root = os.path.realpath(root) + os.sep
        self.metadata = metadata  # where a stubbed package's distribution metadata is written (version checks)
        self.stubbed: set[str] = set()
        self.absent: set[str] = set()

    def find_spec(self, name, path, target=None):
        top = name.partition(".")[0]
        if top in sys.stdlib_module_names or top in ABSENT or top in self.absent:
            return None
        if top in self.stubbed and top != "vllm" and top != "sglang":  # a stubbed package's submodules, whoever asks
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        if not self._asked_by_release():
            return None
        if top not in HEAVY and importlib.machinery.PathFinder.find_spec(name, path) is not None:
            return None
        if top not in self.stubbed:
            self.stubbed.add(top)
            _write_metadata(self.metadata, top, STUB_VERSION)
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = StubModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0"
        module.__file__ = os.path.join(self.root, "<stub>", *spec.name.split(".")) + ".py"
        return module

    def exec_module(self, module):
        pass

    def _asked_by_release(self) -> bool:
        """The import statement is in the release's code (not an optional import inside torch or pydantic)."""
        frame = sys._getframe(2)
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename.endswith(os.path.join("importlib", "util.py")) and frame.f_code.co_name == "find_spec":
                return False  # "is it installed?" is answered truly
            if not filename.startswith("<frozen") and "importlib" not in filename:
                return os.path.realpath(filename).startswith(self.root)
            frame = frame.f_back
        return False


class ParseError(Exception):
    pass


def _raise(self, message):
    raise ParseError(message)


def vllm_parser(entry: str, cli_module: str):
    """(how, parse): the `vllm serve` subparser, or the api_server module's parser."""
    import importlib

    cli_args = importlib.import_module(cli_module)
    flexible = cli_args.FlexibleArgumentParser
    if entry == "serve":
        serve = importlib.import_module("vllm.entrypoints.cli.serve")
        parser = flexible(description="vLLM CLI")
        subparsers = parser.add_subparsers(required=False, dest="subparser")
        for command in serve.cmd_init():
            command.subparser_init(subparsers)
        return "vllm.entrypoints.cli.serve.cmd_init() under FlexibleArgumentParser", lambda words: parser.parse_args(["serve", *words])
    parser = cli_args.make_arg_parser(flexible(description="vLLM OpenAI-Compatible RESTful API server."))
    return f"{cli_module}.make_arg_parser(FlexibleArgumentParser())", parser.parse_args


def sglang_parser():
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return "argparse.ArgumentParser + sglang.srt.server_args.ServerArgs.add_cli_args", parser.parse_args


def outcome(engine: str, entry: str, parse, words: list[str]) -> dict:
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()) as err:
            try:
                args = parse(list(words))
            except SystemExit:  # a parser that prints its error itself
                said = err.getvalue().strip().splitlines()
                return {"ok": False, "error": said[-1] if said else "exit"}
    except ParseError as exc:
        return {"ok": False, "error": str(exc)}
    except Exception as exc:  # the release's own refusal (vLLM's FlexibleArgumentParser raises ValueError)
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    if engine == "vllm":
        # `vllm serve` puts model_tag into args.model (ServeSubcommand.cmd); the api_server module reads args.model only
        target = (getattr(args, "model_tag", None) if entry == "serve" else None) or getattr(args, "model", None)
        spec = getattr(args, "speculative_config", None)
    else:
        target = getattr(args, "model_path", None)
        spec = {k: v for k, v in vars(args).items() if k.startswith("speculative_") and v is not None}
    return {"ok": True, "error": None, "target": target, "spec": _plain(spec)}


def _plain(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def _write_metadata(where: str, name: str, version: str) -> None:
    info = os.path.join(where, f"{name}-{version}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as out:
        out.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _older_torch_cpu_queries() -> None:
    """CPU-feature queries older torch builds had and this one lacks (vLLM's CPU platform asks them before
    loading its kernels, which are absent here anyway): answered "no"."""
    try:
        import torch
    except ImportError:
        return
    cpu = getattr(torch._C, "_cpu", None)
    for name in ("_is_avx512_supported", "_is_avx2_supported", "_is_amx_tile_supported", "_is_avx512_bf16_supported"):
        if cpu is not None and not hasattr(cpu, name):
            setattr(cpu, name, lambda: False)


def build(engine: str, entry: str, cli_module: str | None):
    return vllm_parser(entry, cli_module or "") if engine == "vllm" else sglang_parser()


def main() -> None:
    root = sys.argv[1]
    request = json.load(sys.stdin)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # the CPU platform: no GPU probing at import
    sys.path.insert(0, root)
    # The engine's metadata as a CPU build's wheel installs it: releases before VLLM_TARGET_DEVICE pick the CPU
    # platform by the installed version's "+cpu" (vllm_version_matches_substr).
    metadata = tempfile.mkdtemp(prefix="release-parser-")
    _write_metadata(metadata, request["engine"], request["version"] + "+cpu")
    sys.path.insert(1, metadata)
    finder = StubFinder(root, metadata)
    if request["engine"] == "vllm":
        finder.absent.add("triton")  # vLLM runs without Triton (vllm/triton_utils' placeholders); a stub would lead torch on
    sys.meta_path.insert(0, finder)
    argparse.ArgumentParser.error = _raise  # the message, not an exit
    _older_torch_cpu_queries()
    entries = {}
    for entry, lines in request["entries"].items():
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                how, parse = build(request["engine"], entry, request.get("cli_module"))
        except BaseException as exc:  # noqa: BLE001 - the release could not be built here: said, the test decides
            if os.environ.get("RELEASE_PARSER_DEBUG"):
                import traceback

                traceback.print_exc()
            entries[entry] = {"built": None, "error": f"{type(exc).__name__}: {exc}"}
            continue
        entries[entry] = {"built": how, "error": None,
                          "outcomes": [outcome(request["engine"], entry, parse, words) for words in lines]}
    print(json.dumps({"entries": entries, "stubbed": sorted(finder.stubbed)}))


if __name__ == "__main__":
    main()
