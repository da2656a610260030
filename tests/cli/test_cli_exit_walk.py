"""Issue 33, item 5: every command follows the exit-code table (compat/core/output.py) on the same four mistakes: a
path that names nothing (2), an interpreter that is not there (2), a release that does not exist (3), and an input
that exists but is the wrong kind (4: a folder without config.json, a file where a folder goes or the reverse, a
--python that is no program; 3 for a --path that holds no engine: "not a tree"). One line, a fix, no traceback. The unknown releases are asked of the package index (marker network)."""

from __future__ import annotations

import pytest
from cli_helpers import compat, fake_serving_venv

MISSING = "/no/such/path"
BAD_PYTHON = "/no/such/python"
UNKNOWN = "vllm==99.0"

WALK = [  # (command words, expected exit code); `S/` is the samples folder, `EMPTY` an empty folder
    (["probe", "--path", MISSING], 2), (["probe", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["probe", "--engine", UNKNOWN], 3), (["probe", "--path", "EMPTY"], 3),
    (["patch", "--path", MISSING], 2), (["patch", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["patch", "--engine", UNKNOWN], 3), (["patch", "--path", "EMPTY"], 3),
    (["probe", "--engine", "vllm", "--python", "S/Kimi-K2.5/config.json"], 4),  # there, but not a program
    (["plugin", "install", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["plugin", "install", "--engine", "vllm", "--path", MISSING], 2), (["plugin", "install", "--engine", "vllm", "--path", "EMPTY"], 3),
    (["plugin", "install", "--engine", "vllm", "--target", "S/Kimi-K2.5/config.json"], 4),
    (["plugin", "status", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["convert", "ckpt", MISSING, "out", "--to", "vllm"], 2),
    (["convert", "ckpt", "S/kimi-k2-eagle3", "out", "--to", "vllm", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["convert", "ckpt", "S/kimi-k2-eagle3", "out", "--to", "vllm", "--engine", UNKNOWN], 3),
    (["convert", "ckpt", "EMPTY", "out", "--to", "vllm"], 4),
    (["explain", "--log", MISSING, "--engine", "vllm", "--python", "SERVING"], 2),
    (["explain", "x", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["explain", "x", "--engine", UNKNOWN], 3), (["explain", "x", "--path", "EMPTY"], 3),
    (["explain", "--log", "EMPTY", "--engine", "vllm", "--python", "SERVING"], 4),
    (["doctor", "S/Kimi-K2.5", MISSING, "--path", "SERVING_TREE"], 2),
    (["doctor", "S/Kimi-K2.5", "S/kimi-k25-eagle3-ft", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["doctor", "S/Kimi-K2.5", "S/kimi-k25-eagle3-ft", "--engine", UNKNOWN], 3),
    (["doctor", "S/Kimi-K2.5", "EMPTY", "--path", "SERVING_TREE"], 4),
    (["matrix", "--engine", "vllm", "--target", MISSING, "--drafter", "S/kimi-k2-eagle3", "--format", "md"], 2),
    (["matrix", "--engine", "vllm", "--releases", "vllm:==99.0", "--format", "md"], 3),
    (["matrix", "--engine", "vllm", "--target", "EMPTY", "--drafter", "S/kimi-k2-eagle3", "--format", "md"], 4),
    (["verify", "S/Kimi-K2.5", "S/kimi-k25-eagle3-ft", "--engine", "vllm", "--python", BAD_PYTHON], 2),
    (["verify", MISSING, "S/kimi-k25-eagle3-ft", "--engine", "vllm", "--python", "SERVING"], 2),
    (["verify", "S/Kimi-K2.5", "EMPTY", "--engine", "vllm", "--python", "SERVING"], 4),
    (["verify", "S/Kimi-K2.5", "S/kimi-k25-eagle3-ft", "--engine", "vllm", "--python", "SERVING", "--prompts", "EMPTY"], 4),
    (["cache", "list", "--cache-dir", "S/Kimi-K2.5/config.json"], 4),
    (["env", "--python", BAD_PYTHON], 2), (["env", "--python", "S/Kimi-K2.5/config.json"], 4),
    (["samples", "S/Kimi-K2.5/config.json"], 4),
]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    from cli_helpers import engine_tree

    root = tmp_path_factory.mktemp("walk")
    assert compat("samples", root / "S").code == 0
    (root / "EMPTY").mkdir()
    tree = engine_tree(root / "tree")
    return root, fake_serving_venv(root / "venv-serve", tree=tree), tree


@pytest.mark.parametrize("words, code", [pytest.param(w, c, marks=[pytest.mark.network] if UNKNOWN in " ".join(w)
                                                      or "99.0" in " ".join(w) else [], id=" ".join(w))
                                         for w, c in WALK])
def test_every_command_gives_the_documented_exit_code(work, words, code):
    root, serving, tree = work
    argv = [{"SERVING": str(serving), "SERVING_TREE": str(tree)}.get(w, w) for w in words]
    run = compat(*argv, cwd=root)
    assert run.code == code, (run.code, run.err)
    assert "Traceback" not in run.err and "Traceback" not in run.out
    if words[0] != "env" or "--python" not in words:  # env prints its report, and says the failed interpreter in it
        assert run.err.count("error:") == 1, run.err  # said once


def test_swapped_models_are_named(work):
    root, _, tree = work
    doctor = compat("doctor", "S/kimi-k25-eagle3-ft", "S/Kimi-K2.5", "--path", str(tree), cwd=root)
    assert doctor.code == 2 and "TARGET and DRAFTER look swapped: S/kimi-k25-eagle3-ft is a drafter" in doctor.err
    assert "fix: the target first: compat doctor S/Kimi-K2.5 S/kimi-k25-eagle3-ft" in doctor.err
    convert = compat("convert", "ckpt", "S/Kimi-K2.5", "out", "--to", "vllm", "--target", "S/kimi-k25-eagle3-ft",
                     cwd=root)
    assert convert.code == 2 and "SRC and --target look swapped" in convert.err
    assert "compat convert ckpt S/kimi-k25-eagle3-ft out --to vllm --target S/Kimi-K2.5" in convert.err
    alone = compat("convert", "ckpt", "S/Kimi-K2.5", "out", "--to", "vllm", cwd=root)
    assert alone.code == 2 and "is a target model" in alone.err and not (root / "out").exists()


def test_a_model_of_the_wrong_kind_is_named(work):
    """The swap's siblings: the same folder given twice, a drafter as TARGET, a target's config as DRAFTER."""
    root, _, tree = work
    twice = compat("doctor", "S/Kimi-K2.5", "S/Kimi-K2.5", "--path", str(tree), cwd=root)
    assert twice.code == 2 and "DRAFTER S/Kimi-K2.5 (the same folder as TARGET) is a target model" in twice.err, twice.err
    assert "fix: the drafter second: compat doctor S/Kimi-K2.5 DRAFTER" in twice.err and twice.err.count("error:") == 1
    drafters = compat("doctor", "S/kimi-k25-eagle3-ft", "S/kimi-k2-eagle3", "--path", str(tree), cwd=root)
    assert drafters.code == 2 and "TARGET S/kimi-k25-eagle3-ft is a drafter" in drafters.err, drafters.err
    assert "compat doctor TARGET S/kimi-k2-eagle3" in drafters.err
    right = compat("doctor", "S/Kimi-K2.5", "S/kimi-k25-eagle3-ft", "--path", str(tree), cwd=root)
    assert "is a drafter" not in right.err and "is a target model" not in right.err, right.err
