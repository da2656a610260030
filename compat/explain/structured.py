"""A log line that is a JSON record: the text lines it carries, and who wrote it.

Logs reach users as JSON as often as as text:
- vLLM >= 0.32 with its JSON formatter (vllm/logger.py: `formatter == "json"` ->
  pythonjsonlogger's JsonFormatter on `JSON_FORMAT`, vllm/logging_utils/formatter.py:7-9, 0.32.0-0.34.0):
  `{"asctime", "levelname", "name", "processName", "process", "message", "exc_info"}`, the traceback of
  `logger.exception(...)` inside `exc_info` as one string;
- Docker's json-file driver (`/var/lib/docker/containers/ID/ID-json.log`): `{"log": "<one line, with its own
  prefixes>\\n", "stream", "time"}`; Kubernetes' log collectors keep that form;
- `journalctl -o json`: `{"MESSAGE", "_PID", "SYSLOG_IDENTIFIER", "PRIORITY", ...}`;
- cloud exports: `{"textPayload": ...}`, `{"jsonPayload": {"message": ...}}`.
Each text field is split into its lines; each line is then read as any other (compat/explain/logline.py removes
the prefixes it carries: Docker's `log` holds the engine's line as written). A line cut short (text.py caps a line)
is read for the string fields it still holds.
"""

from __future__ import annotations

import json
import re

TEXT_KEYS = ("message", "msg", "log", "MESSAGE", "textPayload", "event")  # the record's own text, the first found
MORE_KEYS = ("exc_info", "exc_text", "stack_info", "traceback", "stack_trace", "error.stack")  # what follows it
LEVEL_KEYS = ("levelname", "level", "severity")
_STRING_FIELD = re.compile(r'"([\w.]+)"\s*:\s*"((?:[^"\\]|\\.)*)("?)')


def record_of(text: str) -> dict | None:
    """The JSON object a line holds (its string fields only, when the line was cut short), or None."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except RecursionError:  # `{{{{...`: not a record
        return None
    except ValueError:
        return _fields_of_cut(text)
    if not isinstance(value, dict):
        return None
    payload = value.get("jsonPayload")
    if isinstance(payload, dict):
        value = {**payload, **{k: v for k, v in value.items() if k != "jsonPayload"}}
    return value


def _fields_of_cut(text: str) -> dict | None:
    """The string fields of a JSON line cut short: `"key": "value"` pairs, the last one possibly unterminated."""
    fields: dict[str, str] = {}
    for found in _STRING_FIELD.finditer(text):
        raw = found.group(2)
        if not found.group(3):
            raw = re.sub(r"\\(?:u[0-9a-fA-F]{0,3})?$", "", raw)  # an escape cut in half
        try:
            fields[found.group(1)] = json.loads(f'"{raw}"')
        except ValueError:
            continue
    return fields if any(key in fields for key in TEXT_KEYS) else None


def lines_of(record: dict) -> list[str] | None:
    """The text lines the record carries (its message, then its traceback), or None when it carries no text."""
    text = next((record[key] for key in TEXT_KEYS if isinstance(record.get(key), str)), None)
    if text is None:
        return None
    parts = [text] + [record[key] for key in MORE_KEYS if isinstance(record.get(key), str) and record[key]]
    return [line for part in parts for line in part.rstrip("\n").split("\n")]


def writer_of(record: dict) -> str:
    """Who wrote the record, in the engines' own words (`EngineCore_DP0 pid=42`), or ""."""
    name = record.get("processName") or record.get("SYSLOG_IDENTIFIER") or record.get("_COMM") or ""
    pid = record.get("process") or record.get("_PID") or ""
    if not name and not pid:
        return ""
    return f"{name} pid={pid}".strip() if pid else str(name)


def level_of(record: dict) -> str | None:
    level = next((record[key] for key in LEVEL_KEYS if isinstance(record.get(key), str)), None)
    return level.upper() if level else None
