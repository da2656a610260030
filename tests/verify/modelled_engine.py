"""A modelled vLLM or SGLang server for the client tests, speaking the endpoints and metric names that compat's
probes read from a real release (the report of `compat probe --engine sglang==X`).

Read from the release (not modelled): the /metrics sample names and kinds, the per-position label, the server
info path and its shape (SGLang: internal states as a list or merged, the acceptance key), the speculative
server-argument names, vLLM's /server_info JSON support.
Modelled (not the engine's code): the text streamed, the counters' arithmetic per request (vLLM: drafts and
accepted tokens per position from the given rates; SGLang: verify calls from the given mean accepted length),
other traffic (tokens the server counts that no verify request asked for), the API key check.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from server_fakes import FakeServer, Request, chat_events, prometheus_text, sse


@dataclass
class Behaviour:
    speculating: bool = True
    k: int = 3
    per_position: tuple[float, ...] = (0.7, 0.5, 0.3)   # vLLM: accepted at position i / drafts
    mean_accepted_length: float = 2.5                  # SGLang: completion tokens / verify calls
    other_tokens_per_request: int = 0                  # tokens generated meanwhile for someone else
    running_at_start: int = 0
    metrics: bool = True                               # SGLang: --enable-metrics
    dev_mode: bool = True                              # vLLM: VLLM_SERVER_DEV_MODE=1
    api_key: str | None = None
    text: str = "The quick brown fox jumps over the lazy dog. "
    draft_model: str = "/models/eagle3-drafter"
    delay: float = 0.0                                 # seconds between streamed events
    # the sweep's batch model: seconds per streamed event given the requests in flight, and tokens per event (one
    # event per engine step: a speculative step emits its accepted tokens together)
    pace: Callable[[int], float] | None = None
    tokens_per_event: int = 1
    tokenize_shift: int | None = None                  # answers POST /tokenize (ids shifted: another tokenizer)
    root: str | None = None                            # the model card's root (the path vLLM loaded)
    on_chat: Callable[[int], None] | None = None       # called with the count of chat requests so far


@dataclass
class ModelledEngine:
    report: dict                 # the probe report of the modelled release
    behaviour: Behaviour = field(default_factory=Behaviour)
    model: str = "org/target-8b"
    counters: dict[str, float] = field(default_factory=dict)
    per_pos: list[float] = field(default_factory=list)
    cum_accept: tuple[float, float] = (0.0, 0.0)   # SGLang: (accepted tokens, verify steps) since start
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    chats: int = 0

    @property
    def engine(self) -> str:
        return self.report["engine"]

    def serve(self) -> FakeServer:
        routes = {"GET /v1/models": self._models, "POST /v1/chat/completions": self._chat}
        if self.behaviour.tokenize_shift is not None:
            routes["POST /tokenize"] = self._tokenize
        if self.behaviour.metrics:
            routes["GET /metrics"] = self._metrics
        if self.engine == "vllm":
            routes["GET /version"] = lambda r: r.send(200, {"version": self.report["version"]})
            info = self.report["server_info_endpoint"]
            if self.behaviour.dev_mode and info.get("present"):
                routes[f"GET {info['path']}"] = self._vllm_info
        else:
            for path in self.report["server_info"]["paths"]:
                routes[f"GET {path['path']}"] = self._sglang_info
        self.per_pos = [0.0] * self.behaviour.k
        return FakeServer({route: self._guarded(h) for route, h in routes.items()})

    def _guarded(self, handler):
        def run(req: Request) -> None:
            key = self.behaviour.api_key
            if key and req.headers.get("Authorization") != f"Bearer {key}":
                req.send(401, {"error": {"message": "Unauthorized", "code": 401}})
                return
            handler(req)
        return run

    # -- OpenAI ------------------------------------------------------------------------------------
    def _models(self, req: Request) -> None:
        card = {"id": self.model, "object": "model", "owned_by": self.engine}
        if self.behaviour.root:
            card["root"] = self.behaviour.root
        req.send(200, {"object": "list", "data": [card]})

    def _tokenize(self, req: Request) -> None:
        body = req.json()
        text = body.get("prompt") or "".join(m["content"] for m in body.get("messages") or [])
        tokens = [ord(c) + (self.behaviour.tokenize_shift or 0) for c in text]
        req.send(200, {"count": len(tokens), "max_model_len": 4096, "tokens": tokens})

    def _chat(self, req: Request) -> None:
        body = req.json()
        if body.get("model") != self.model:
            req.send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
            return
        tokens = int(body["max_tokens"])
        words = (self.behaviour.text * (tokens // 9 + 1)).split(" ")[:tokens]
        pieces = [w + " " for w in words]
        self._count(tokens)
        events = chat_events(self.model, pieces, tokens if body.get("stream_options", {}).get("include_usage") else None)
        with self.lock:
            self.chats += 1
            self.in_flight += 1
            chats = self.chats
        if self.behaviour.on_chat:
            self.behaviour.on_chat(chats)
        try:
            if self.behaviour.pace is None:
                sse(req, events, delay=self.behaviour.delay)
            else:
                self._paced(req, events)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _paced(self, req: Request, events: list[dict]) -> None:
        """One event per engine step, each step as long as `pace(requests in flight)`: a batch that slows down."""
        import json

        b = self.behaviour
        head, content, tail = events[:1], events[1:-1] if events[-1].get("usage") else events[1:], \
            events[-1:] if events[-1].get("usage") else []
        steps = [content[i:i + b.tokens_per_event] for i in range(0, len(content), b.tokens_per_event)]
        req.start_chunked()
        for event in head:
            req.chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
        for step in steps:
            time.sleep(b.pace(self.in_flight))  # type: ignore[misc]
            merged = dict(step[-1])
            merged["choices"] = [{**step[-1]["choices"][0], "delta": {"content": "".join(e["choices"][0]["delta"]["content"] for e in step)}}]
            req.chunk(b"data: " + json.dumps(merged).encode() + b"\n\n")
        for event in tail:
            req.chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
        req.chunk(b"data: [DONE]\n\n")
        req.end_chunked()

    def _count(self, tokens: int) -> None:
        b = self.behaviour
        with self.lock:
            self._add("generation_tokens", tokens + b.other_tokens_per_request)
            if not b.speculating:
                return
            if self.engine == "vllm":
                drafts = math.ceil(tokens / (1 + sum(b.per_position)))
                self._add("num_drafts", drafts)
                self._add("num_draft_tokens", drafts * b.k)
                accepted = [round(drafts * r) for r in b.per_position]
                self._add("num_accepted_tokens", sum(accepted))
                self.per_pos = [x + a for x, a in zip(self.per_pos, accepted)]
            else:
                calls = math.ceil(tokens / b.mean_accepted_length)
                self._add("verify_calls", calls)
                a, c = self.cum_accept
                self.cum_accept = (a + tokens, c + calls)

    def _add(self, role: str, value: float) -> None:
        self.counters[role] = self.counters.get(role, 0.0) + value

    # -- metrics -------------------------------------------------------------------------------------
    def _series(self, fact: str, key: str) -> dict[str, dict]:
        return (self.report.get(fact) or {}).get(key) or {}

    def _metrics(self, req: Request) -> None:
        b = self.behaviour
        series: dict = {}
        kinds: dict[str, str] = {}
        spec_key = "counters" if self.engine == "vllm" else "series"
        roles = {**self._series("request_metrics", "series"), **(self._series("spec_decode_metrics", spec_key) if b.speculating else {})}
        with self.lock:
            for role, s in roles.items():
                kinds[s["sample"]] = s["kind"]
                if role == "num_accepted_tokens_per_pos":
                    label = self.report["spec_decode_metrics"]["position_label"]
                    series[s["sample"]] = {((label, str(i)),): v for i, v in enumerate(self.per_pos)}
                elif role == "requests_running":
                    series[s["sample"]] = b.running_at_start
                elif role == "accept_length":
                    series[s["sample"]] = b.mean_accepted_length if self.cum_accept[1] else 0.0
                elif s["kind"] == "gauge":
                    series[s["sample"]] = 0.0
                else:
                    series[s["sample"]] = self.counters.get(role, 0.0)
        req.send(200, prometheus_text(series, kinds), "text/plain; version=0.0.4")

    # -- info endpoints ----------------------------------------------------------------------------
    def _vllm_info(self, req: Request) -> None:
        b = self.behaviour
        spec = {"method": "eagle3", "model": b.draft_model, "num_speculative_tokens": b.k} if b.speculating else None
        if self.report["server_info_endpoint"].get("json_format") and "config_format=json" in req.path:
            req.send(200, {"vllm_config": {"model_config": {"model": self.model}, "speculative_config": spec}, "vllm_env": {}})
            return
        text = ("None" if spec is None else
                f"SpeculativeConfig(method='eagle3', model='{b.draft_model}', num_spec_tokens={b.k})")
        req.send(200, {"vllm_config": f"model='{self.model}', speculative_config={text}, tokenizer='{self.model}'"})

    def _sglang_info(self, req: Request) -> None:
        b, info = self.behaviour, self.report["server_info"]
        fields = [f["name"] for f in self.report["server_args"]["fields"] if f["name"].startswith("speculative_")]
        args = {f: None for f in fields}
        if b.speculating:
            values = {"speculative_algorithm": "EAGLE3", "speculative_draft_model_path": b.draft_model,
                      "speculative_num_steps": b.k, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": b.k + 1}
            args.update({k: v for k, v in values.items() if k in args})
        state: dict = {"last_gen_throughput": 0.0}
        accepted, calls = self.cum_accept
        if b.speculating and calls:
            state[info["accept_length_key"]] = accepted / calls
        answer = {"model_path": self.model, **args, "version": self.report["version"]}
        if info["internal_states"] == "list":
            answer[info["internal_states_key"]] = [state]
        else:
            answer.update(state)
        req.send(200, answer)
