"""Issue 40, point 7: no stale word. compat reads every method a release accepts, not EAGLE-3 only, and its help,
page title and package description say so; convert's help names every layout it has; counts agree with their
nouns ("1 finding", not "1 findings"); the README's package count is pyproject's."""

from __future__ import annotations

import re
import tomllib

from cli_helpers import ROOT, compat, engine_tree

from compat.core.output import plural


def test_the_help_says_every_method_not_eagle3_only():
    for argv in (["--help"], ["probe", "--help"], ["convert", "ckpt", "--help"]):
        text = compat(*argv).out
        assert "DFlash" in text and "DSpark" in text, (argv, text[:600])
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    assert "DFlash" in description and "EAGLE-3 speculative-decoding drafters" not in description


def test_convert_help_names_every_layout():
    from compat.checkpoints import all_layouts

    layouts = list(all_layouts())
    assert len(layouts) >= 8
    ckpt = compat("convert", "ckpt", "--help").out
    assert all(re.search(rf"^  {name}\s", ckpt, re.M) for name in layouts), ckpt
    top = compat("convert", "--help").out
    assert "every layout" in top and "vllm|sglang|speculators|eagle|mla" not in top  # not five of the eight


def test_the_matrix_page_asks_about_every_method():
    from compat.matrix.page import render_html

    document = {"engines": {"vllm": {"releases": "==0.20.0", "versions": ["0.20.0"]}}, "columns": [], "rows": []}
    page = render_html(document, command="compat matrix --engine vllm", generated="now")
    assert "EAGLE-3 drafter, and" not in page and "<h1>Which release serves your drafter, by method" in page
    assert "<title>compat matrix: speculative decoding on" in page


def test_counts_agree_with_their_nouns(tmp_path, env):
    assert [plural(1, "finding"), plural(2, "finding"), plural(1, "class"), plural(3, "class"), plural(0, "entry"),
            plural(1, "file")] == ["1 finding", "2 findings", "1 class", "3 classes", "0 entries", "1 file"]
    tree = engine_tree(tmp_path / "t")
    (tree / "vllm" / "config").mkdir()
    (tree / "vllm" / "config" / "speculative.py").write_text(
        "class SpeculativeConfig:\n    def _verify_args(self):\n        raise ValueError('Eagle3 is only supported here')\n")
    run = compat("explain", "ValueError: Eagle3 is only supported here", "--path", tree, env=env)
    assert "(1 line)" in run.out and "(1 lines)" not in run.out, run.out
    probe = compat("probe", "--path", tree, "--full", env=env).out
    assert "1 site in 1 file" in probe and "1 files" not in probe, probe


def test_the_readme_counts_the_packages_pip_install_brings():
    readme = (ROOT / "README.md").read_text()
    said = re.search(r"`pip install \.` brings (\w+) packages \(([^)]*)\)", readme)
    assert said, "the README says which packages `pip install .` brings"
    names = {n.strip() for n in said.group(2).split(",")}
    declared = {re.split(r"[<>=!~ ]", d, maxsplit=1)[0].lower()
                for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    words = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    assert names == declared and said.group(1) == words[len(declared)], (names, declared)
