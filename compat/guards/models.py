"""What the guard reader models, because the release computes it in code no guard reads: a model's config built from a
path, and the platform. Each is small and said here (docs/doctor.md lists them):

- a model's config (`ModelConfig(model=PATH, ...)`, `ModelConfig.from_server_args(args)`): the config.json of PATH as
  `hf_config` (a key the file lacks is absent), `hf_text_config` (its `text_config`, else itself), `architectures`,
  `model` (the path as given); `max_model_len` and `quantization` as given, else unknown when config.json could set them;
  its `hf_overrides` applied (a dict's keys set, a function of the program's run on the config); `get_vocab_size()`;
  every other attribute unknown. A path that is neither the target nor the drafter: unknown.
- a transformers config's `update(d)` sets d's keys; `to_dict()` gives its keys.
- a model's files: `os.path.join` of known strings, `os.path.exists`/`isdir`/`isfile` of a model the line names or its
  config.json, `json.load(open(its config.json))`: its config; `get_config(path)`: its hf_config;
- an environment switch (SGLang's `envs.NAME.get()`): the line's `NAME=value`, else the default environ.py declares;
- the platform (`doctor --platform`): `current_platform.is_cuda()` and its siblings, `is_cuda_alike()` (CUDA or ROCm),
  SGLang's `is_cuda()`/`is_hip()`/`is_npu()`/`is_cpu()`/`is_xpu()`, and `get_device()`: each answers for that
  platform; anything else the platform says is unknown.
"""

from __future__ import annotations

from typing import Any

from compat.guards.calls import Calls as Interpreter
from compat.guards.outcome import FunctionRef, Native, Site
from compat.guards.values import Obj, Unknown

# platform -> the names of the platform predicates that are true on it (vLLM's Platform.is_*, SGLang's utils.is_*)
TRUE_ON: dict[str, tuple[str, ...]] = {
    "cuda": ("is_cuda", "is_cuda_alike"), "rocm": ("is_rocm", "is_hip", "is_cuda_alike"), "cpu": ("is_cpu",),
    "tpu": ("is_tpu",), "xpu": ("is_xpu",)}
PREDICATES = ("is_cuda", "is_rocm", "is_hip", "is_cuda_alike", "is_cpu", "is_tpu", "is_xpu", "is_npu", "is_hpu",
              "is_musa", "is_out_of_tree", "is_neuron", "is_mps")
DEVICE = {"cuda": "cuda", "rocm": "cuda", "cpu": "cpu", "tpu": "tpu", "xpu": "xpu"}  # torch's device type


def hf_config(config: dict[str, Any], label: str) -> Obj:
    """A transformers config as its config.json gives it (nested configs as objects)."""
    attrs = {key: hf_config(value, f"{label}.{key}") if isinstance(value, dict) and key.endswith("config") else value
             for key, value in config.items()}
    obj = Obj(label, attrs, closed=True, kind="hf_config")

    def update(values: Any) -> None:
        if isinstance(values, dict):
            obj.attrs.update(values)

    obj.attrs["update"] = Native(update)
    obj.attrs["to_dict"] = Native(lambda: {k: v for k, v in obj.to_dict().items() if not isinstance(v, Native)})
    obj.attrs["get_text_config"] = Native(lambda *a, **k: text_config(obj))
    return obj


def text_config(config: Obj) -> Any:
    inner = config.attrs.get("text_config")
    return inner if isinstance(inner, Obj) else config


class ModelView(Obj):
    """A model config: its `architectures` are its hf_config's, whatever replaced that since (an EAGLE wrapper)."""

    def get(self, name: str, default: Any = None, *, with_default: bool = False) -> Any:
        if name == "architectures" and name not in self.attrs:
            hf = self.attrs.get("hf_config")
            found = hf.get("architectures", None, with_default=True) if isinstance(hf, Obj) else Unknown(f"{self.label}.architectures")
            return [] if found is None else found
        return super().get(name, default, with_default=with_default)


def registry(interp: Interpreter | None, facts: dict[str, Any] | None) -> Obj:
    """The model registry: an architecture it lists is taken; one it does not may still be taken by the Transformers
    backend (transformers' to say), so that raise is one that may happen, at the registry's own raise."""
    def inspect(architectures: Any, *args: Any, **kwargs: Any) -> Any:
        check_registered(interp, facts, architectures)
        first = architectures[0] if isinstance(architectures, list) and architectures else Unknown("the architecture")
        return (Unknown("the model's info"), first)

    return Obj("registry", {"inspect_model_cls": Native(inspect)}, kind="registry")


def check_registered(interp: Interpreter | None, facts: dict[str, Any] | None, architectures: Any) -> None:
    if interp is None or not facts or not isinstance(architectures, list) or not architectures:
        return
    known = facts.get("architectures") or []
    if any(a in known for a in architectures):
        return
    site = facts.get("raise") or {}
    if site:
        message = f"Model architectures {architectures} are not supported for now. Supported architectures: ..."
        interp.may_raise(Site(site["file"], site["line"], site["function"], "ValueError", message),
                         f"the registry lists none of {architectures}; whether the Transformers backend takes it is "
                         "transformers' to say")


def model_config(interp: Interpreter | None, path: str, config: dict[str, Any] | None, given: dict[str, Any], label: str,
                 registered: dict[str, Any] | None = None) -> Any:
    """The model config the release builds for `path` (its config.json `config`), with the keywords it is given."""
    if config is None:
        return Unknown(f"the config of {path}")
    hf = hf_config(dict(config), f"{label}.hf_config")
    overrides = given.get("hf_overrides")
    if isinstance(overrides, dict):
        hf.attrs.update(overrides)
    elif isinstance(overrides, (FunctionRef, Native)) and interp is not None:
        hf = interp.call_value(overrides, [hf])
    elif overrides is not None:
        return Unknown(f"{label} built with hf_overrides={overrides!r}")
    if not isinstance(hf, Obj):
        return Unknown(f"{label}.hf_config")
    text = text_config(hf)
    obj = ModelView(label, kind="model_config")
    archs = hf.get("architectures", None, with_default=True)
    check_registered(interp, registered, archs)
    max_len = given.get("max_model_len")
    quantization = given.get("quantization")
    quantized = "quantization_config" in config or (isinstance(text, Obj) and text.has("quantization_config"))
    obj.attrs.update({
        "model": path, "model_weights": given.get("model_weights", ""), "hf_config": hf, "hf_text_config": text,
        "max_model_len": max_len if max_len is not None else Unknown(f"{label}.max_model_len (derived from the config)"),
        "quantization": quantization if quantization is not None else (Unknown(f"{label}.quantization (from the checkpoint)")
                                                                      if quantized else None),
        "hf_overrides": overrides, "registry": registry(interp, registered),
        "get_vocab_size": Native(lambda: text.get("vocab_size") if isinstance(text, Obj) else Unknown("vocab_size")),
    })
    for key in ("tokenizer", "trust_remote_code", "revision", "dtype", "seed", "enforce_eager", "max_logprobs",
                "tokenizer_mode", "tokenizer_revision", "code_revision", "config_format", "runner"):
        if key in given and given[key] is not None:
            obj.attrs[key] = given[key]
    if obj.attrs.get("tokenizer") is None and "tokenizer" in given:
        obj.attrs["tokenizer"] = path
    return obj


def platform_object(platform: str) -> Obj:
    true = TRUE_ON.get(platform, ())
    attrs: dict[str, Any] = {name: Native(lambda on=(name in true): on) for name in PREDICATES}
    attrs["device_type"] = DEVICE.get(platform, platform)
    attrs["device_name"] = DEVICE.get(platform, platform)
    return Obj("current_platform", attrs, kind="platform")


def platform_calls(platform: str) -> dict[str, Any]:
    """SGLang's module-level predicates (`is_cuda()`) and `get_device()`, answered for the platform."""
    true = TRUE_ON.get(platform, ())
    calls: dict[str, Any] = {name: (lambda interp, args, kwargs, on=(name in true): on) for name in PREDICATES}
    calls["get_device"] = lambda interp, args, kwargs: DEVICE.get(platform, platform)
    return calls


def file_calls(models: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The few file-system questions the validation code asks about the models the line names."""
    import posixpath

    def known(path: Any) -> str | None:
        if not isinstance(path, str):
            return None
        for name in models:
            if path in (name, name.rstrip("/") + "/config.json"):
                return name
        return None

    def join(interp: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return posixpath.join(*args) if args and all(isinstance(a, str) for a in args) else Unknown("a path")

    def exists(interp: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return True if args and known(args[0]) else Unknown(f"whether {args[0] if args else 'a path'} exists")

    def opened(interp: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = known(args[0]) if args else None
        return Obj(f"open({args[0]})", {"config": models[name]}, kind="file") if name else Unknown("a file")

    def load(interp: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        handle = args[0] if args else None
        return dict(handle.attrs["config"]) if isinstance(handle, Obj) and handle.kind == "file" else Unknown("json.load(...)")

    def config(interp: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = known(args[0]) if args else None
        return hf_config(models[name], f"get_config({name})") if name else Unknown("get_config(...)")

    return {"os.path.join": join, "os.path.exists": exists, "os.path.isdir": exists, "os.path.isfile": exists,
            "open": opened, "json.load": load, "get_config": config}


def environment(declared: dict[str, dict[str, Any]], given: dict[str, str]) -> Obj:
    """`envs.NAME.get()`: the line's value parsed as environ.py's kind, else its declared default."""
    attrs: dict[str, Any] = {}
    for name, spec in declared.items():
        kind = spec.get("kind", "")
        if name in given:
            value: Any = _parsed(kind, given[name])
        else:
            value = spec.get("default")
        attrs[name] = Obj(f"envs.{name}", {"get": Native(lambda v=value: v)}, kind="env")
    return Obj("envs", attrs, kind="envs")


def _parsed(kind: str, text: str) -> Any:
    if kind == "EnvBool":
        low = text.lower()
        return True if low in ("true", "1", "yes", "y") else False if low in ("false", "0", "no", "n") else Unknown(text)
    if kind in ("EnvInt", "EnvFloat"):
        try:
            return int(text) if kind == "EnvInt" else float(text)
        except ValueError:
            return Unknown(text)
    return text
