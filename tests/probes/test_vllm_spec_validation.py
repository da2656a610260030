"""The spec_validation probe: the code vLLM runs on a speculative config before any weight loads, read as statements
with file:line, on a small tree (tests/spec_sources.py) and on pinned releases (each release's build is held to this
reading by tests/engine/test_validation_agreement.py)."""

from __future__ import annotations

import json

import pytest

import spec_sources as src
from compat.probes.vllm.spec_validation import spec_validation


def _raises(fact: dict) -> list[tuple[str, int, str]]:
    out = []

    def walk(body, file):
        for s in body:
            if s[0] == "raise":
                out.append((file, s[1], s[3] or ""))
            for part in s[2:]:
                if isinstance(part, list) and part and isinstance(part[0], list):
                    walk(part, file)
                elif isinstance(part, list):
                    for handler in part:
                        if isinstance(handler, list) and len(handler) == 2 and isinstance(handler[1], list):
                            walk(handler[1], file)

    for function in fact["functions"].values():
        walk(function.get("body") or [], function["file"])
    return out


def test_the_speculative_config_and_its_builder_are_read_in_the_order_they_run(tmp_path):
    fact = spec_validation(src.written_tree(tmp_path))
    assert fact["present"] and fact["entry"] == "EngineArgs.create_speculative_config"
    spec = next(c for c in fact["classes"] if c["name"] == "SpeculativeConfig")
    assert spec["construction"] == ["SpeculativeConfig.__post_init__", "SpeculativeConfig._verify_args"]
    assert spec["fields"]["num_speculative_tokens"] == {"line": spec["fields"]["num_speculative_tokens"]["line"],
                                                        "default": None, "gt": 0}
    assert fact["constants"]["MTPModelTypes"] == ["deepseek_mtp", "mtp"]  # a Literal alias, as its strings
    assert "SpeculativeConfig._verify_tp" in fact["functions"]  # a static helper it calls, read too
    engine_args = next(c for c in fact["classes"] if c["name"] == "EngineArgs")
    assert engine_args["fields"]["tensor_parallel_size"]["default"] == 1
    assert fact["target_inputs"]["target_parallel_config"] == {"tensor_parallel_size": "tensor_parallel_size"}
    messages = [m for _, _, m in _raises(fact)]
    assert any("num_speculative_tokens` was not provided" in m for m in messages)
    body = json.dumps(fact["functions"]["SpeculativeConfig.__post_init__"]["body"])
    assert "logger" not in body  # a logger's call decides nothing: left out


@pytest.mark.network
@pytest.mark.parametrize("version, raised", [
    ("0.10.0", "num_speculative_tokens was provided without speculative model."),
    ("0.16.0", "f\"Unsupported speculative method: '{self.method}'\""),
    ("0.32.0", "'A speculative model was provided, but `num_speculative_tokens` was not provided'"),
])
def test_a_release_is_read_with_its_raises_where_they_are(pinned_release, version, raised):
    tree = pinned_release("vllm", version)
    fact = spec_validation(tree)
    assert fact["present"] and fact["entry"] == "EngineArgs.create_speculative_config"
    found = [(file, line) for file, line, message in _raises(fact) if raised in message]
    assert found, f"{version}: no raise of {raised!r}"
    file, line = found[0]
    source = tree.read_bytes(file).decode().splitlines()
    assert "raise" in "\n".join(source[line - 1:line + 1])  # the line the probe gives is the raise's
    assert len(json.dumps(fact)) < 120_000  # kept compact: the report is cached per release and read by every doctor
