"""matrix.json: every release of the range, every column, a verdict and evidence in every cell; the user's pair is
what `compat doctor --releases --json` says, release for release; the evidence lines exist in the release."""

from __future__ import annotations

import json
import re

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cli_helpers import compat
from matrix_site import FAMILIES, RANGES

from compat.doctor.diagnose import (DEPENDS, DEPENDS_LAYERS, DOES_NOT_WORK, NEEDS_CONVERT, WORKS, WORKS_PATCHED,
                                    WORKS_PATCHED_CONVERTED)
from compat.matrix import DRAFTER_KINDS, USER
from compat.matrix import FAMILIES as ALL_FAMILIES
from compat.matrix.method_templates import METHOD_KINDS

VERDICTS = {WORKS, WORKS_PATCHED, NEEDS_CONVERT, WORKS_PATCHED_CONVERTED, DEPENDS, DEPENDS_LAYERS, DOES_NOT_WORK}
EVIDENCE = {"vllm": re.compile(r"^https://github\.com/vllm-project/vllm/blob/v(?P<v>[\w.]+)/(?P<path>vllm/[\w/.-]+\.py)#L(?P<line>\d+)$"),
            "sglang": re.compile(r"^https://github\.com/sgl-project/sglang/blob/v(?P<v>[\w.]+)/python/(?P<path>sglang/[\w/.-]+\.py)#L(?P<line>\d+)$")}

pytestmark = pytest.mark.network  # the releases of RANGES, fetched once into the user cache


@pytest.fixture(scope="module")
def document(site):
    return json.loads((site / "matrix.json").read_text())


def test_every_release_of_the_range_and_every_column(document):
    import pinned

    assert document["schema"] == "compat.matrix/1"
    for engine, spec in RANGES.items():
        expected = [v for v in pinned.versions(engine) if SpecifierSet(spec).contains(Version(v))]
        assert document["engines"][engine]["versions"] == sorted(expected, key=Version)
        assert document["engines"][engine]["releases"] == spec
    ids = [c["id"] for c in document["columns"]]
    methods = [f"{f.id}/{mk.kind}" for mk in METHOD_KINDS for f in ALL_FAMILIES if f.id in FAMILIES and f.id in mk.families]
    assert ids == [USER] + [f"{f.id}/{k}" for f in ALL_FAMILIES if f.id in FAMILIES for k in DRAFTER_KINDS] + methods
    assert {c["method"] for c in document["columns"][1:]} == {"eagle3"} | {mk.method for mk in METHOD_KINDS
                                                                          if set(mk.families) & set(FAMILIES)}
    assert all(r["method"] for r in document["rows"] if r["column"] != USER)  # each row says its method
    cells = {(r["engine"], r["version"], r["column"]) for r in document["rows"]}
    assert cells == {(e, v, c) for e in RANGES for v in document["engines"][e]["versions"] for c in ids}


def test_every_cell_has_a_verdict_and_evidence_at_the_release_tag(document, pinned_release):
    trees = {}
    for row in document["rows"]:
        assert row["verdict"] in VERDICTS, row
        links = [c["evidence"] for c in row["checks"] if c["evidence"]]
        assert links, f"no evidence in {row['engine']} {row['version']} {row['column']}"
        for url in links:
            match = EVIDENCE[row["engine"]].match(url)
            assert match and match["v"] == row["version"], url
            key = (row["engine"], row["version"])
            if key not in trees:
                trees[key] = pinned_release(row["engine"], row["version"])
            source = (trees[key].root / match["path"]).read_text(encoding="utf-8", errors="replace")
            assert 1 <= int(match["line"]) <= source.count("\n") + 1, url  # the line is in the file the release ships
        failing = {c["check"] for c in row["checks"] if c["verdict"] == "fail"}
        assert set(row["failing"]) == failing
        assert (row["verdict"] == WORKS) == (not failing)


def test_the_columns_differ_where_the_families_and_drafters_do(document):
    """Not one verdict copied everywhere: the SpecForge and no-ids drafters differ on a release, and so do targets."""
    rows = [r for r in document["rows"] if r["engine"] == "vllm" and r["version"] == "0.34.0"]
    by_column = {r["column"]: r["verdict"] for r in rows}
    assert by_column["llama/no-ids"] == DEPENDS_LAYERS and by_column["llama/modelopt"] == DEPENDS
    assert by_column["llama/specforge"] == WORKS
    assert by_column["glm4-moe/specforge"] == DOES_NOT_WORK and "target-interface" in next(
        r["failing"] for r in rows if r["column"] == "glm4-moe/specforge")


@pytest.mark.parametrize("engine", sorted(RANGES))
def test_the_users_pair_is_what_doctor_releases_says(document, pair, engine):
    run = compat("doctor", pair[0], pair[1], "--engine", engine, "--releases", RANGES[engine], "--json", timeout=1800)
    assert run.code in (0, 1), run.err
    doctor = {r["version"]: r for r in run.json()["rows"]}
    mine = {r["version"]: r for r in document["rows"] if r["engine"] == engine and r["column"] == USER}
    assert sorted(mine) == sorted(doctor)
    for version, row in mine.items():
        for key in ("verdict", "fixes", "failing", "launch"):
            assert row.get(key) == doctor[version].get(key), (engine, version, key)
        assert [c["check"] for c in row["checks"]] == [c["check"] for c in doctor[version]["diagnosis"]["checks"]]


def test_markdown_groups_releases_and_prints_to_stdout(pair):
    run = compat("matrix", "--engine", "vllm", "--releases", RANGES["vllm"], "--family", "llama", "--method", "eagle3",
                 "--format", "md")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0] == f"**vLLM {RANGES['vllm']}**"
    assert lines[2] == "| releases | llama<br>speculators | llama<br>specforge | llama<br>modelopt | llama<br>no-ids |"
    assert any(line.startswith("| 0.33.0") for line in lines) and "ask: layers" in run.out
    assert run.out.rstrip().splitlines()[-1].startswith("cells: works = works as is")


def test_the_method_dimension(pair):
    """--method picks the columns of a method: DFlash on vLLM 0.33/0.34 (vllm#40727 is in both: SpecForge's ids are
    read +1) and n-gram, which takes no drafter."""
    run = compat("matrix", "--engine", "vllm", "--releases", RANGES["vllm"], "--family", "llama", "--method", "dflash",
                 "--method", "ngram", "--format", "json")
    assert run.code == 0, run.err
    document = json.loads(run.out)
    assert [c["id"] for c in document["columns"]] == ["llama/specforge-dflash", "llama/speculators-dflash", "llama/ngram"]
    assert {r["method"] for r in document["rows"]} == {"dflash", "ngram"}
    assert {r["verdict"] for r in document["rows"]} == {WORKS}


def test_usage_errors_name_the_flag(pair):
    run = compat("matrix", "--engine", "vllm", "--target", pair[0])
    assert run.code == 2 and "--target and --drafter go together" in run.err
    run = compat("matrix", "--engine", "vllm", "--releases", "sglang:>=0.5")
    assert run.code == 2 and "add --engine sglang" in run.err
    run = compat("matrix", "--engine", "vllm", "--releases", "not a spec", "--format", "json")
    assert run.code == 2 and "not a version specifier" in run.err


def test_a_progress_bar_on_a_terminal_and_plain_lines_into_a_pipe(tmp_path):
    """stderr a terminal (a pty): the bar names the releases as they go; into a pipe (issue 33): plain progress lines,
    one per line, no carriage return and no terminal escapes."""
    import os
    import pty
    import select
    import subprocess

    from cli_helpers import COMPAT

    args = [str(COMPAT), "matrix", "--engine", "vllm", "--releases", RANGES["vllm"], "--family", "llama", "--kind", "no-ids"]
    master, slave = pty.openpty()
    proc = subprocess.Popen([*args, "--out", tmp_path / "tty"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        ready = select.select([master], [], [], 1)[0]
        try:
            chunk = os.read(master, 65536) if ready else b""
        except OSError:  # the pty's other end closed: the process is done
            break
        seen += chunk
        if not chunk and proc.poll() is not None:
            break
    assert proc.wait(timeout=600) == 0
    os.close(master)
    assert b"matrix: vllm releases" in seen
    assert (tmp_path / "tty" / "matrix.html").stat().st_mode & 0o044  # readable by others, as a page is
    piped = compat(*args[1:], "--out", tmp_path / "pipe")
    assert piped.code == 0 and piped.err
    assert "\r" not in piped.err and "\x1b" not in piped.err
    assert all(line.startswith(("matrix: vllm ", "matrix: probing vllm ", "matrix: diagnosing vllm ")) for line in piped.err.splitlines())
    assert piped.out.startswith(f"wrote {tmp_path / 'pipe' / 'matrix.html'}")


def test_an_ask_cell_says_what_each_answer_gives(document, site):
    """An "ask" cell (the convention of ModelOpt's ids, the layers of a drafter that records none) carries the verdict
    each answer gives, and each is what doctor says when given that answer; the page and the markdown show them."""
    columns = {c["id"]: c for c in document["columns"]}
    asked = [r for r in document["rows"] if r["verdict"] in (DEPENDS, DEPENDS_LAYERS)]
    assert asked and all(r.get("answers") for r in asked)
    checked = 0
    for row in asked:
        flags = ("--layer-ids-convention",) if row["verdict"] == DEPENDS else ("--layer-ids",)
        assert all(flag.startswith(flags) for flag in row["answers"]) and set(row["answers"].values()) <= VERDICTS
        if row["engine"] != "vllm" or row["version"] != "0.34.0" or not row["column"].startswith("llama/"):
            continue
        column = columns[row["column"]]
        for flag, verdict in row["answers"].items():
            run = compat("doctor", column["target"], column["drafter"], "--engine", "vllm==0.34.0", *flag.split(), "--json")
            assert run.code in (0, 1), run.err
            assert run.json()["verdict"] == verdict, (row["column"], flag)
            checked += 1
    assert checked >= 3  # modelopt's two conventions and no-ids' default layers
    page = (site / "matrix.html").read_text()
    assert page.count('<small class="ans">') == len(asked)
    assert 'capture-before: ' in page and 'default ids: ' in page
