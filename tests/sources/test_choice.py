"""Which version and which artifact (choice.py), on every kind of index."""

from __future__ import annotations

import json

import pytest

from fake_index import version_of

from compat.core.errors import EXIT_SOURCE, SourceError
from compat.sources import open_tree
from compat.sources.released import fetch_release, list_releases


# -- version selection ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "http-json", "http-html"])
def test_latest_is_the_highest_final_release_on_every_kind_of_index(kind, index, server_factory, cache):
    url = index.file_url if kind == "file" else server_factory(index, json_api=kind == "http-json").url
    tree = fetch_release("vllm", "latest", cache_dir=cache, index_url=url, progress=False)
    # 0.10.1 is yanked, 0.11.0rc1 and 0.11.0.dev3 are not final
    assert tree.version == "0.10.0" and version_of(tree) == "0.10.0"
    assert tree.exists("vllm/config/speculative.py")
    assert tree.source.kind == "released" and tree.source.detail["index"] == url
    assert list_releases("vllm", index_url=url, cache_dir=cache) == ["0.9.0", "0.10.0"]


def test_http_index_is_asked_for_json_then_html(index, server_factory, cache):
    server = server_factory(index, json_api=False)
    fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)
    page = [e for e in server.log if e["path"] == "/simple/vllm/"]
    assert len(page) == 1 and page[0]["status"] == 200
    listing = json.loads((cache / "index" / "vllm.json").read_text())
    by_name = {row["filename"]: row for row in listing["files"]}
    # from the HTML: the #sha256= fragment and data-yanked
    assert by_name["vllm-0.10.1.tar.gz"]["yanked"] is True
    assert by_name["vllm-0.9.0.tar.gz"]["sha256"] == index.projects["vllm"][0]["hashes"]["sha256"]
    assert "#" not in by_name["vllm-0.9.0.tar.gz"]["url"]


@pytest.mark.parametrize(
    "specifier, expected",
    [
        (">=0.9,<0.10", "0.9.0"),
        ("<0.11", "0.10.0"),
        ("~=0.9", "0.10.0"),
        (">=0.11.0rc1", "0.11.0rc1"),  # names a pre-release: pre-releases allowed
        ("==0.11.0rc1", "0.11.0rc1"),
        ("==0.11.0.dev3", "0.11.0.dev3"),
        ("==0.10.1", "0.10.1"),  # yanked, but pinned with ==
        ("==0.10", "0.10.0"),  # PEP 440: 0.10 == 0.10.0
    ],
)
def test_specifier_picks_the_highest_match(specifier, expected, index, cache):
    tree = fetch_release("vllm", specifier, cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.version == expected and version_of(tree) == expected


def test_no_match_is_a_source_error_naming_the_newest_and_closest(index, cache):
    with pytest.raises(SourceError, match=r"^no release of vllm matches ==0.99.0 on \S+ \(newest: 0.10.0\)\n  fix: closest "
                                          r"available: 0.9.0, 0.10.0") as caught:
        fetch_release("vllm", "==0.99.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert caught.value.exit_code == EXIT_SOURCE == 3
    message = str(caught.value)
    assert f"no release of vllm matches ==0.99.0 on {index.file_url} (newest: 0.10.0)" in message
    assert "closest available: 0.9.0, 0.10.0" in message


def test_yanked_and_pre_releases_are_explained_when_they_are_all_that_matches(index, cache):
    with pytest.raises(SourceError, match=r"0\.10\.1 is yanked \(pin it with ==0\.10\.1"):
        fetch_release("vllm", ">0.10.0,<0.10.5", cache_dir=cache, index_url=index.file_url, progress=False)
    with pytest.raises(SourceError, match=r"0\.11\.0rc1 is a pre-release"):
        fetch_release("vllm", ">0.10.5", cache_dir=cache, index_url=index.file_url, progress=False)


def test_open_tree_parses_the_engine_spec_and_fetches(index, cache, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", index.file_url)
    tree = open_tree("vllm==0.9.0", cache_dir=cache, progress=False)
    assert tree.version == "0.9.0" and tree.root == cache / "releases" / "vllm" / "0.9.0"
