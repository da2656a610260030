"""All vLLM probes together on a near-empty tree: order, version, tolerance, rendering."""

import io

from rich.console import Console

from compat.report import build_report, render
from compat.sources import open_path


def test_report_order_and_tolerance_on_a_tree_with_almost_nothing(tmp_path):
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("")
    (tmp_path / "vllm" / "_version.py").write_text("# generated\n__version__ = version = '0.12.3'\n")
    report = build_report(open_path(tmp_path))
    assert report["probe_errors"] == []
    keys = [k for k in report if k not in ("engine", "version", "source", "probe_errors", "probe_seconds")]
    assert keys[:7] == ["version_in_source", "speculative_config", "cli_flags", "eagle3_whitelist",
                        "eagle3_targets", "eagle3_drafters", "eagle3_drafter_classes"]
    assert keys[-3:] == ["target_architectures", "compat_patches", "compat_plugin"]  # the patch record follows the probes
    assert "aux_layer_ids" in keys
    assert report["compat_patches"] == []
    assert report["version_in_source"] == {"present": True, "version": "0.12.3", "location": "vllm/_version.py:2"}
    assert report["speculative_config"]["present"] is False
    assert report["eagle3_whitelist"]["present"] is False
    assert report["eagle3_targets"] == [] and report["eagle3_drafters"] == [] and report["cli_flags"] == []
    assert report["aux_layer_ids"]["read_from_config"] is False
    out = io.StringIO()
    render(report, Console(file=out, width=120))
    assert "absent in this release" in out.getvalue()
