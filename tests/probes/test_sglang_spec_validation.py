"""The spec_validation probe on SGLang: ServerArgs' construction and the handler of the speculative settings, whatever a
release names it (inline in __post_init__, `_handle_speculative_decoding`, `handle_speculative_decoding(server_args)`
of arg_groups/), read with the defaults of the fields they read; the releases that resolve ServerArgs through the
later pipeline are said not to be read (doctor then says it cannot tell)."""

from __future__ import annotations

import json

import pytest

from compat.probes.sglang.spec_validation import spec_validation

pytestmark = pytest.mark.network


@pytest.mark.parametrize("version, handler", [
    ("0.4.6", "ServerArgs.__post_init__"),
    ("0.5.9", "ServerArgs._handle_speculative_decoding"),
    ("0.5.14", "handle_speculative_decoding"),
])
def test_the_handler_is_read_with_the_defaults_it_reads(pinned_release, version, handler):
    fact = spec_validation(pinned_release("sglang", version))
    assert fact["present"] and fact["server_class"] == "ServerArgs"
    body = json.dumps(fact["functions"][handler]["body"])
    assert "speculative_algorithm" in body
    fields = fact["classes"][0]["fields"]
    assert fields["speculative_algorithm"]["default"] is None
    assert all("default" in entry for entry in fields.values())
    assert len(json.dumps(fact)) < 100_000


def test_a_handler_of_other_settings_is_read_for_what_it_sets(pinned_release):
    fact = spec_validation(pinned_release("sglang", "0.5.9"))
    functions = fact["functions"]
    assert functions["ServerArgs._handle_page_size"].get("quiet") is True  # sets page_size, which the handler reads
    assert functions["ServerArgs._handle_speculative_decoding"].get("quiet") is None
    assert any("effects" in f for f in functions.values())  # long handlers of other things: what they assign only
    assert fact["envs"]["SGLANG_ENABLE_SPEC_V2"]["default"] is False


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_the_resolution_pipeline_is_said_not_to_be_read(pinned_release, version):
    fact = spec_validation(pinned_release("sglang", version))
    assert fact["present"] is False and "pipeline" in fact["reason"]
