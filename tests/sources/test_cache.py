"""The release cache (cache.py): cached pins offline, killed fetches, concurrent fetches, the cached listing."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from fake_index import Index, make_sdist, package_files

from compat.core.errors import EXIT_SOURCE, SourceError
from compat.sources import index as index_module
from compat.sources.released import cache_root, fetch_release, list_releases


# -- cache and offline ------------------------------------------------------------------------


def test_cached_pin_needs_no_network(index, server_factory, cache):
    server = server_factory(index)
    first = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False)
    assert first.source.detail["cached"] is False
    asked = len(server.log)
    again = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url="http://127.0.0.1:9/simple/", progress=False)
    assert again.root == first.root and again.source.detail["cached"] is True
    assert again.source.detail["downloaded_bytes"] == 0
    assert len(server.log) == asked


def test_offline_with_a_warm_cache_resolves_latest_and_ranges_from_the_last_listing(index, server_factory, cache):
    server = server_factory(index)
    fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)
    server.close()  # nothing to talk to any more
    tree = fetch_release("vllm", "latest", cache_dir=cache, offline=True, progress=False, index_url=server.url)
    assert tree.version == "0.10.0" and tree.source.detail["cached"] is True
    assert fetch_release("vllm", ">=0.10,<0.11", cache_dir=cache, offline=True, progress=False).version == "0.10.0"
    assert list_releases("vllm", cache_dir=cache, offline=True) == ["0.9.0", "0.10.0"]
    with pytest.raises(SourceError, match=r"^offline and vllm==0.9.0 is not in the cache .+\n  fix: run once without "
                                          r"--offline to fetch it \(cached: 0.10.0\)") as caught:  # listed, never fetched
        fetch_release("vllm", "<0.10", cache_dir=cache, offline=True, progress=False)
    assert caught.value.exit_code == 3
    assert f"offline and vllm==0.9.0 is not in the cache {cache / 'releases' / 'vllm'}" in str(caught.value)


def test_offline_with_a_cold_cache_fails_clearly_without_touching_the_network(index, server_factory, cache):
    server = server_factory(index)
    with pytest.raises(SourceError, match=r"^offline and vllm==0.10.0 is not in the cache .+\n  fix: run once without "
                                          r"--offline to fetch it \(cached: none\)") as caught:
        fetch_release("vllm", "==0.10.0", cache_dir=cache, offline=True, progress=False, index_url=server.url)
    assert caught.value.exit_code == EXIT_SOURCE
    assert str(caught.value).startswith(f"offline and vllm==0.10.0 is not in the cache {cache / 'releases' / 'vllm'}")
    with pytest.raises(SourceError, match="offline and no index listing of vllm"):
        fetch_release("vllm", "latest", cache_dir=cache, offline=True, progress=False, index_url=server.url)
    assert server.log == []


def test_listing_is_reused_briefly_then_refreshed(index, server_factory, cache, monkeypatch):
    server = server_factory(index)
    pages = lambda: len([e for e in server.log if e["path"] == "/simple/vllm/"])  # noqa: E731
    fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)
    fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False)
    assert pages() == 1
    index.publish("vllm", "vllm-0.12.0.tar.gz", make_sdist("vllm", "0.12.0"))
    # a pin newer than the cached listing refreshes it at once
    assert fetch_release("vllm", "==0.12.0", cache_dir=cache, index_url=server.url, progress=False).version == "0.12.0"
    assert pages() == 2
    monkeypatch.setattr(index_module, "LISTING_TTL", 0)
    assert list_releases("vllm", index_url=server.url, cache_dir=cache)[-1] == "0.12.0"
    assert pages() == 3


def test_cache_root_default_and_override(tmp_path, monkeypatch):
    assert cache_root(tmp_path / "c") == tmp_path / "c"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "compat"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "compat"


def test_default_cache_is_under_xdg_cache_home(index, tmp_path):
    tree = fetch_release("vllm", "==0.9.0", index_url=index.file_url, progress=False)
    assert tree.root == tmp_path / "xdg-cache" / "compat" / "releases" / "vllm" / "0.9.0"


def test_sha256_mismatch_is_rejected_and_nothing_is_cached(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    index.publish("vllm", "vllm-0.3.0.tar.gz", make_sdist("vllm", "0.3.0"), sha256="0" * 64)
    server = server_factory(index)
    with pytest.raises(SourceError, match="sha256 mismatch") as caught:
        fetch_release("vllm", "==0.3.0", cache_dir=cache, index_url=server.url, progress=False)
    assert caught.value.exit_code == 3 and "vllm-0.3.0.tar.gz" in str(caught.value)
    assert list((cache / "releases" / "vllm").iterdir()) == []  # no release, no temp dir
    with pytest.raises(SourceError, match="not in the cache"):
        fetch_release("vllm", "==0.3.0", cache_dir=cache, offline=True, progress=False)


def test_a_killed_fetch_leaves_no_visible_tree_and_is_cleaned_up(index, cache):
    releases = cache / "releases" / "vllm"
    (releases / ".tmp-0.9.0-killed" / "vllm").mkdir(parents=True)  # what a killed process leaves
    (releases / "0.10.0" / "vllm").mkdir(parents=True)  # a tree under the final name with a broken record
    (releases / "0.10.0" / "vllm" / "__init__.py").write_text("")
    (releases / "0.10.0" / "release.json").write_text('{"version": "0.1')
    tree = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert not (releases / ".tmp-0.9.0-killed").exists()
    assert tree.exists("vllm/__init__.py")
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.source.detail["cached"] is False and tree.exists("vllm/config/speculative.py")
    assert sorted(p.name for p in releases.iterdir()) == ["0.10.0", "0.9.0"]


def test_unusable_cache_folder_is_a_source_error(index, tmp_path):
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SourceError, match=r"cannot use the cache .*a-file.* while writing vllm 0\.9\.0 into it") as caught:
        fetch_release("vllm", "==0.9.0", cache_dir=tmp_path / "a-file" / "cache", index_url=index.file_url, progress=False)
    assert caught.value.exit_code == 3 and "--cache-dir" in str(caught.value)


def _fetch_in_child(cache: str, url: str, queue) -> None:
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=url, progress=False)
    queue.put((str(tree.root), tree.source.detail["cached"]))


def test_concurrent_fetches_download_once_and_leave_one_good_tree(index, server_factory, cache):
    server = server_factory(index, delay=0.5)  # the artifact is slow: the two fetches overlap
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_fetch_in_child, args=(str(cache), server.url, queue)) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(30)
    assert [child.exitcode for child in children] == [0, 0]
    results = sorted(queue.get(timeout=5) for _ in children)
    assert results[0][0] == results[1][0] == str(cache / "releases" / "vllm" / "0.10.0")
    assert sorted(cached for _, cached in results) == [False, True]  # the second waited, then reused it
    assert len(server.requests_for("vllm-0.10.0.tar.gz")) == 1
    assert sorted(p.name for p in (cache / "releases" / "vllm").iterdir()) == ["0.10.0"]
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, offline=True, progress=False)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.10.0"))


def test_a_cached_listing_and_a_cached_pin_need_no_network_code(index, cache):
    import subprocess
    import sys

    fetch_release("vllm", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    code = (
        "import json, sys\n"
        "from compat.sources.released import fetch_release, list_releases\n"
        f"versions = list_releases('vllm', cache_dir={str(cache)!r}, offline=True)\n"
        f"tree = fetch_release('vllm', '==0.10.0', cache_dir={str(cache)!r}, offline=True, progress=False)\n"
        "heavy = [m for m in sys.modules if m in ('ssl', 'http.client', 'urllib.request', 'html.parser')"
        " or m in ('compat.sources.network', 'compat.sources.pages', 'compat.sources.download')]\n"
        "print(json.dumps([versions, tree.version, heavy]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [["0.9.0", "0.10.0"], "0.10.0", []]
