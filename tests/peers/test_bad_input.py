"""A peer config compat does not know is refused: exit 4, one line naming the field and the versions compat
knows, nothing at DST and nothing left beside it (no peer venv needed: the refusal is compat's own)."""

from __future__ import annotations

import json

import pytest

from ckpt_builders import write_drafter
from peer_venv import compat


def _refused(src, tmp_path, *extra):
    dst = tmp_path / "out"
    done = compat("convert", "ckpt", str(src), str(dst), "--to", "vllm", *extra)
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("  fix: "))
    assert not dst.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    return lines[0]


def _speculators(tmp_path, **changes):
    src = write_drafter(tmp_path / "src", "speculators")
    config = json.loads((src / "config.json").read_text())
    config.update(changes)
    (src / "config.json").write_text(json.dumps(config))
    return src


def test_an_unknown_speculators_field_is_refused_by_name(tmp_path):
    line = _refused(_speculators(tmp_path, medusa_num_heads=4), tmp_path)
    assert "speculators field 'medusa_num_heads'" in line and "speculators 0.1.0 - 0.9.0" in line


def test_an_unknown_speculators_model_type_is_refused_by_name(tmp_path):
    line = _refused(_speculators(tmp_path, speculators_model_type="mlp_speculator"), tmp_path)
    assert "speculators_model_type 'mlp_speculator'" in line and "eagle3" in line and "speculators 0.1.0 - 0.9.0" in line


def test_a_speculators_config_without_its_layer_config_is_refused(tmp_path):
    line = _refused(_speculators(tmp_path, transformer_layer_config=None), tmp_path)
    assert "transformer_layer_config" in line


def test_an_unknown_modelopt_eagle_config_field_is_refused_by_name(tmp_path):
    src = write_drafter(tmp_path / "src", "vllm")
    config = json.loads((src / "config.json").read_text())
    config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [2, 4, 5], "use_aux_hidden_state": True,
                              "use_last_layernorm": True, "eagle_medusa_heads": 2}
    (src / "config.json").write_text(json.dumps(config))
    line = _refused(src, tmp_path, "--layer-ids-convention", "output-of")
    assert "eagle_config field 'eagle_medusa_heads'" in line and "nvidia-modelopt 0.37 - 0.47" in line


@pytest.mark.parametrize("layout", ["speculators", "modelopt", "nemo", "specforge"])
def test_the_refusal_leaves_an_existing_dst_untouched(tmp_path, layout):
    src = _speculators(tmp_path, unknown_flag=True)
    dst = tmp_path / "dst"
    dst.mkdir()
    (dst / "keep").write_text("mine")
    done = compat("convert", "ckpt", str(src), str(dst), "--to", layout, "--force")
    assert done.returncode == 4 and "'unknown_flag'" in done.stderr
    assert [p.name for p in dst.iterdir()] == ["keep"] and (dst / "keep").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst", "src"]
