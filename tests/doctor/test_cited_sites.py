"""Every site a failing check cites is the engine's statement (the raise, the assert, the call), never the `def` of
the function around it: read on real releases, for targets each release refuses (issue 31: doctor cited
`_get_eagle3_aux_layers_from_config`'s def on 0.18.0 where the runner raises "Model does not support EAGLE3
interface" a hundred lines earlier)."""

from __future__ import annotations

import pytest

from doctor_models import specforge_drafter, write_target

pytestmark = pytest.mark.network

RELEASES = [("vllm", "0.11.0"), ("vllm", "0.18.0"), ("vllm", "0.24.0"), ("vllm", "0.32.0"), ("sglang", "0.5.8")]


def cited_line(release, engine, version, location):
    path, _, line = location.rpartition(":")
    return release(engine, version).read_bytes(path).decode("utf-8", "replace").split("\n")[int(line) - 1].strip()


@pytest.mark.parametrize("engine, version", RELEASES)
def test_a_failing_check_cites_the_statement_not_the_def(tmp_path, diagnose, release, engine, version):
    target = write_target(tmp_path / "gemma", model_type="gemma2", architecture="Gemma2ForCausalLM", layers=8)
    result = diagnose(engine, version, target, specforge_drafter(tmp_path / "drafter", layer_ids=[1, 3, 5]))
    failing = [c for c in result["checks"] if c["verdict"] != "pass" and c.get("location") and ".py:" in c["location"]]
    assert failing
    for c in failing:
        line = cited_line(release, engine, version, c["location"])
        assert not line.startswith(("def ", "async def ")), (c["check"], c["location"], line)
    interface = next(c for c in result["checks"] if c["check"] == "target-interface")
    if engine == "vllm":  # the raise the user's traceback ends in
        assert interface["verdict"] == "fail"
        assert cited_line(release, engine, version, interface["location"]).startswith("raise ")


def test_only_the_flags_the_user_gave_are_credited(kimi, release):
    """A SpecForge drafter's convention comes from its fingerprint: doctor says so, and credits
    --layer-ids-convention only when the user passed it."""
    from compat.doctor import Options, diagnose, read_drafter, read_target

    target = read_target(kimi.target)
    by_fingerprint = diagnose(release("vllm", "0.18.0"), target, read_drafter(kimi.drafter, target), Options())
    told = diagnose(release("vllm", "0.18.0"), target, read_drafter(kimi.drafter, target, "output-of"), Options())
    said = next(c for c in by_fingerprint["checks"] if c["check"] == "layer-ids")["detail"]
    assert "(--layer-ids-convention)" not in said and "no --layer-ids-convention needed" in said and "SpecForge" in said
    assert "(--layer-ids-convention)" in next(c for c in told["checks"] if c["check"] == "layer-ids")["detail"]
