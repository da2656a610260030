"""tools/record_behaviour.py: compare passes identical recordings and names each planted difference (no engine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[1] / "tools" / "record_behaviour.py"

META = {"id": "_meta", "releases": {"vllm": ["0.18.0"], "sglang": ["0.5.13"]}, "scenarios": 2,
        "python": "/a/bin/python", "wall_seconds": 12.5}
DOCTOR = {"id": "doctor/x", "argv": ["compat", "doctor", "T", "D", "--json"], "exit_code": 1, "stderr": "",
          "stdout_json": {"verdict": "does not work",
                          "checks": [{"check": "layer-ids", "verdict": "pass"}, {"check": "vocab-maps", "verdict": "fail"}]}}
HUMAN = {"id": "doctor-human/y", "argv": ["compat", "doctor", "T", "D"], "exit_code": 0, "stderr": "",
         "stdout_json": "PASS one\nPASS two\nverdict: works as is\n"}


def write(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), "compare", str(a), str(b)], capture_output=True, text=True)


def test_identical_recordings_compare_equal_whatever_the_interpreter_and_wall_time(tmp_path):
    a = write(tmp_path / "a.jsonl", META, DOCTOR, HUMAN)
    b = write(tmp_path / "b.jsonl", {**META, "python": "/b/bin/python", "wall_seconds": 99.0}, HUMAN, DOCTOR)
    proc = compare(a, b)
    assert proc.returncode == 0, proc.stdout
    assert "2 scenarios identical" in proc.stdout


def test_a_planted_difference_is_named_by_scenario_and_json_path(tmp_path):
    changed = json.loads(json.dumps(DOCTOR))
    changed["stdout_json"]["checks"][1]["verdict"] = "warn"
    human = {**HUMAN, "stdout_json": HUMAN["stdout_json"].replace("PASS two", "FAIL two"), "exit_code": 1}
    a = write(tmp_path / "a.jsonl", META, DOCTOR, HUMAN)
    b = write(tmp_path / "b.jsonl", META, changed, human)
    proc = compare(a, b)
    assert proc.returncode == 1
    out = proc.stdout
    assert "doctor/x: 1 difference(s)" in out
    assert "$.stdout_json.checks[1].verdict:" in out and '"fail"' in out and '"warn"' in out
    assert "doctor-human/y: 2 difference(s)" in out and "$.exit_code:" in out
    assert "-PASS two" in out and "+FAIL two" in out  # multi-line text is shown as a line diff
    assert "2 of 2 scenarios differ" in out


def test_a_missing_scenario_or_a_different_release_list_is_a_difference(tmp_path):
    a = write(tmp_path / "a.jsonl", META, DOCTOR, HUMAN)
    b = write(tmp_path / "b.jsonl", {**META, "releases": {"vllm": ["0.18.0", "0.19.0"], "sglang": ["0.5.13"]}}, DOCTOR)
    proc = compare(a, b)
    assert proc.returncode == 1
    assert "doctor-human/y: only in A" in proc.stdout
    assert "$_meta.releases.vllm[1]" in proc.stdout


def test_normaliser_replaces_paths_and_timings_but_not_content(tmp_path):
    import importlib.util

    saved = list(sys.path)
    try:  # the tool puts tools/ on sys.path for its own modules: undo that for the rest of the session
        spec = importlib.util.spec_from_file_location("record_behaviour_under_test", TOOL)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    Normaliser = module.Normaliser

    norm = Normaliser(tmp_path, "/v/bin/python", "/v", "/src/compat-checkout")
    value = {"location": f"{tmp_path}/out-001", "probe_seconds": 0.42, "num_speculative_tokens": 3,
             "python": "/v/bin/python", "venv": "/v/lib", "file": "/src/compat-checkout/compat/cli.py",
             "home": str(Path.home() / ".cache" / "compat"), "detail": "fc takes 192 = 3 x 64", "text": "probed in 1.34 s, statically; 0.5 s of 2.25 s"}
    assert norm.value(value) == {
        "location": "<WORK>/out-001", "probe_seconds": "<SECONDS>", "num_speculative_tokens": 3,
        "python": "<PY>", "venv": "<VENV>/lib", "file": "<COMPAT>/compat/cli.py", "home": "~/.cache/compat",
        "detail": "fc takes 192 = 3 x 64", "text": "probed in <SECONDS> s, statically; 0.5 s of 2.25 s"}
