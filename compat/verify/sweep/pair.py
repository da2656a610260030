"""The two servers of a sweep, and whether they make a fair pair: the speculative server and its baseline must
serve the same model with the same tokenizer, and the baseline must not speculate. Otherwise the sweep refuses
before any request, naming the difference (exit 2: --baseline names the wrong server).

The model is compared by what `/v1/models` says (vLLM's model card `root`, the path it loaded; else the served
id), the tokenizer by the token ids both servers give the same probe texts and the same chat conversation
(`POST /tokenize`, vLLM's tokenizer endpoint; a server without it is said, not guessed at). Whether the baseline
speculates is read the way verify reads it for any server: vLLM registers its spec-decode counters only when
speculating, SGLang reports its speculative algorithm in its server info.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from compat.core.errors import EXIT_USAGE, CompatError
from compat.verify.server.detect import Identity, Speculation, served_models
from compat.verify.server.facts import ReleaseFacts
from compat.verify.server.http import Client, HttpStatus, NotJson, TooSlow

PROBE_TEXTS = ("def fibonacci(n):\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)",
               "Résumé: 3.14159 × 2 = 6.28318; naïve café, 東京, ½ — ok?")
PROBE_CHAT = ({"role": "user", "content": "Summarise the water cycle in one sentence."},)
TOKENIZE_PATHS = ("/tokenize", "/v1/tokenize")


class BaselineMismatch(CompatError):
    """--baseline is not the same target without speculation."""

    exit_code = EXIT_USAGE


@dataclass
class Side:
    """One server of the sweep, as it said it is."""

    client: Client
    stream: Client
    identity: Identity
    facts: ReleaseFacts
    speculation: Speculation
    info_path: str | None


@dataclass
class Pair:
    model: str                      # what both serve, in words
    tokenizer: str                  # how the tokenizers were compared, in words
    tokenizer_compared: bool
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"model": self.model, "tokenizer": self.tokenizer, "tokenizer_compared": self.tokenizer_compared,
                "notes": self.notes}


def check_pair(server: Side, baseline: Side) -> Pair:
    notes: list[str] = []
    _not_speculating(baseline)
    model = _same_model(server, baseline, notes)
    tokenizer, compared = _same_tokenizer(server, baseline)
    if server.identity.engine != baseline.identity.engine or server.identity.version != baseline.identity.version:
        notes.append(f"the baseline runs {baseline.identity.engine} {baseline.identity.version}, the server "
                     f"{server.identity.engine} {server.identity.version}: the speed-up compares the releases too")
    return Pair(model, tokenizer, compared, notes)


def _not_speculating(baseline: Side) -> None:
    spec = baseline.speculation
    if spec.speculating:
        how = spec.evidence.get("speculating", "it says so")
        raise BaselineMismatch(f"--baseline {baseline.client.base_url} speculates ({how}): a baseline is the same "
                               "target served without speculation",
                               hint="start the target without --speculative-config (vLLM) or --speculative-algorithm "
                                    "(SGLang) and give that URL to --baseline")


def _card_model(side: Side) -> tuple[str, str]:
    """(what the server loaded, where that was read): the model card's root (vLLM), else the served id."""
    cards = {c["id"]: c for c in served_models(side.client)}
    card = cards.get(side.identity.model) or {}
    root = card.get("root")
    if isinstance(root, str) and root:
        return root, "GET /v1/models: root"
    return side.identity.model, "GET /v1/models: id"


def _same_model(server: Side, baseline: Side, notes: list[str]) -> str:
    ours, ours_from = _card_model(server)
    theirs, theirs_from = _card_model(baseline)
    if ours == theirs:
        return f"{ours} on both ({ours_from})"
    if _name(ours) != _name(theirs):
        raise BaselineMismatch(f"the servers serve different models: {server.client.base_url} serves {ours} "
                               f"({ours_from}), --baseline {baseline.client.base_url} serves {theirs} ({theirs_from})",
                               hint="the baseline must serve the speculative server's target, without speculation")
    notes.append(f"the servers load {_name(ours)} from different places ({ours} and {theirs}): the tokenizers are "
                 "compared to tell")
    return f"{_name(ours)} on both ({ours_from})"


def _name(model: str) -> str:
    return posixpath.basename(model.rstrip("/")) or model


def _tokens(side: Side, body: dict) -> list[int] | None:
    for path in TOKENIZE_PATHS:
        try:
            answer = side.client.post_json(path, {"model": side.identity.model, **body})
        except (HttpStatus, NotJson, TooSlow):
            continue
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if isinstance(tokens, list) and all(isinstance(t, int) for t in tokens):
            return tokens
    return None


def _same_tokenizer(server: Side, baseline: Side) -> tuple[str, bool]:
    probes: list[tuple[str, dict[str, Any], str]] = [("text", {"prompt": text}, text) for text in PROBE_TEXTS]
    probes.append(("chat", {"messages": list(PROBE_CHAT), "add_generation_prompt": True}, PROBE_CHAT[0]["content"]))
    compared = 0
    for kind, body, shown in probes:
        ours, theirs = _tokens(server, body), _tokens(baseline, body)
        if ours is None or theirs is None:
            missing = server.client.base_url if ours is None else baseline.client.base_url
            return f"not compared: {missing} does not answer POST /tokenize (the greedy outputs are compared)", False
        if ours != theirs:
            at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            what = "the chat template applied to" if kind == "chat" else "the text"
            raise BaselineMismatch(
                f"the servers tokenize differently: {what} {shown[:60]!r} is {len(ours)} tokens on "
                f"{server.client.base_url} and {len(theirs)} on --baseline {baseline.client.base_url}, first "
                f"differing at token {at} ({ours[at] if at < len(ours) else 'end'} against "
                f"{theirs[at] if at < len(theirs) else 'end'})",
                hint="serve the same target and tokenizer (--tokenizer, the chat template) on both")
        compared += 1
    return f"the same token ids on both for {compared} probes (POST /tokenize: {len(PROBE_TEXTS)} texts and a chat " \
           "conversation with its template)", True
