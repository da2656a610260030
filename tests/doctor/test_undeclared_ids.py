"""A drafter that records no layer ids: doctor asks which layers it was trained on, on both engines, and
`--layer-ids` answers it (the release feeds its default either way; only the user knows the training)."""

from __future__ import annotations

import json

import pytest

from doctor_helpers import open_release
from failure_modes import by_key

pytestmark = pytest.mark.network


def paths(tmp_path):
    pair = by_key("no-layer-ids").build(tmp_path)  # vllm#50170's shapes: 80 layers, no ids anywhere
    return str(pair.target), str(pair.drafter)


@pytest.mark.parametrize("engine,version", [("vllm", "0.11.0"), ("vllm", "0.32.0"), ("sglang", "0.5.8"), ("sglang", "0.5.23")])
def test_it_asks_with_what_each_answer_means(tmp_path, doctor_cli, engine, version):
    target, drafter = paths(tmp_path)
    code, out, _ = doctor_cli(target, drafter, "--path", str(open_release(engine, version).root), "--json")
    data = json.loads(out)
    layer_ids = next(c for c in data["checks"] if c["check"] == "layer-ids")
    assert code == 1 and data["verdict"] == "depends on which layers the drafter was trained on (say --layer-ids)"
    assert layer_ids["needs_input"] and layer_ids["branches"] == {"default": [2, 40, 77]}
    fix = layer_ids["fix"]
    assert fix["kind"] == "ask" and fix["question"] == "layers" and fix["flag"] == "--layer-ids"
    assert fix["answers"]["default"] == {"trained": [2, 40, 77], "verdict": "pass", "fix": None}
    assert "--layer-ids IDS" in fix["answers"]["other"]["fix"] and "compat convert ckpt" in fix["answers"]["other"]["fix"]
    assert data["fix_steps"][0] == {"kind": "ask", "command": fix["text"]}
    assert data["launch"]["runnable"] is False and data["drafter"]["trained_layer_ids"] is None


def test_the_answer_settles_it(tmp_path, doctor_cli):
    target, drafter = paths(tmp_path)
    release = str(open_release("vllm", "0.32.0").root)
    code, out, _ = doctor_cli(target, drafter, "--path", release, "--layer-ids", "2", "40", "77", "--json")
    assert code == 0 and json.loads(out)["verdict"] == "works as is"
    code, out, _ = doctor_cli(target, drafter, "--path", release, "--layer-ids", "3,41,78", "--json")
    data = json.loads(out)
    layer_ids = next(c for c in data["checks"] if c["check"] == "layer-ids")
    assert code == 1 and layer_ids["trained"] == [3, 41, 78] and data["verdict"] == "needs a converted drafter"
    assert "--layer-ids 3,41,78" in layer_ids["fix"]["command"]  # the conversion is given what doctor was told
    code, out, _ = doctor_cli(target, drafter, "--path", release, "--layer-ids", "1", "39", "76",
                              "--layer-ids-convention", "output-of", "--json")
    assert code == 0, out  # output-of 1, 39, 76 = the outputs of those layers = capture-before 2, 40, 77


def test_a_bad_layer_id_is_a_usage_error(tmp_path, doctor_cli):
    target, drafter = paths(tmp_path)
    code, _, err = doctor_cli(target, drafter, "--engine", "vllm==0.32.0", "--layer-ids", "2", "forty")
    assert code == 2 and "'forty' is not a layer id" in err
