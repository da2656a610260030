"""`compat probe --path` on a copy of a release that someone edited reports what is there now."""

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.matrix, pytest.mark.network]


def test_edited_whitelist_is_reported(tmp_path, pinned_release):
    release = pinned_release("vllm", "0.11.0")
    copy = tmp_path / "vllm-0.11.0-edited"
    shutil.copytree(release.root / "vllm", copy / "vllm")
    spec = copy / "vllm" / "config" / "speculative.py"
    text = spec.read_text()
    assert text.count('"gpt_oss"') >= 1
    spec.write_text(text.replace('"gpt_oss"', '"gpt_oss", "kimi_k2"', 1))

    out = subprocess.run([sys.executable, "-m", "compat", "probe", "--path", str(copy), "--json"],
                         capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    assert report["source"]["kind"] == "path"
    assert report["eagle3_whitelist"]["model_types"] == ["llama", "qwen", "minicpm", "gpt_oss", "kimi_k2"]
    # The untouched release still reads as released.
    pristine = json.loads(subprocess.run([sys.executable, "-m", "compat", "probe", "--engine", "vllm==0.11.0", "--json"],
                                         capture_output=True, text=True, check=True).stdout)
    assert pristine["eagle3_whitelist"]["model_types"] == ["llama", "qwen", "minicpm", "gpt_oss"]
    assert pristine["eagle3_whitelist"]["location"].startswith("vllm/config/speculative.py:")
