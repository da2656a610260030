"""The chat prompts verify sends: compat's built-in set (100 conversations written for this project: code,
math, summaries, multi-turn, instructions and a few others; data/chat_prompts.jsonl, shipped in the wheel),
or the user's traffic as OpenAI messages in JSONL (`--prompts FILE`).

A line of FILE is `{"messages": [{"role": ..., "content": ...}, ...]}` or the bare list of messages; blank
lines and lines starting with `#` are skipped. They go through /v1/chat/completions, so the server applies
the target's own chat template: what is measured is what the deployment's users send.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from compat.core.errors import RefusedError, UsageError

BUILTIN = "chat_prompts.jsonl"
ROLES = ("system", "user", "assistant", "tool", "developer")
MAX_FILE = 256 << 20


@dataclass(frozen=True)
class Prompt:
    id: str
    category: str
    messages: tuple[dict, ...]

    def to_request(self) -> list[dict]:
        return [dict(m) for m in self.messages]


@dataclass(frozen=True)
class PromptSet:
    source: str                 # "built-in" or the file's path
    prompts: tuple[Prompt, ...]

    def categories(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.prompts:
            out[p.category] = out.get(p.category, 0) + 1
        return out

    def take(self, count: int) -> PromptSet:
        """The first `count` prompts, cycling when there are fewer (every prompt before any repeats)."""
        chosen = [self.prompts[i % len(self.prompts)] for i in range(count)]
        return PromptSet(self.source, tuple(chosen))


def builtin() -> PromptSet:
    """The built-in set, its categories interleaved (code, math, summary, ...): any first N prompts mix them."""
    text = resources.files("compat.verify.server").joinpath("data", BUILTIN).read_text(encoding="utf-8")
    prompts = _parse(text, f"compat's built-in {BUILTIN}")
    by_category: dict[str, list[Prompt]] = {}
    for p in prompts:
        by_category.setdefault(p.category, []).append(p)
    queues = list(by_category.values())
    mixed = [queue[i] for i in range(max(map(len, queues))) for queue in queues if i < len(queue)]
    return PromptSet("built-in", tuple(mixed))


def from_file(path: str | Path) -> PromptSet:
    file = Path(path).expanduser()
    try:
        if file.stat().st_size > MAX_FILE:
            raise RefusedError(f"--prompts {file}: larger than {MAX_FILE >> 20} MiB", hint="take a sample of it")
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--prompts {file}: no such file") from None
    except IsADirectoryError:
        raise RefusedError(f"--prompts {file}: a directory, not a JSONL file") from None
    except UnicodeDecodeError:
        raise RefusedError(f"--prompts {file}: not UTF-8 text", hint="one JSON object per line, UTF-8") from None
    except OSError as err:
        raise RefusedError(f"--prompts {file}: cannot read it ({err.strerror})") from None
    prompts = _parse(text, str(file))
    if not prompts:
        raise RefusedError(f"--prompts {file}: no conversation in it", hint='one per line: {"messages": [{"role": "user", "content": "..."}]}')
    return PromptSet(str(file), tuple(prompts))


def _parse(text: str, where: str) -> list[Prompt]:
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as err:
            raise RefusedError(f"{where}:{number}: not JSON ({getattr(err, 'msg', 'nested too deeply')})",
                               hint='one JSON object per line: {"messages": [{"role": "user", "content": "..."}]}') from None
        messages = record.get("messages") if isinstance(record, dict) else record
        problem = _check(messages)
        if problem:
            raise RefusedError(f"{where}:{number}: {problem}",
                               hint='each line: {"messages": [{"role": "user", "content": "..."}]} (OpenAI chat messages)')
        ident = record.get("id") if isinstance(record, dict) else None
        category = record.get("category") if isinstance(record, dict) else None
        out.append(Prompt(str(ident or f"line-{number}"), str(category or "user"), tuple(messages)))  # type: ignore[arg-type]
    return out


def _check(messages: object) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "expected a non-empty list of messages (or an object with \"messages\")"
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"message {i} is not an object"
        if m.get("role") not in ROLES:
            return f"message {i} has role {m.get('role')!r}; expected one of {', '.join(ROLES)}"
        if not isinstance(m.get("content"), (str, list)):
            return f"message {i} has no text content"
    return None
