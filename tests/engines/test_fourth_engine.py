"""A fourth engine, made in a temporary folder as a plugin would add it, runs doctor's checks (issue 39's done-when).

Modelled, not real: "fakeserve", an engine unit on compat.engines' path and its probes folder on compat.probes' path,
with one probe reading its tree's model registry (`MODELS = {"LlamaForCausalLM": ...}` in fakeserve/models.py, by
ast). Its FACTS provides the term "target architectures" only. doctor on a target and an EAGLE-3 drafter: the check
of that term runs on the fake release's fact (FAIL for an architecture its registry lacks, PASS for one it has), each
other check that needs a term answers "cannot tell" naming it, and no file of the compat checkout changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compat import engines, probes

ROOT = Path(__file__).resolve().parents[2]

UNIT = '''
NAME = "fakeserve"
DISPLAY_NAME = "FakeServe"
IMPORT_NAME = "fakeserve"
DISTRIBUTIONS = ("fakeserve",)
INDEX_NAME = "fakeserve"
VERSION_FILES = ("fakeserve/version.py",)
REPOSITORY = "https://example.invalid/fakeserve"
LAUNCH_COMMANDS = (("fakeserve", "serve"),)
SPEC_FORM = "flags"
DRAFTER_OPTIONS = ("--draft-model",)
SPEC_SETTING_OPTIONS = {"method": "--draft-method", "num_speculative_tokens": "--draft-tokens"}
DRAFT_SETTINGS_FROM = "draft"
DRAFT_SHAPE = "chain"
TARGET_GATE = "interface"
LAYER_IDS_FED_BY = "runners"
VERSION_IN_LOG = r"fakeserve (\\d+\\.\\d+\\.\\d+)"
SERVER_OWNED_BY = "fakeserve"
METRICS_PREFIX = "fakeserve:"
SERVER_ACCEPTANCE = "counters"
DEFAULT_RELEASES = ">=1.0"
PROBES = "compat.probes.fakeserve"

FACTS = {"target architectures": ("target_architectures",)}
'''

PROBE = '''
"""The architectures fakeserve's registry builds: the keys of MODELS in fakeserve/models.py."""

import ast

from compat.probes import probe


@probe("fakeserve", "target_architectures", "Architectures the registry builds", order=90)
def target_architectures(tree):
    module = tree.parse("fakeserve/models.py")
    for stmt in module.body:
        if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", None) == "MODELS":
            return {k.value: tree.loc("fakeserve/models.py", k) for k in stmt.value.keys}
    return {}
'''


def _product_files() -> dict[str, str]:
    """Every file of the checkout's product folders, by path: its sha256."""
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in ("compat", "checks", "probes", "patches", "checkpoints", "methods")
            for p in sorted((ROOT / folder).rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _git_status() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


@pytest.fixture
def fourth_engine(tmp_path):
    """fakeserve's unit on compat.engines' path and its probes on compat.probes' path; removed after the test."""
    units, rules = tmp_path / "engines", tmp_path / "probes"
    (rules / "fakeserve").mkdir(parents=True)
    units.mkdir()
    (units / "fakeserve.py").write_text(UNIT)
    (rules / "fakeserve" / "__init__.py").write_text('"""Probes of a fakeserve release."""\n')
    (rules / "fakeserve" / "target_architectures.py").write_text(PROBE)
    engines.__path__.append(str(units))
    probes.__path__.append(str(rules))
    yield tmp_path
    engines.__path__.remove(str(units))
    probes.__path__.remove(str(rules))
    for name in [m for m in sys.modules if m == "compat.engines.fakeserve" or m.startswith("compat.probes.fakeserve")]:
        del sys.modules[name]


def _release(root: Path) -> Path:
    """A fakeserve 1.0.0 source tree: its version and a registry of one architecture."""
    package = root / "tree" / "fakeserve"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "version.py").write_text("__version__ = '1.0.0'\n")
    (package / "models.py").write_text(textwrap.dedent('''\
        MODELS = {
            "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
        }
        '''))
    return package.parent


def _safetensors(path: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(__import__("math").prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def _models(root: Path, architecture: str) -> tuple[Path, Path]:
    target = root / f"target-{architecture}"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"architectures": [architecture], "model_type": "llama",
                                                    "num_hidden_layers": 32, "hidden_size": 64, "vocab_size": 1024}))
    drafter = root / "drafter"
    if not drafter.exists():
        drafter.mkdir()
        (drafter / "config.json").write_text(json.dumps({
            "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64, "vocab_size": 1024,
            "draft_vocab_size": 256, "num_hidden_layers": 1, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}))
        _safetensors(drafter / "model.safetensors", {"fc.weight": (64, 192), "d2t": (256,), "t2d": (1024,)})
    return target, drafter


def _doctor(*argv: str) -> tuple[int, dict]:
    from compat import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["doctor", *argv, "--json", "--no-preflight"])
    assert out.getvalue().strip(), err.getvalue()
    return code, json.loads(out.getvalue())


def _results(report: dict) -> dict[str, dict]:
    found = report.get("checks") or next((v for v in report.values() if isinstance(v, list) and v
                                          and isinstance(v[0], dict) and "check" in v[0]), [])
    return {r["check"]: r for r in found}


def test_a_fourth_engine_runs_doctors_checks_on_its_own_facts(fourth_engine):
    before, status = _product_files(), _git_status()
    tree = _release(fourth_engine)
    qwen, drafter = _models(fourth_engine, "Qwen3ForCausalLM")
    _, report = _doctor("--path", str(tree), str(qwen), str(drafter))
    checks = _results(report)
    assert (report["engine"], report["version"]) == ("fakeserve", "1.0.0")
    # the check of the term fakeserve provides runs on its fact: Qwen3 is not in fakeserve 1.0.0's MODELS
    arch = checks["target-architecture"]
    assert arch["verdict"] == "fail" and "Qwen3ForCausalLM is not in fakeserve 1.0.0" in arch["detail"], arch
    # every other check that needs a term answers "cannot tell", naming the terms fakeserve does not provide
    from compat.checks import get_check

    unread = {c: r for c, r in checks.items() if get_check(c).needs and c != "target-architecture"}
    assert {"target-interface", "drafter-tensors", "layer-ids", "method", "launch-command"} <= set(unread)
    for check_id, result in unread.items():
        terms = ", ".join(t for t in get_check(check_id).needs if t != "target architectures")
        assert result["verdict"] == "warn" and result["detail"] == (
            f"cannot tell: this check reads {terms}, which compat does not read from FakeServe yet"), result
    # an architecture its registry has passes, on the same fact (models.py:2)
    llama, _ = _models(fourth_engine, "LlamaForCausalLM")
    _, report = _doctor("--path", str(tree), str(llama), str(drafter))
    arch = _results(report)["target-architecture"]
    assert arch["verdict"] == "pass" and arch["detail"] == "LlamaForCausalLM is registered", arch
    assert _product_files() == before and _git_status() == status
