"""A Fix stays typed until it is printed (issue 39): the JSON form a diagnosis holds keeps the dataclass it was
written from, doctor's text, the --releases table and the matrix's cells render that dataclass (no JSON read back),
and json.dumps prints the same bytes as the plain dict. A diagnosis that arrived as JSON is still read."""

from __future__ import annotations

import copy
import io
import json
import pickle

import pytest
from rich.console import Console

from compat import fix as fixes
from compat.checks import FAIL
from compat.commands import _doctor_text
from compat.doctor.diagnose import fix_summary
from compat.matrix.build import slim

CONVERT = fixes.ConvertFix(command="compat convert ckpt D --to vllm --engine vllm==0.16.0", text="convert the drafter",
                           alternative=fixes.PatchFix(patch_ids=("vllm-eagle3-whitelist",),
                                                      command="compat patch --select vllm-eagle3-whitelist"))


def _check(fix: fixes.Fix) -> dict:
    return {"check": "layer-ids", "title": "Layer ids", "verdict": FAIL, "detail": "the layers differ",
            "location": "vllm/x.py:1", "fix": fix.to_json()}


@pytest.fixture
def no_reading_back(monkeypatch):
    def refuse(data):
        raise AssertionError(f"a fix was read back from its JSON form: {data}")
    monkeypatch.setattr(fixes, "from_json", refuse)


def test_the_json_form_prints_as_the_plain_dict_and_keeps_its_fix():
    made = CONVERT.to_json()
    assert fixes.typed(made) is CONVERT
    assert fixes.typed(made["alternative"]) is CONVERT.alternative
    plain = json.loads(json.dumps(made))
    assert json.dumps(made, indent=2) == json.dumps(plain, indent=2)
    assert made == plain
    assert fixes.typed(copy.deepcopy(made)) == CONVERT and fixes.typed(pickle.loads(pickle.dumps(made))) == CONVERT


def test_doctor_text_renders_the_dataclass(no_reading_back):
    out = io.StringIO()
    _doctor_text._render_detail(_check(CONVERT), Console(file=out, width=200, soft_wrap=True))
    text = out.getvalue()
    assert f"fix: {CONVERT.command}" in text and f"or:  {CONVERT.alternative.command}" in text
    steps = [{"kind": "convert", "command": CONVERT.command}]
    assert _doctor_text._fix_reference(_check(CONVERT), steps) == "fix 1"


def test_the_releases_table_and_the_matrix_render_the_dataclass(no_reading_back):
    assert fix_summary([_check(CONVERT)]) == [CONVERT.phrase("layer-ids")]
    cell = slim("vllm", "0.16.0", {"verdict": "x", "diagnosis": {"checks": [_check(CONVERT)]}})
    assert cell["checks"][0]["fix"] == CONVERT.command


def test_a_diagnosis_that_arrived_as_json_is_read():
    arrived = json.loads(json.dumps(_check(CONVERT)))
    assert not isinstance(arrived["fix"], fixes.FixJson)
    assert fixes.typed(arrived["fix"]) == CONVERT
    out = io.StringIO()
    _doctor_text._render_detail(arrived, Console(file=out, width=200, soft_wrap=True))
    assert f"fix: {CONVERT.command}" in out.getvalue()
