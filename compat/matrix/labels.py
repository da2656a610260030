"""The words a matrix cell shows for doctor's verdicts: short enough for a table cell, never colour alone."""

from __future__ import annotations

from compat.checkpoints import CONVENTION_FLAG
from compat.doctor.diagnose import (DEPENDS, DEPENDS_LAYERS, DEPENDS_VENV, DOES_NOT_WORK, NEEDS_CONVERT, SOURCE_UNAVAILABLE,
                                    UNCHECKED, WORKS, WORKS_PATCHED, WORKS_PATCHED_CONVERTED)

# verdict -> (cell text, css class); the class picks a colour, the text says the same thing
SHORT = {
    WORKS: ("works", "ok"),
    WORKS_PATCHED: ("patch", "fix"),
    NEEDS_CONVERT: ("convert", "fix"),
    WORKS_PATCHED_CONVERTED: ("patch+convert", "fix"),
    DEPENDS: ("ask: ids", "ask"),
    DEPENDS_LAYERS: ("ask: layers", "ask"),
    DEPENDS_VENV: ("ask: venv", "ask"),
    DOES_NOT_WORK: ("no", "no"),
    SOURCE_UNAVAILABLE: ("n/a", "na"),
    UNCHECKED: ("can't tell", "na"),  # a check read facts compat does not read from this engine yet
}


def short(verdict: str) -> tuple[str, str]:
    return SHORT.get(verdict, (verdict, "na"))


def legend() -> list[tuple[str, str, str]]:
    """(cell text, css class, doctor's verdict) for each verdict, in the order above."""
    return [(text, css, verdict) for verdict, (text, css) in SHORT.items()]


def answered(answers: dict[str, str]) -> str:
    """What each answer to an "ask" cell gives, in a cell's words: "output-of: convert, capture-before: works" (the
    convention's answers by their value; the layers' by "default ids", the trainers' default)."""
    words = []
    for flag, verdict in answers.items():
        name, _, value = flag.partition(" ")
        label = value if name == CONVENTION_FLAG else "default ids"
        words.append(f"{label}: {short(verdict)[0]}")
    return ", ".join(words)
