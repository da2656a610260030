"""The SGLang `error_sites` probe on a real SGLang release's source (0.5.9, pinned: tests/releases.json). SGLang cannot run here, so its messages are not rendered by SGLang itself: the test checks that the
sites compat explain relies on are found where that release has them (the `accept len` piece of the decode log
line, the drafter's layer check) and that each pattern matches its own template with the holes filled in (a
stand-in for what SGLang would print)."""

from __future__ import annotations

import re

import pytest

from compat.probes.sglang.error_sites import error_sites


@pytest.fixture(scope="module")
def sites(pinned_release):
    tree = pinned_release("sglang", "0.5.9")
    value = error_sites(tree)
    assert value["present"] and value["unparsed"] == []
    return tree, value


def test_the_decode_log_lines_accept_len_piece(sites):
    tree, value = sites
    (site,) = [s for s in value["sites"] if s["template"].startswith("accept len")]
    assert site["kind"] == "log" and site["level"] == "info"
    relpath, _, line = site["location"].rpartition(":")
    assert "accept len" in tree.text(relpath).splitlines()[int(line) - 1]
    assert re.search(site["pattern"], "Decode batch. #running-req: 1, accept len: 1.50, accept rate: 0.25, ")


def test_drafter_and_server_args_sites_are_found(sites):
    tree, value = sites
    files = {s["location"].rpartition(":")[0] for s in value["sites"]}
    assert "sglang/srt/server_args.py" in files and "sglang/srt/models/llama_eagle3.py" in files
    for site in value["sites"]:
        if site["pattern"]:
            relpath, _, line = site["location"].rpartition(":")
            assert tree.exists(relpath) and int(line) >= 1
            filled = site["template"].replace("{}", "7").split("\n")[0]
            if "\n" not in site["template"] and "{}" not in site["template"]:
                assert re.search(site["pattern"], filled), site
