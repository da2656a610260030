"""Which index (index.py): pip's environment variables and config files, extra indexes, credentials."""

from __future__ import annotations

import base64
import json

from fake_index import Index, make_sdist

from compat.sources.index import index_urls
from compat.sources.released import fetch_release


# -- which index ------------------------------------------------------------------------------


def test_pip_index_url_is_honoured(index, server_factory, cache, monkeypatch):
    server = server_factory(index)
    monkeypatch.setenv("PIP_INDEX_URL", server.url)
    tree = fetch_release("vllm", "latest", cache_dir=cache, progress=False)
    assert tree.source.detail["index"] == server.url and server.requests_for("vllm-0.10.0.tar.gz")


def test_pip_config_file_is_honoured_with_missing_file_indexes_skipped(index, server_factory, cache, tmp_path, monkeypatch):
    server = server_factory(index)
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nindex-url = http://127.0.0.1:9/nothing-here/\n"
        f"extra-index-url = file://{tmp_path}/missing/simple\n    {index.file_url}\n"
        f"[install]\nindex-url = {server.url}\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert index_urls() == [server.url, f"file://{tmp_path}/missing/simple", index.file_url]
    tree = fetch_release("vllm", "==0.9.0", cache_dir=cache, progress=False)
    assert tree.source.detail["index"] == server.url  # the main index wins for a file both list
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///nonexistent/simple")
    assert index_urls("http://override/simple/") == ["http://override/simple/", "file:///nonexistent/simple"]


def test_extra_index_lists_releases_the_main_index_lacks(index, tmp_path, cache, monkeypatch):
    other = Index(tmp_path / "other")
    other.publish("vllm", "vllm-0.13.0.tar.gz", make_sdist("vllm", "0.13.0"))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", f"{other.file_url} file:///nonexistent/simple")
    tree = fetch_release("vllm", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.version == "0.13.0" and tree.source.detail["index"] == other.file_url


def test_credentials_in_the_index_url_are_sent_but_never_stored(index, server_factory, cache):
    server = server_factory(index, auth="Basic " + base64.b64encode(b"me:s3cret").decode())
    url = server.url.replace("http://", "http://me:s3cret@")
    tree = fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=url, progress=False)
    assert tree.version == "0.9.0" and server.requests_for("vllm-0.9.0.tar.gz")[0]["status"] == 200
    stored = "".join(p.read_text() for p in cache.rglob("*.json"))
    assert "s3cret" not in stored and "s3cret" not in json.dumps(tree.source.to_json())
