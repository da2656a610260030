"""A warm `compat probe --engine vllm==X` (the release and its probe answers cached) stays fast (issue 42): counted,
not timed. In a fresh process it imports none of the heavy modules, opens the facts entry once and decodes only its
index (the facts are copied as the entry holds their text), and reads nothing of the release: neither its files nor
their sizes against the manifest (a stat per file, 2,600 for vLLM, had been a third of the run). The release is still
checked where its files are read: with the facts cache off, a damaged release is refused offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "patches"))

from patch_trees import write_mini_vllm  # noqa: E402

from compat.sources.manifest import write_manifest  # noqa: E402

# A fresh interpreter runs the command in-process and says what it imported, opened and decoded.
_RUN = """
import contextlib, io, json, sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and isinstance(args[0], str) else None)
from compat import cli, fact_parts
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue(), "opened": opened,
                  "decodes": [[path, part, n] for (path, part), n in fact_parts.DECODES.items()]}))
"""

HEAVY = ("rich", "libcst", "numpy", "torch", "jsonschema", "packaging", "compat.probes", "compat.patching",
         "compat.patches", "compat.doctor", "compat.checks", "compat.explain", "compat.sources.manifest",
         "compat.sources.settings", "compat.sources.released", "compat.sources.index", "compat.sources.network", "compat.sources.download",
         "compat.report_summary", "compat.core.interpreter", "typing", "ssl", "http.client", "concurrent.futures",
         "multiprocessing")


@pytest.fixture
def cache(tmp_path) -> Path:
    """A cached vLLM 0.11.0 as download.py leaves it: its files, manifest.json and the record sealing it."""
    folder = write_mini_vllm(tmp_path / "cache" / "releases" / "vllm" / "0.11.0")
    sealed = write_manifest(folder, "vllm")
    (folder / "release.json").write_text(json.dumps({"engine": "vllm", "version": "0.11.0", "sha256": "ab" * 32,
                                                     "manifest": sealed}))
    return tmp_path / "cache"


def bare_modules() -> set[str]:
    """What this interpreter has imported before any of compat's code runs (site's .pth files may import typing)."""
    done = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def run(cache: Path, tmp_path: Path, *extra: str, facts: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPAT_")}
    env.update(COMPAT_FACTS_DIR=str(tmp_path / "facts"), **({} if facts else {"COMPAT_FACTS_CACHE": "off"}))
    argv = ["probe", "--engine", "vllm==0.11.0", "--cache-dir", str(cache), *extra]
    done = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def without_timing(out: str) -> dict:
    return {k: v for k, v in json.loads(out).items() if k != "probe_seconds"}


def test_a_warm_probe_imports_no_heavy_module_opens_its_facts_once_and_reads_nothing_of_the_release(cache, tmp_path):
    cold = run(cache, tmp_path, "--json")  # probes the release (its files read, checked first) and keeps the answers
    assert "compat.sources.manifest" in cold["modules"] and "compat.probes" in cold["modules"]
    warm = run(cache, tmp_path, "--json")
    assert cold["code"] == warm["code"] == 0
    assert without_timing(warm["out"]) == without_timing(cold["out"])
    assert loaded(sorted(set(warm["modules"]) - bare_modules()), HEAVY) == []
    entry, = [p for p in (tmp_path / "facts").rglob("probe-report-*.json")]
    assert warm["opened"].count(str(entry)) == 1
    assert warm["decodes"] == [[str(entry), "", 1]]  # its index, once; every fact copied as text, none decoded
    release = cache / "releases" / "vllm" / "0.11.0"
    assert [p for p in warm["opened"] if p.startswith(str(release / "vllm"))] == []
    assert str(release / "manifest.json") not in warm["opened"]


def test_a_warm_probe_answers_from_the_facts_and_the_damage_is_found_where_the_files_are_read(cache, tmp_path):
    first = run(cache, tmp_path, "--json")
    spec = cache / "releases" / "vllm" / "0.11.0" / "vllm" / "config" / "speculative.py"
    spec.write_bytes(spec.read_bytes()[:10])  # cut short after the answers were kept
    warm = run(cache, tmp_path, "--json", "--offline")
    assert warm["code"] == 0 and without_timing(warm["out"]) == without_timing(first["out"])  # the release as fetched
    unkept = run(cache, tmp_path, "--json", "--offline", facts=False)  # the probes would read the files: checked
    assert unkept["code"] == 3
    assert "is damaged: vllm/config/speculative.py has 10 bytes" in json.loads(unkept["out"])["error"]


def test_the_human_summary_is_answered_the_same_way(cache, tmp_path):
    cold = run(cache, tmp_path)
    warm = run(cache, tmp_path)
    assert cold["code"] == warm["code"] == 0 and warm["out"] == cold["out"]
    assert loaded(warm["modules"], ("compat.probes", "compat.sources.manifest", "packaging")) == []
