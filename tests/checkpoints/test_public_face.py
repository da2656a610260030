"""checkpoints/__init__.py is the package's public face: the shared vocabulary is imported from
`compat.checkpoints`, and nothing outside checkpoints/ takes the private `_canonical` module."""

from __future__ import annotations

import ast
from pathlib import Path

import compat.checkpoints as checkpoints

ROOT = Path(__file__).resolve().parents[2]
NOT_YET = {"compat/doctor.py"}  # the lead's rewrite (issue 8) switches it to compat.checkpoints and compat.target


def _private_imports(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        if any(n.startswith("compat.checkpoints._") or n == "compat.checkpoints._canonical" for n in names):
            lines.append(node.lineno)
    return lines


def test_nothing_outside_checkpoints_imports_the_private_module():
    offences = []
    for folder in ("compat", "probes", "patches", "checks", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")) if (ROOT / folder).is_dir() else []:
            rel = str(path.relative_to(ROOT))
            if rel not in NOT_YET:
                offences += [f"{rel}:{line}" for line in _private_imports(path)]
    assert not offences, offences


def test_the_shared_vocabulary_is_public():
    for name in ("CAPTURE_BEFORE", "OUTPUT_OF", "CONVENTIONS", "RECORD_FILE", "RECORD_KEY", "RECORD_SCHEMA", "LLAMA_LAYER0",
                 "MLA_LAYER0", "REQUIRED_TOP", "DrafterConfig", "LayerIds", "ReadContext", "WriteContext", "default_layer_ids",
                 "ids_from_declared", "layer_index", "canonical_name", "record", "compat_record", "TRAINERS", "BASES"):
        assert hasattr(checkpoints, name) and name in checkpoints.__all__, name


def test_every_layout_names_a_known_trainer():
    for name, layout in checkpoints.all_layouts().items():
        assert layout.trainer({}) in checkpoints.TRAINERS, name
    assert checkpoints.get_layout("eagle").trainer({"eagle_config": {"use_mtp_layernorm": False}}) == "modelopt"
