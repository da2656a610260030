"""The built-in chat prompts, --prompts files, and the Prometheus text parser."""

from __future__ import annotations

import json

import pytest
import re

from compat.core.errors import EXIT_REFUSED, EXIT_USAGE, CompatError
from compat.verify.server import prometheus
from compat.verify.server.prompts import builtin, from_file


def test_the_builtin_set_is_100_chat_conversations_of_every_kind():
    prompts = builtin()
    assert len(prompts.prompts) == 100 and prompts.source == "built-in"
    assert prompts.categories() == {"code": 20, "math": 20, "summary": 15, "multiturn": 20, "instruction": 15, "other": 10}
    assert len({p.id for p in prompts.prompts}) == 100
    for p in prompts.prompts:
        assert p.messages[-1]["role"] == "user" and all(m["content"].strip() for m in p.messages)
    multi = [p for p in prompts.prompts if p.category == "multiturn"]
    assert all(any(m["role"] == "assistant" for m in p.messages) for p in multi)
    assert any(p.messages[0]["role"] == "system" for p in prompts.prompts)


def test_take_cycles_every_prompt_before_repeating():
    taken = builtin().take(130).prompts
    assert len(taken) == 130 and len({p.id for p in taken[:100]}) == 100 and taken[100] == taken[0]


def test_a_prompts_file_takes_objects_and_bare_lists(tmp_path):
    f = tmp_path / "traffic.jsonl"
    f.write_text("# my traffic\n" + json.dumps({"id": "a", "messages": [{"role": "user", "content": "hi"}]}) + "\n\n"
                 + json.dumps([{"role": "system", "content": "be brief"}, {"role": "user", "content": "why?"}]) + "\n")
    prompts = from_file(f)
    assert [p.id for p in prompts.prompts] == ["a", "line-4"] and prompts.source == str(f)


@pytest.mark.parametrize("line, says", [
    ("{not json", "not JSON"), ('{"messages": []}', "non-empty list"),
    ('[{"role": "wizard", "content": "x"}]', "role 'wizard'"), ('[{"role": "user"}]', "no text content"),
])
def test_a_bad_line_is_refused_with_its_number(tmp_path, line, says):
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps([{"role": "user", "content": "ok"}]) + "\n" + line + "\n")
    with pytest.raises(CompatError, match=f"^{re.escape(str(f))}:2: .*{re.escape(says)}") as err:
        from_file(f)
    assert err.value.exit_code == EXIT_REFUSED and f"{f}:2:" in err.value.message and says in err.value.message


def test_a_missing_or_empty_file(tmp_path):
    with pytest.raises(CompatError, match=f"^--prompts {re.escape(str(tmp_path / 'nope.jsonl'))}: no such file$") as err:
        from_file(tmp_path / "nope.jsonl")
    assert err.value.exit_code == EXIT_USAGE
    (tmp_path / "empty.jsonl").write_text("\n# nothing\n")
    with pytest.raises(CompatError, match=f"^--prompts {re.escape(str(tmp_path / 'empty.jsonl'))}: no conversation in it\n") as err:
        from_file(tmp_path / "empty.jsonl")
    assert err.value.exit_code == EXIT_REFUSED and "no conversation" in err.value.message


EXPOSITION = """# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 6.0
vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 4.0
vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.79e+09
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m \\"quoted\\", comma",position="0"} 5.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",model_name="m",position="1"} 1.0
vllm:num_requests_running{engine="0"} NaN
vllm:generation_tokens_total 13 1700000000000
garbage line without value
vllm:generation_tokens_total{broken 5
"""


def test_prometheus_parse_sums_engines_and_reads_labels():
    wanted = {"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_accepted_tokens_per_pos_total",
              "vllm:num_requests_running", "vllm:generation_tokens_total"}
    samples = prometheus.parse(EXPOSITION, wanted)
    assert prometheus.total(samples, "vllm:spec_decode_num_drafts_total") == 10
    assert prometheus.total(samples, "vllm:spec_decode_num_drafts_total", engine="1") == 4
    assert prometheus.by_label(samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "position") == {"0": 5, "1": 3}
    quoted = [s for s in samples if s.label("position") == "0"][0]
    assert quoted.label("model_name") == 'm "quoted", comma'
    assert prometheus.total(samples, "vllm:generation_tokens_total") == 13  # a timestamp is not the value
    assert prometheus.total(samples, "vllm:num_requests_running") is None  # NaN is no value
    assert prometheus.total(samples, "vllm:spec_decode_num_drafts_created") is None  # not asked for
    assert prometheus.names_present(EXPOSITION, "vllm:spec") >= {"vllm:spec_decode_num_drafts_total"}


@pytest.mark.parametrize("version, spec, noted", [
    ("0.32.0", "vllm==0.32.0", False), ("0.32.0+cpu", "vllm==0.32.0", False),
    ("0.11.1.dev12+gabcdef", "vllm<0.11.1", True), ("0.6.0rc1", "vllm<0.6.0", True), ("main", "vllm==latest", True),
])
def test_which_release_names_a_server_version(version, spec, noted):
    from compat.verify.server.facts import release_spec

    got, note = release_spec("vllm", version)
    assert got == spec and (note is not None) == noted
