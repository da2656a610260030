"""The facts cache (compat/facts.py) behind `build_report`: never a stale answer, never a torn entry.

Trees are written here (the patch tests' tiny vLLM-shaped tree, and hand-made "released" folders), so
nothing needs the network. RACY_SECONDS is 0 in most tests so a tree written a moment ago can be cached;
one test keeps the real value and checks that such a tree is not stored.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import json
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "patches"))

from patch_trees import snapshot, write_mini_vllm  # noqa: E402

from compat import cli, facts, report  # noqa: E402
from compat.report import build_report, build_reports, probe_missing  # noqa: E402
from compat.sources import open_path  # noqa: E402
from compat.core.tree import EngineTree, SourceInfo  # noqa: E402

SPEC = "vllm/config/speculative.py"


@pytest.fixture(autouse=True)
def isolated_facts(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPAT_FACTS_DIR", str(tmp_path / "facts"))
    monkeypatch.delenv("COMPAT_FACTS_CACHE", raising=False)
    monkeypatch.setattr(facts, "RACY_SECONDS", 0)


@pytest.fixture
def mini(tmp_path) -> Path:
    return write_mini_vllm(tmp_path / "mini")


def without_timing(rep: dict) -> dict:
    return {k: v for k, v in rep.items() if k != "probe_seconds"}


def probe_json(root: Path, capsys) -> dict:
    capsys.readouterr()
    assert cli.main(["probe", "--path", str(root), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def released_tree(folder: Path, version: str = "0.11.0") -> EngineTree:
    """A folder shaped like a cached release (release.json + vllm/), opened the way fetch_release opens it."""
    write_mini_vllm(folder, version)
    (folder / "release.json").write_text(json.dumps({"engine": "vllm", "version": version, "sha256": "ab" * 32}))
    return EngineTree("vllm", folder, version, SourceInfo("released", str(folder), {"cached": True}))


def entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "facts").rglob("*.json"))


# -- hits -------------------------------------------------------------------------------------------


def test_a_released_tree_is_probed_once_then_read_from_the_cache(tmp_path, monkeypatch):
    first = build_report(released_tree(tmp_path / "rel"))
    assert len(entries(tmp_path)) == 1
    monkeypatch.setattr(report, "_probe", lambda tree: pytest.fail("probed again"))
    again = build_report(released_tree(tmp_path / "rel"))
    assert without_timing(again) == without_timing(first)
    assert list(again) == list(first)  # the same keys in the same order as `compat probe --json` had


def test_released_facts_live_beside_the_release_and_other_trees_under_the_cache_dir(tmp_path, monkeypatch, mini):
    monkeypatch.delenv("COMPAT_FACTS_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    build_report(released_tree(tmp_path / "rel"))
    assert len(list((tmp_path / "rel" / "facts").glob("probe-report-*.json"))) == 1
    before = snapshot(mini)
    build_report(open_path(mini))
    assert snapshot(mini) == before  # nothing written inside the user's engine directory
    assert len(list((tmp_path / "xdg" / "compat" / "facts" / "vllm").rglob("probe-report-*.json"))) == 1


def test_the_cache_off_writes_nothing(tmp_path, monkeypatch, mini):
    monkeypatch.setenv("COMPAT_FACTS_CACHE", "off")
    assert build_report(open_path(mini))["eagle3_whitelist"]["present"] is True
    assert entries(tmp_path) == []


def test_a_tree_written_a_moment_ago_is_answered_but_not_stored(tmp_path, monkeypatch, mini):
    monkeypatch.setattr(facts, "RACY_SECONDS", 60.0)  # its files are younger than this
    assert build_report(open_path(mini))["version_in_source"]["version"] == "0.11.0"
    assert entries(tmp_path) == []


# -- never stale ------------------------------------------------------------------------------------


def test_path_tree_edited_to_the_same_size_with_another_mtime_is_probed_afresh(tmp_path, mini, capsys):
    before = probe_json(mini, capsys)
    assert before["eagle3_whitelist"]["model_types"] == ["llama", "qwen"]
    assert len(entries(tmp_path)) == 1
    spec = mini / SPEC
    stat = spec.stat()
    spec.write_text(spec.read_text().replace('"qwen"', '"mimo"'))
    assert spec.stat().st_size == stat.st_size
    os.utime(spec, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert probe_json(mini, capsys)["eagle3_whitelist"]["model_types"] == ["llama", "mimo"]


def test_path_tree_edited_with_size_and_mtime_put_back_is_probed_afresh(tmp_path, mini, capsys):
    probe_json(mini, capsys)
    spec = mini / SPEC
    stat = spec.stat()
    spec.write_text(spec.read_text().replace('"qwen"', '"mimo"'))
    os.utime(spec, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # `touch -r`: only the ctime tells
    assert probe_json(mini, capsys)["eagle3_whitelist"]["model_types"] == ["llama", "mimo"]


def test_path_tree_edited_to_another_size_is_probed_afresh(tmp_path, mini, capsys):
    probe_json(mini, capsys)
    spec = mini / SPEC
    spec.write_text(spec.read_text().replace('"qwen"', '"qwen", "glm4_moe"'))
    assert probe_json(mini, capsys)["eagle3_whitelist"]["model_types"] == ["llama", "qwen", "glm4_moe"]


def test_a_file_added_to_the_tree_is_seen(tmp_path, mini, capsys):
    probe_json(mini, capsys)
    (mini / "vllm" / "model_executor" / "models" / "llama_eagle3.py").write_text(
        "class Eagle3LlamaForCausalLM:\n    pass\n")
    first, second = entries(tmp_path), None
    probe_json(mini, capsys)
    second = entries(tmp_path)
    assert len(second) == len(first) + 1  # a new key: the answer was computed, not read


def test_compat_patch_and_revert_are_never_answered_from_a_stale_cache(tmp_path, mini, capsys):
    before = probe_json(mini, capsys)
    assert before["compat_patches"] == [] and "kimi_k2" not in before["eagle3_whitelist"]["model_types"]
    mine = ["--select", "vllm-eagle3-whitelist", "--select", "vllm-deepseek-eagle3-aux"]  # the patches the mini tree has files for
    assert cli.main(["patch", "--path", str(mini), *mine]) == 0
    patched = probe_json(mini, capsys)
    assert "kimi_k2" in patched["eagle3_whitelist"]["model_types"]
    assert [p["id"] for p in patched["compat_patches"]] == ["vllm-eagle3-whitelist", "vllm-deepseek-eagle3-aux"]
    assert cli.main(["patch", "--path", str(mini), "--revert"]) == 0
    reverted = probe_json(mini, capsys)
    assert without_timing(reverted) == without_timing(before)


def test_an_in_memory_overlay_gets_its_own_answer(tmp_path, mini):
    tree = open_path(mini)
    pristine = build_report(tree)
    changed = tree.text(SPEC).replace('"qwen"', '"qwen", "kimi_k2"').encode()
    overlay = tree.overlay({SPEC: changed})
    assert build_report(overlay)["eagle3_whitelist"]["model_types"] == ["llama", "qwen", "kimi_k2"]
    assert build_report(tree.overlay({SPEC: changed}))["eagle3_whitelist"]["model_types"][-1] == "kimi_k2"
    assert len(entries(tmp_path)) == 2  # the pristine tree and the overlay, each under its own key
    assert without_timing(build_report(open_path(mini))) == without_timing(pristine)


def test_the_tree_says_what_it_holds_in_memory(mini):
    """What the key is made of comes from EngineTree's own public view, not from its private dicts."""
    tree = EngineTree("vllm", mini, "0.11.0", SourceInfo("path", str(mini)))
    assert tree.pristine() and dict(tree.in_memory()) == {}
    tree.parse(SPEC)
    assert not tree.pristine() and dict(tree.in_memory()) == {SPEC: (mini / SPEC).read_bytes()}
    view = tree.overlay({SPEC: b"x = 1\n"})
    assert view.in_memory()[SPEC] == b"x = 1\n" and tree.in_memory()[SPEC] != b"x = 1\n"
    with pytest.raises(TypeError, match="does not support item assignment"):
        tree.in_memory()[SPEC] = b""  # a view: what the tree answers with is changed through overlay only


def test_the_key_changes_when_a_probe_file_changes(tmp_path, monkeypatch, mini):
    probes = Path(facts.code_files()["compat.probes/./__init__.py"]).parent
    copy = tmp_path / "probes-copy"
    shutil.copytree(probes, copy, ignore=shutil.ignore_patterns("__pycache__"))
    real_spec = facts._spec

    def spec(name: str):
        if name == "compat.probes":
            moved = importlib.machinery.ModuleSpec(name, None, is_package=True)
            moved.submodule_search_locations = [str(copy)]
            return moved
        return real_spec(name)

    monkeypatch.setattr(facts, "_spec", spec)
    facts._module_file.cache_clear()
    facts.code_digest.cache_clear()
    tree = open_path(mini)
    key = facts.slot(tree).key
    assert facts.slot(open_path(mini)).key == key
    (copy / "vllm" / "eagle3_whitelist.py").write_text((copy / "vllm" / "eagle3_whitelist.py").read_text() + "\n# edited\n")
    facts.code_digest.cache_clear()
    assert facts.slot(open_path(mini)).key != key
    facts._module_file.cache_clear()
    facts.code_digest.cache_clear()


def test_the_digest_follows_what_the_probes_import_from_compat():
    files = facts.code_files()
    assert {"compat.report", "compat.core.tree", "compat.sources.version"} <= set(files)  # report.py; probes import the rest
    assert any(label.startswith("compat.probes/vllm/") for label in files)
    assert "compat.patching" not in files and "compat.sources.released" not in files


# -- never torn -------------------------------------------------------------------------------------


@pytest.mark.parametrize("garbage", ['{"format": 1, "key": "', "[]", '{"format": 1, "key": "x", "value": 3}', ""])
def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path, mini, garbage):
    first = build_report(open_path(mini))
    (entry,) = entries(tmp_path)
    entry.write_text(garbage)
    assert without_timing(build_report(open_path(mini))) == without_timing(first)
    assert json.loads(entry.read_text())["key"] == facts.slot(open_path(mini)).key


def test_an_entry_of_the_right_key_but_wrong_shape_is_ignored(tmp_path, mini):
    first = build_report(open_path(mini))
    (entry,) = entries(tmp_path)
    data = json.loads(entry.read_text())
    entry.write_text(json.dumps({**data, "value": {"facts": "nope"}}))
    assert without_timing(build_report(open_path(mini))) == without_timing(first)


def _write_many(root: str, seed: int, rounds: int) -> None:
    place = facts.slot(open_path(root))
    for _ in range(rounds):
        place.store({"facts": {"filler": [seed] * 40000}, "probe_errors": []})


def test_concurrent_writers_never_leave_a_torn_entry(tmp_path, mini):
    place = facts.slot(open_path(mini))
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write_many, args=(str(mini), seed, 30)) for seed in (1, 2, 3)]
    for writer in writers:
        writer.start()
    reads = 0
    while any(w.is_alive() for w in writers) or reads == 0:
        with contextlib.suppress(FileNotFoundError):
            value = json.loads(place.path.read_bytes())["value"]  # raises on a torn file
            filler = value["facts"]["filler"]
            assert len(filler) == 40000 and len(set(filler)) == 1
            reads += 1
    for writer in writers:
        writer.join(30)
    assert [w.exitcode for w in writers] == [0, 0, 0] and reads > 0
    assert not [p for p in place.path.parent.iterdir() if p.name.startswith(".")]  # no temp file left


def test_old_entries_and_temp_files_of_killed_writers_are_pruned(tmp_path, mini, monkeypatch):
    monkeypatch.setattr(facts, "KEEP_PER_TREE", 2)
    tree = open_path(mini)
    build_report(tree)
    (entry,) = entries(tmp_path)
    orphan = entry.parent / f".{entry.name}.killed"
    orphan.write_text('{"format": 1')
    os.utime(orphan, (0, 0))
    for n in range(3):  # three overlays: three more entries in the same folder
        build_report(open_path(mini).overlay({SPEC: open_path(mini).read_bytes(SPEC) + b"#%d\n" % n}))
    assert not orphan.exists()
    assert len(entries(tmp_path)) == 2


# -- a range of releases ----------------------------------------------------------------------------


def test_build_reports_probes_the_missing_trees_in_worker_processes(tmp_path, monkeypatch):
    trees = [released_tree(tmp_path / v, v) for v in ("0.11.0", "0.11.1")]
    monkeypatch.setenv("COMPAT_FACTS_CACHE", "off")
    alone = [build_report(tree) for tree in trees]  # probed here, nothing stored
    monkeypatch.delenv("COMPAT_FACTS_CACHE")
    trees = [released_tree(tmp_path / v, v) for v in ("0.11.0", "0.11.1")]
    assert entries(tmp_path) == []
    assert probe_missing(trees[:1], workers=2) == 0  # one tree: no worker is started (build_report will probe it)
    monkeypatch.setattr(report, "_probe", lambda tree: pytest.fail("probed in this process"))
    reports = build_reports(trees, workers=2)  # spawned workers probe and store; this process only reads
    assert probe_missing(trees, workers=2) == 0  # nothing missing any more
    assert [r["version"] for r in reports] == ["0.11.0", "0.11.1"]
    assert len(entries(tmp_path)) == 2
    assert [without_timing(r) for r in reports] == [without_timing(r) for r in alone]


# -- start-up ---------------------------------------------------------------------------------------

_RUN = """
import contextlib, io, json, sys
from compat import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = cli.main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules), "out": out.getvalue()}))
"""


def run_compat(*argv: str, env: dict) -> dict:
    import subprocess

    done = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout)


def loaded(modules: list[str], *names: str) -> list[str]:
    return [m for m in modules if any(m == n or m.startswith(n + ".") for n in names)]


def test_probe_json_imports_only_what_it_needs(tmp_path):
    cache = tmp_path / "cache"
    released_tree(cache / "releases" / "vllm" / "0.11.0")
    env = {**os.environ, "COMPAT_FACTS_DIR": str(tmp_path / "facts")}
    first = run_compat("probe", "--engine", "vllm==0.11.0", "--cache-dir", str(cache), "--json", env=env)
    warm = run_compat("probe", "--engine", "vllm==0.11.0", "--cache-dir", str(cache), "--json", env=env)
    assert first["code"] == warm["code"] == 0
    assert {k: v for k, v in json.loads(first["out"]).items() if k != "probe_seconds"} == \
           {k: v for k, v in json.loads(warm["out"]).items() if k != "probe_seconds"}
    heavy = ("rich", "libcst", "numpy", "torch", "compat.patching", "compat.patches", "compat.doctor", "compat.convert",
             "compat.commands.patch", "compat.commands.doctor", "compat.commands.convert")
    assert loaded(first["modules"], *heavy) == []
    # a cached pin read from the facts cache: no probes, no packaging, no network code
    assert loaded(warm["modules"], *heavy, "compat.probes", "packaging", "compat.sources.network",
                  "compat.sources.index", "ssl", "http.client", "hashlib") == []


def test_help_still_lists_every_command(capsys):
    with pytest.raises(SystemExit, match="^0$"):  # help printed, exit 0
        cli.main(["--help"])
    out = capsys.readouterr().out
    for name in ("probe", "patch", "convert", "doctor"):
        assert name in out
