"""nvidia-modelopt itself: its real EAGLE-3 export (mtsp.convert + export_speculative_decoding, run on CPU in the
peers venv) is read by compat and survives trips through the other layouts; compat's `--to modelopt` output
passes ModelOpt's own export check (EagleExporter._check_valid_sd) and carries every key of its config template.

ModelOpt has no loader for its exports (they go to the engines), so its check of the exported state dict
and its config template are the peer's word on the format. The Kimi/DeepSeek MLA form is not exported here:
ModelOpt's kimik2 decoder fetches Kimi-K2's modeling code from the Hugging Face Hub when it is set up
(modelopt/torch/speculative/utils.py `_setup_kimi_k2_decoder`), which this machine cannot reach; compat's MLA
output is checked with ModelOpt's own key check (KIMIK2_EAGLE_SINGLE_LAYER) and its kimik2 template.
"""

from __future__ import annotations

import pytest

from ckpt_builders import write_drafter
from peer_venv import compat, run_in_peers
from peer_files import config, digests, write_verifier

pytestmark = [pytest.mark.peers]

THROUGH = ("vllm", "eagle", "speculators", "sglang", "nemo")


@pytest.fixture(scope="module")
def work(tmp_path_factory, peers_python):
    root = tmp_path_factory.mktemp("modelopt")
    run_in_peers(peers_python, "modelopt_peer.py", "export", str(root / "exported"))
    target = write_verifier(root / "target")
    for layout in THROUGH:
        # ModelOpt's HF training hooks layer outputs: its ids are output-of (said, as ModelOpt's files cannot say it)
        hop = compat("convert", "ckpt", str(root / "exported"), str(root / f"hop-{layout}"), "--to", layout,
                     "--layer-ids-convention", "output-of", "--target", str(target), "-qq")
        assert hop.returncode == 0, (layout, hop.stderr)
        back = compat("convert", "ckpt", str(root / f"hop-{layout}"), str(root / f"back-{layout}"), "--to", "modelopt", "-qq")
        assert back.returncode == 0, (layout, back.stderr)
    for layout in ("eagle", "mla", "speculators"):
        src = write_drafter(root / f"src-{layout}", layout)
        made = compat("convert", "ckpt", str(src), str(root / f"from-{layout}"), "--to", "modelopt", "--target", str(target))
        assert made.returncode == 0, (layout, made.stderr)
    dirs = [str(root / "exported")] + [str(root / f"from-{x}") for x in ("eagle", "mla", "speculators")]
    checked = run_in_peers(peers_python, "modelopt_peer.py", "check", *dirs, *[str(root / f"back-{x}") for x in THROUGH])
    return root, checked


def test_modelopts_own_export_is_read_by_compat(work):
    root, checked = work
    assert checked[str(root / "exported")] == {"decoder": "llama", "check_error": None, "missing_template_keys": []}
    hop = root / "hop-vllm"
    assert config(hop)["eagle_aux_hidden_state_layer_ids"] == [3, 5, 6]  # output-of [2, 4, 5] + 1
    exported = digests(root / "exported")
    assert "t2d" not in exported and {k: v for k, v in digests(hop).items() if k != "t2d"} == exported


@pytest.mark.parametrize("layout", THROUGH)
def test_a_trip_and_back_keeps_every_byte_and_field_and_passes_modelopts_check(work, layout):
    root, checked = work
    back = root / f"back-{layout}"
    assert digests(back) == digests(root / "exported")
    start, end = config(root / "exported"), config(back)
    assert end.pop("eagle_aux_hidden_state_layer_ids") == [3, 5, 6]  # the physical layers, now said for vLLM too
    assert end == start
    assert checked[str(back)] == {"decoder": "llama", "check_error": None, "missing_template_keys": []}


@pytest.mark.parametrize("source", ["eagle", "mla", "speculators"])
def test_compats_modelopt_output_passes_modelopts_check(work, source):
    root, checked = work
    answer = checked[str(root / f"from-{source}")]
    assert answer["decoder"] == ("kimik2" if source == "mla" else "llama")
    assert answer["check_error"] is None
    # ModelOpt fills its template from the base model's config; compat has none, so the template keys the
    # source does not give are left out (readers take the HF defaults) and never invented; eagle_config is whole
    source_keys = set(config(root / f"src-{source}")) | set(config(root / f"src-{source}").get("transformer_layer_config") or {})
    assert not any(k.startswith("eagle_config") for k in answer["missing_template_keys"])
    assert not set(answer["missing_template_keys"]) & source_keys
    assert "t2d" not in digests(root / f"from-{source}") and "embed_tokens.weight" not in digests(root / f"from-{source}")
