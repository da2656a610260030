"""Launch lines as manifests write them, into words that know their line.

Three shapes cover the formats: a container's `command` + `args` lists (Kubernetes, KServe, LWS, compose,
the charts' values), a shell script (`sh -c "pip install ... && exec vllm serve ..."`, a SkyPilot `run:`), and
a mapping of engine arguments (Ray Serve's `engine_kwargs`). Kubernetes expands `$(VAR)` in command and args
from the container's env before the process starts (kubernetes.io "Define a command and arguments for a
container": "$(VAR_NAME)"; `$$` escapes it): that is done here too, so the words are the ones the engine sees.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import yaml

from compat import engines
from compat.launch_line import PYTHON
from compat.manifests import nodes
from compat.manifests.model import Where, Word
from compat.manifests.nodes import Doc

ENV_PREFIXES = ("VLLM_", "SGLANG_", "SGL_", "HF_", "HUGGING_FACE_", "TRANSFORMERS_")
SHELLS = re.compile(r"^(.*/)?(ba|da|z|k)?sh$")
K8S_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def entry_index(texts: list[str]) -> int | None:
    """Where an engine's entry point starts in these words (`vllm serve`, `python -m vllm.entrypoints...`,
    `python -m sglang.launch_server`), or None."""
    units = engines.all_engines()
    commands = [c for unit in units for c in unit.launch_commands]
    modules = {m for unit in units for m in unit.launch_modules}
    for i, word in enumerate(texts):
        if any(word.rsplit("/", 1)[-1] == c[0] and texts[i + 1:i + len(c)] == list(c[1:]) for c in commands):
            return i
        if PYTHON.match(word) and i + 2 < len(texts) and texts[i + 1] == "-m" and texts[i + 2] in modules:
            return i
    return None


def list_words(doc: Doc, node: yaml.Node | None, path: tuple[str | int, ...]) -> list[Word]:
    """A list of strings (a container's command or args), each item a word at its own line; a single string
    (compose's `command: vllm serve ...`) is split as a shell would."""
    if isinstance(node, yaml.ScalarNode):
        return [Word(w, doc.where(node), path, "string") for w in _split(nodes.scalar(node) or "")]
    out = []
    for i, item in enumerate(nodes.seq(doc, node)):
        text = nodes.scalar(item)
        if text is not None:
            out.append(Word(text, doc.where(item), (*path, i), "list"))
    return out


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text.replace("\\\n", " "))
    except ValueError:
        return text.split()


def shell_script(words: list[Word]) -> tuple[Word, list[Word]] | None:
    """`sh -c SCRIPT` (in command, or split between command and args): the script's word, and what follows it."""
    texts = [w.text for w in words]
    for i, text in enumerate(texts[:-1]):
        if SHELLS.match(text):
            rest = texts[i + 1:]
            flags = next((j for j, t in enumerate(rest) if t.startswith("-") and "c" in t[1:]), None)
            if flags is not None and i + 1 + flags + 1 < len(words):
                return words[i + 1 + flags + 1], words[i + 1 + flags + 2:]
    return None


def script_words(doc: Doc, node: yaml.Node | None, script: str, where: Where, path: tuple[str | int, ...],
                 env: dict[str, str] | None = None, notes: list[str] | None = None) -> list[Word]:
    """The words of the engine's command in a shell script (compat/manifests/shell.py reads it as sh does): from its
    entry point to the end of that command (`&&`, `;`, `|`, `&`, a newline), with the `VAR=value` words and `exec`
    before it; redirections (`2>&1`, `> log`) are the shell's, not arguments; `$VAR` is expanded from `env` (the
    container's environment), and what is not is said in `notes`. Each word on its line."""
    from compat.manifests import shell

    found = shell.tokens(script)
    texts = [t.text if t.kind == "word" else "\x00" for t in found]
    start = entry_index(texts)
    if start is None:
        return []
    end = next((j for j in range(start, len(found)) if found[j].kind == "separator"), len(found))
    first = start
    while first > 0 and found[first - 1].kind == "word" and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", texts[first - 1])
                                                             or texts[first - 1] == "exec"):
        first -= 1
    out: list[Word] = []
    for token in found[first:end]:
        if token.kind != "word" or (token.text == "exec" and not out):
            continue
        text, left = shell.expand(token, env or {})
        if left and notes is not None:
            notes.append(f"{', '.join(left)} in the engine's command is expanded by the shell at start-up, from an "
                         "environment the manifest does not set: read as written")
        line = nodes.line_in_scalar(doc, node, token.start) if node is not None else where.line
        out.append(Word(text, Where(where.file, line), path, "string"))
    return out


def expand_k8s(words: list[Word], env: dict[str, str]) -> list[Word]:
    """`$(VAR)` replaced by the container env's literal value (an unknown one is left as written, as Kubernetes does)."""
    def one(text: str) -> str:
        return K8S_VAR.sub(lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), text)

    return [Word(one(w.text), w.where, w.path, w.holder) if "$" in w.text else w for w in words]


def k8s_env(doc: Doc, node: yaml.Node | None, path: tuple[str | int, ...]) -> tuple[dict[str, str], dict[str, Word], list[str]]:
    """A container's `env` list: every literal value (for $(VAR)), the engine's own variables as words, and the
    ones whose value is not written here (valueFrom: a Secret, a ConfigMap, a field)."""
    values: dict[str, str] = {}
    engine_env: dict[str, Word] = {}
    unread = []
    for i, item in enumerate(nodes.seq(doc, node)):
        name = nodes.text(doc, item, "name")
        if not name:
            continue
        value_node = nodes.get(doc, item, "value")
        value = nodes.scalar(value_node)
        if value is None and nodes.get(doc, item, "valueFrom") is not None:
            if name.startswith(ENV_PREFIXES):
                unread.append(f"env {name} comes from valueFrom (not written in the manifest)")
            continue
        values[name] = value or ""
        if name.startswith(ENV_PREFIXES):
            engine_env[name] = Word(value or "", doc.where(value_node or item), (*path, i, "value"), "word")
    return values, engine_env, unread


def map_env(doc: Doc, node: yaml.Node | None, path: tuple[str | int, ...]) -> dict[str, Word]:
    """An environment as a mapping (compose `environment:` map, Ray `env_vars`, SkyPilot `envs`) or a list of
    `NAME=value` strings (compose): the engine's own variables as words."""
    out: dict[str, Word] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in nodes.items(doc, node):
            name = nodes.scalar(key) or ""
            if name.startswith(ENV_PREFIXES):
                out[name] = Word(nodes.scalar(value) or "", doc.where(value), (*path, name), "word")
    for i, item in enumerate(nodes.seq(doc, node)):
        name, eq, given = (nodes.scalar(item) or "").partition("=")
        if eq and name.startswith(ENV_PREFIXES):
            out[name] = Word(given, doc.where(item), (*path, i), "string")
    return out


def kwargs_words(doc: Doc, node: yaml.Node | None, path: tuple[str | int, ...]) -> list[Word]:
    """Engine keyword arguments (Ray Serve's engine_kwargs) as the CLI words vLLM's EngineArgs reads them as:
    `key_name: value` is `--key-name value` (a dict is JSON, True a bare flag, a list its items), each word at
    its key's line; --fix edits the mapping itself."""
    out: list[Word] = []
    for key, value in nodes.items(doc, node):
        name = nodes.scalar(key)
        if not name:
            continue
        where = doc.where(key)
        option = "--" + name.replace("_", "-")
        here = (*path, name)
        data: Any = nodes.plain(doc, value)
        if data is True:
            out.append(Word(option, where, here, "kwargs"))
        elif data is False or data is None:
            continue
        elif isinstance(data, (dict, list)) and name.endswith("config"):
            out += [Word(option, where, here, "kwargs"), Word(json.dumps(data), doc.where(value), here, "kwargs")]
        elif isinstance(data, list):
            out += [Word(option, where, here, "kwargs"), *(Word(str(v), doc.where(value), here, "kwargs") for v in data)]
        else:
            out += [Word(option, where, here, "kwargs"), Word(str(data), doc.where(value), here, "kwargs")]
    return out
