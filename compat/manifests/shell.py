"""A shell script's words as POSIX sh reads them: which text is an argument of the engine's command, and which is shell.

A container's `sh -c "vllm serve ... 2>&1 | tee /log"` (and a SkyPilot `run:`) hands the script to a shell: `|`, `&&`,
`||`, `;`, `&` and newlines end a command, `2>&1`, `> file`, `>> file`, `< file` are redirections (never arguments),
quotes group, a backslash escapes, `$VAR` / `${VAR}` are expanded from the environment before the engine sees the word
(`$(...)` and backquotes run a command). This reads those rules (POSIX Shell Command Language, 2.3 token recognition,
2.6 word expansions, 2.7 redirection) closely enough to take an engine's launch line out of a script; what it cannot
expand is said, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEPARATORS = ("&&", "||", ";;", ";", "|", "&", "\n")
REDIRECTIONS = ("&>>", "&>", ">>", ">&", "<&", ">|", "<>", "<<", ">", "<")
# $NAME, ${NAME}, ${NAME:-default} / ${NAME-default} (the default when unset: 2.6.2 parameter expansion)
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
OTHER_BRACED = re.compile(r"\$\{[^}]*\}")


@dataclass
class Token:
    """A word, a separator or a redirection (with its target), and where it starts in the script."""

    text: str  # the word with its quotes removed (a separator or redirection: as written)
    start: int
    kind: str = "word"  # word | separator | redirection
    expansions: list[str] = field(default_factory=list)  # $VAR, ${VAR}, $(...), `...` outside single quotes


def tokens(script: str) -> list[Token]:
    """The script's tokens; an unbalanced quote takes the rest of the script into its word (as sh would refuse it)."""
    out: list[Token] = []
    i, n = 0, len(script)
    while i < n:
        char = script[i]
        if script.startswith("\\\n", i) or char in " \t\r":
            i += 2 if char == "\\" else 1
            continue
        if char == "#" and (i == 0 or script[i - 1] in " \t\n;&|"):
            i = script.find("\n", i) if "\n" in script[i:] else n
            continue
        op = next((s for s in SEPARATORS if script.startswith(s, i)), None) if not script.startswith("&>", i) else None
        if op is not None:
            out.append(Token(op, i, "separator"))
            i += len(op)
            continue
        fd = re.match(r"\d*", script[i:]).group(0)  # type: ignore[union-attr]
        redir = next((r for r in REDIRECTIONS if script.startswith(r, i + len(fd))), None)
        if redir is not None:
            start, i = i, i + len(fd) + len(redir)
            while i < n and script[i] in " \t":
                i += 1
            target, i = _word(script, i) if not redir.endswith("&") or not script[i:i + 1].isdigit() and script[i:i + 1] != "-" \
                else (Token(script[i], i), i + 1)
            out.append(Token(f"{fd}{redir}{target.text}", start, "redirection"))
            continue
        word, i = _word(script, i)
        out.append(word)
    return out


def _word(script: str, i: int) -> tuple[Token, int]:
    """One word from i: quotes removed, escapes taken, expansions noted (and kept as written)."""
    start, n = i, len(script)
    text: list[str] = []
    expansions: list[str] = []
    while i < n:
        char = script[i]
        if char in " \t\r\n;&|<>":
            break
        if char == "\\" and i + 1 < n:
            if script[i + 1] != "\n":
                text.append(script[i + 1])
            i += 2
        elif char == "'":
            end = script.find("'", i + 1)
            end = n if end < 0 else end
            text.append(script[i + 1:end])
            i = end + 1
        elif char == '"':
            i = _double_quoted(script, i + 1, text, expansions)
        elif char == "$" or char == "`":
            i = _expansion(script, i, text, expansions)
        else:
            text.append(char)
            i += 1
    return Token("".join(text), start, "word", expansions), i


def _double_quoted(script: str, i: int, text: list[str], expansions: list[str]) -> int:
    n = len(script)
    while i < n and script[i] != '"':
        if script[i] == "\\" and i + 1 < n and script[i + 1] in '$`"\\\n':
            if script[i + 1] != "\n":
                text.append(script[i + 1])
            i += 2
        elif script[i] in "$`":
            i = _expansion(script, i, text, expansions)
        else:
            text.append(script[i])
            i += 1
    return i + 1


def _expansion(script: str, i: int, text: list[str], expansions: list[str]) -> int:
    """`$VAR`, `${VAR}`, `$(cmd)`, `` `cmd` ``: kept in the word as written, and noted."""
    if script[i] == "`":
        end = script.find("`", i + 1)
        end = len(script) - 1 if end < 0 else end
    elif script.startswith("$(", i):
        depth, end = 0, i + 1
        while end < len(script):
            depth += {"(": 1, ")": -1}.get(script[end], 0)
            if depth == 0:
                break
            end += 1
    else:
        found = VARIABLE.match(script, i) or OTHER_BRACED.match(script, i)
        if found is None:  # a lone `$`: a literal dollar
            text.append("$")
            return i + 1
        end = found.end() - 1
    written = script[i:end + 1]
    expansions.append(written)
    text.append(written)
    return end + 1


def expand(token: Token, env: dict[str, str]) -> tuple[str, list[str]]:
    """The word with each `$VAR` / `${VAR}` the environment sets replaced by its value; and what stays unexpanded."""
    text, left = token.text, []
    for written in token.expansions:
        found = VARIABLE.fullmatch(written)
        name = (found.group(1) or found.group(4)) if found else None
        if name is not None and name in env and not (found and found.group(2) == ":-" and not env[name]):
            text = text.replace(written, env[name], 1)
        elif found is not None and found.group(2):  # ${NAME:-default}, unset: the default
            text = text.replace(written, found.group(3) or "", 1)
        else:
            left.append(written)
    return text, left
