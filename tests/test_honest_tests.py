"""The suite's own rules, read from its source (ast): a refusal is tested on the message the user sees, and a test
is left out only through tests/parts.py (a missing part: skipped here, failed under CI=true) or as a stress campaign
(tests/conftest.py), never by a skip of its own that CI would pass without running it."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent
MAY_SKIP = {TESTS / "parts.py", TESTS / "conftest.py"}  # the one mechanism: a part's skip, a stress campaign's


@lru_cache(maxsize=1)
def _uses() -> tuple[tuple[Path, ast.AST, str], ...]:
    """Every call and attribute of the suite's files: (file, node, its dotted name)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            callee = node.func if isinstance(node, ast.Call) else node if isinstance(node, ast.Attribute) else None
            if callee is not None and isinstance(callee, ast.Attribute):
                found.append((path, node, ast.unparse(callee)))
    return tuple(found)


def _calls(name: str):
    """(file, node) of every call or attribute whose name ends in `name` (pytest.raises, pytest.mark.skipif, ...)."""
    return [(path, node) for path, node, dotted in _uses() if dotted.endswith(name)]


def test_every_pytest_raises_names_the_message():
    """`pytest.raises(E)` passes on any E, whatever it says; `match=` holds it to the words the user reads."""
    loose = [f"{path.relative_to(TESTS.parent)}:{node.lineno}" for path, node in _calls("pytest.raises")
             if isinstance(node, ast.Call) and not any(k.arg == "match" for k in node.keywords)]
    assert not loose, f"pytest.raises without match= (give it the message the user sees): {loose}"


def test_only_the_parts_table_and_the_stress_campaigns_skip():
    found = sorted({f"{path.relative_to(TESTS.parent)}:{node.lineno}" for name in ("pytest.skip", "pytest.mark.skipif",
                    "pytest.mark.skip", "pytest.importorskip", "pytest.xfail", "pytest.mark.xfail")
                    for path, node in _calls(name) if path not in MAY_SKIP})
    assert not found, f"skips outside tests/parts.py and conftest.py (CI=true fails them; use a part): {found}"
