"""Which server this is, from the server itself: OpenAI-compatible or not, the engine, its version, the served
model, and its speculative settings where it tells them.

Before the release is known, only what every release of each engine answers is asked: `/v1/models` (the
OpenAI API: its model cards say `owned_by: vllm|sglang`), vLLM's `/version`, SGLang's server info
(`/server_info`, before 0.5.6 `/get_server_info`): each engine's unit declares them (compat/engines/:
SERVER_OWNED_BY, SERVER_VERSION_PATHS, SERVER_INFO_PATHS and the keys only its info has). Once the release's source is read (facts.py), its own
endpoint and field names take over: vLLM's `/server_info` (only with VLLM_SERVER_DEV_MODE=1) for the method
and draft model, the per-position counters for the number of speculative tokens; SGLang's speculative
server arguments in its server info.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from compat import engines
from compat.core.errors import EXIT_REFUSED
from compat.verify.server.http import Client, HttpStatus, NotJson, ServerError, TooSlow



class NotOpenAICompatible(ServerError):
    exit_code = EXIT_REFUSED


@dataclass
class Identity:
    url: str
    engine: str
    version: str | None
    model: str
    models: list[str]
    evidence: dict[str, str] = field(default_factory=dict)   # fact -> where it came from
    info: dict | None = None                                  # SGLang's server info answer, when read
    notes: list[str] = field(default_factory=list)


@dataclass
class Speculation:
    speculating: bool | None          # None: the server does not say
    method: str | None = None
    draft_model: str | None = None
    num_speculative_tokens: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)   # as the server reports them
    evidence: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def served_models(client: Client) -> list[dict]:
    """`GET /v1/models`, the one endpoint every OpenAI-compatible server answers; exit 4 when it does not."""
    try:
        answer = client.get_json("/v1/models")
    except (HttpStatus, NotJson, TooSlow) as err:
        raise NotOpenAICompatible(f"{client.base_url} is not an OpenAI-compatible server: GET /v1/models: {err.message}",
                                  url=client.base_url, hint="give the base URL the server prints at start-up, e.g. "
                                                            "http://host:8000 (vllm serve) or http://host:30000 (SGLang)") from None
    data = answer.get("data") if isinstance(answer, dict) else None
    cards = [c for c in data if isinstance(c, dict) and isinstance(c.get("id"), str)] if isinstance(data, list) else []
    if not cards:
        raise NotOpenAICompatible(f"{client.base_url} is not an OpenAI-compatible server: GET /v1/models lists no model "
                                  "(expected {\"data\": [{\"id\": ...}]})", url=client.base_url)
    return cards


def identify(client: Client, *, engine: str | None = None, model: str | None = None) -> Identity:
    cards = served_models(client)
    ids = [c["id"] for c in cards]
    if model is not None and model not in ids:
        raise NotOpenAICompatible(f"{client.base_url} does not serve {model!r}; it serves {', '.join(ids)}",
                                  url=client.base_url, hint=f"--model {ids[0]}")
    chosen = model or ids[0]
    card = next(c for c in cards if c["id"] == chosen)
    identity = Identity(client.base_url, engine or "", None, chosen, ids, evidence={"model": "GET /v1/models"})
    if len(ids) > 1 and model is None:
        identity.notes.append(f"the server serves {len(ids)} models; measuring {chosen} (--model picks another)")
    owner = str(card.get("owned_by") or "").lower()
    owned = next((e for e in engines.all_engines() if e.server_owned_by == owner), None)
    if engine is None and owned is not None:
        identity.engine, identity.evidence["engine"] = owned.name, f"GET /v1/models: owned_by {owner!r}"
    for unit in engines.all_engines():
        if identity.engine in ("", unit.name):
            _version(client, identity, unit)
            _server_info(client, identity, unit)
    if not identity.engine:
        units = engines.all_engines()
        raise NotOpenAICompatible(
            f"{client.base_url} speaks the OpenAI API but is neither {' nor '.join(e.display_name for e in units)} as "
            "far as it says (no /version, no server info, owned_by " + (repr(owner) if owner else "absent") + ")",
            url=client.base_url, hint="name the engine if it is one: "
            + " or ".join(f"--engine {e.name}==VERSION" for e in units))
    if engine is not None:
        identity.evidence["engine"] = "--engine"
    return identity


def _version(client: Client, identity: Identity, unit: engines.Engine) -> None:
    """An endpoint answering only {"version": ...} (vLLM's /version)."""
    for path in unit.server_version_paths:
        try:
            answer = client.get_json(path)
        except (HttpStatus, NotJson, TooSlow):
            continue
        if isinstance(answer, dict) and isinstance(answer.get("version"), str) and len(answer) <= 3:
            identity.version = answer["version"]
            identity.evidence["version"] = f"GET {path}"
            if not identity.engine:
                identity.engine = unit.name
                identity.evidence["engine"] = f"GET {path} answers {{\"version\": ...}} ({unit.display_name}'s shape)"
            return


def _server_info(client: Client, identity: Identity, unit: engines.Engine) -> None:
    """The engine's server info (SGLang's /server_info, before 0.5.6 /get_server_info), told by keys only it has."""
    for path in unit.server_info_paths:
        try:
            answer = client.get_json(path)
        except (HttpStatus, NotJson, TooSlow):
            continue
        if isinstance(answer, dict) and any(key in answer for key in unit.server_info_keys):
            identity.info = answer
            identity.evidence["server_info"] = f"GET {path}"
            if isinstance(answer.get("version"), str):
                identity.version, identity.evidence["version"] = answer["version"], f"GET {path}: version"
            if not identity.engine:
                identity.engine = unit.name
                identity.evidence["engine"] = f"GET {path} answers {unit.display_name}'s server info"
            return


# -- speculative settings -------------------------------------------------------------------------

_TEXT_SPEC = re.compile(r"speculative_config=(None|SpeculativeConfig\((?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\))")
_TEXT_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()]+)")


def vllm_speculation(client: Client, endpoint: dict, counters_present: bool | None, positions: int | None) -> Speculation:
    """From /metrics (counters exist only when speculating; one per-position series per speculative token) and,
    when the server has it on, /server_info's speculative_config (JSON where the release can, else its text)."""
    found = Speculation(speculating=counters_present, num_speculative_tokens=positions or None)
    if counters_present is not None:
        found.evidence["speculating"] = "GET /metrics: the spec-decode counters " + ("are" if counters_present else "are not") + \
            " registered"
    if positions:
        found.evidence["num_speculative_tokens"] = "GET /metrics: per-position series"
    if not endpoint:
        found.notes.append("this release has no /server_info endpoint: the method and draft model are not reported")
        return found
    path = endpoint["path"] + ("?config_format=json" if endpoint.get("json_format") else "")
    try:
        answer = client.get_json(path)
    except (HttpStatus, NotJson, TooSlow):
        gate = endpoint.get("enabled_by")
        found.notes.append(f"the method and draft model are reported by {endpoint['path']}, which this server does not "
                           f"answer" + (f": start it with {gate}=1 ({endpoint.get('enabled_by_location')})" if gate else ""))
        return found
    config = answer.get(endpoint.get("config_key") or "vllm_config") if isinstance(answer, dict) else None
    spec = config.get("speculative_config", "absent") if isinstance(config, dict) else _from_text(config)
    if isinstance(spec, str):  # "absent": the answer does not carry it
        return found
    found.evidence.update({k: f"GET {path}" for k in ("method", "draft_model")})
    if spec is None:
        found.speculating, found.evidence["speculating"] = False, f"GET {path}: speculative_config None"
        return found
    if not isinstance(spec, dict):
        return found
    found.speculating = True
    found.settings = {k: v for k, v in spec.items() if k in ("method", "model", "num_speculative_tokens", "num_spec_tokens",
                                                             "draft_tensor_parallel_size")}
    found.method = spec.get("method")
    found.draft_model = spec.get("model")
    k = spec.get("num_speculative_tokens") or spec.get("num_spec_tokens")
    if isinstance(k, int):
        found.num_speculative_tokens, found.evidence["num_speculative_tokens"] = k, f"GET {path}"
    return found


def _from_text(config: Any) -> dict | None | str:
    """`str(VllmConfig)` (releases without ?config_format=json): its `speculative_config=SpeculativeConfig(...)`."""
    if not isinstance(config, str):
        return "absent"
    m = _TEXT_SPEC.search(config)
    if m is None:
        return "absent"
    if m.group(1) == "None":
        return None
    out: dict[str, Any] = {}
    for key, raw in _TEXT_FIELD.findall(m.group("body")):
        raw = raw.strip()
        out[key] = raw[1:-1] if raw[:1] in "'\"" else int(raw) if raw.isdigit() else raw
    return out


def sglang_speculation(identity: Identity, fields: tuple[str, ...]) -> Speculation:
    """SGLang reports its server arguments in its server info, under the release's own field names."""
    info = identity.info or {}
    path = identity.evidence.get("server_info", "server info")
    settings = {f: info[f] for f in fields if f in info}
    if not settings:
        return Speculation(None, notes=["the server info does not carry the speculative server arguments"])
    algorithm = settings.get("speculative_algorithm")
    found = Speculation(algorithm not in (None, "", "NONE"), method=algorithm,
                        draft_model=settings.get("speculative_draft_model_path"), settings=settings,
                        evidence={"speculating": f"{path}: speculative_algorithm", "method": f"{path}: speculative_algorithm",
                                  "draft_model": f"{path}: speculative_draft_model_path"})
    draft_tokens = settings.get("speculative_num_draft_tokens")
    if isinstance(draft_tokens, int) and draft_tokens > 1:
        # SGLang's own count of proposed drafts per verify step (tokenizer_manager: num_draft_tokens - 1)
        found.num_speculative_tokens = draft_tokens - 1
        found.evidence["num_speculative_tokens"] = f"{path}: speculative_num_draft_tokens - 1"
    return found
