"""One streamed chat completion, timed: time to the first token, the time per token after it, the text and
the token count the server reports (`stream_options.include_usage`; counted from the events when absent).

TTFT is the time from sending the request to the first event that carries output (a content, reasoning or
finish delta); ITL here is the mean time per output token after the first, (last event - first) / (tokens - 1):
with speculative decoding one event often carries several tokens, so the gaps between events say less.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from compat.verify.server.http import Client, ServerError

CHAT = "/v1/chat/completions"


@dataclass
class Completion:
    index: int                      # the prompt's position in the run
    ok: bool
    text: str = ""
    tokens: int = 0                 # completion tokens (the server's usage, else events with output)
    tokens_from_usage: bool = False
    finish_reason: str | None = None
    sent: float = 0.0               # monotonic times
    first: float | None = None
    last: float | None = None
    error: str | None = None
    status: int | None = None       # an HTTP status the server refused the request with

    @property
    def ttft(self) -> float | None:
        return None if self.first is None else self.first - self.sent

    @property
    def itl(self) -> float | None:
        if self.first is None or self.last is None or self.tokens < 2:
            return None
        return (self.last - self.first) / (self.tokens - 1)

    @property
    def decode_tokens_per_s(self) -> float | None:
        itl = self.itl
        return 1 / itl if itl else None


def request_body(model: str, messages: list[dict], *, max_tokens: int, temperature: float, seed: int | None) -> dict:
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature,
                            "stream": True, "stream_options": {"include_usage": True}}
    if seed is not None:
        body["seed"] = seed
    return body


def complete(client: Client, index: int, body: dict, *, deadline: float) -> Completion:
    """Send one request; a refusal or a broken stream is recorded in the Completion, not raised (a run of
    a hundred survives one bad answer). Unreachable servers and bad keys still raise: nothing else would work."""
    from compat.verify.server.http import HttpStatus, NotJson, ResponseTooLarge, TooSlow

    result = Completion(index, ok=False, sent=time.monotonic())
    parts: list[str] = []
    events = 0
    try:
        for at, event in client.stream_events(CHAT, body, deadline=deadline):
            if not isinstance(event, dict):
                continue
            if event.get("error"):
                result.error = _error_text(event["error"])
                return result
            usage = event.get("usage")
            if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
                result.tokens, result.tokens_from_usage = usage["completion_tokens"], True
            for choice in event.get("choices") or ():
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta") or {}
                piece = delta.get("content") if isinstance(delta, dict) else None
                reasoning = delta.get("reasoning_content") or delta.get("reasoning") if isinstance(delta, dict) else None
                if piece is not None or reasoning is not None or choice.get("finish_reason"):
                    if result.first is None:
                        result.first = at
                    result.last = at
                    events += 1
                if isinstance(piece, str):
                    parts.append(piece)
                if choice.get("finish_reason"):
                    result.finish_reason = choice["finish_reason"]
    except HttpStatus as err:
        result.error, result.status = err.message, err.status
        return result
    except (TooSlow, NotJson, ResponseTooLarge) as err:
        result.error = err.message
        return result
    except ServerError:
        raise
    result.text = "".join(parts)
    if not result.tokens_from_usage:
        result.tokens = max(events - (1 if result.finish_reason else 0), 0)
    result.ok = result.first is not None
    if not result.ok:
        result.error = "the stream ended without any output"
    return result


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)[:500]
    return str(error)[:500]
