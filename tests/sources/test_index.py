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


# -- how to talk to it: pip's options, variables and config, in pip's order ---------------------------------


def test_network_settings_follow_pip_option_then_variable_then_config_then_default(tmp_path, monkeypatch):
    from compat.sources.settings import NetworkOptions, configure

    assert (NetworkOptions.resolve().retries, NetworkOptions.resolve().timeout) == (5, 15.0)  # pip's defaults
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nretries = 7\ntimeout = 40\n[download]\ntimeout = 50\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert (NetworkOptions.resolve().retries, NetworkOptions.resolve().timeout) == (7, 50.0)  # a command's section wins
    monkeypatch.setenv("PIP_RETRIES", "2")
    monkeypatch.setenv("PIP_TIMEOUT", "3.5")
    assert (NetworkOptions.resolve().retries, NetworkOptions.resolve().timeout) == (2, 3.5)
    configure(retries=0, timeout=1.0, index_url="http://cli/simple/")  # the command line's options
    try:
        resolved = NetworkOptions.resolve()
        assert (resolved.retries, resolved.timeout, resolved.index_url) == (0, 1.0, "http://cli/simple/")
        assert NetworkOptions.resolve(index_url="http://argument/simple/").index_url == "http://argument/simple/"
        assert index_urls() == ["http://cli/simple/"]
    finally:
        configure()


def test_the_ca_bundle_is_pip_cert_then_requests_variables(tmp_path, monkeypatch):
    from compat.sources.settings import NetworkOptions

    first, second = tmp_path / "a.pem", tmp_path / "b.pem"
    first.write_text("")
    second.write_text("")
    assert NetworkOptions.resolve().cafile is None  # the system's (OpenSSL honours SSL_CERT_FILE itself)
    monkeypatch.setenv("CURL_CA_BUNDLE", str(second))
    assert NetworkOptions.resolve().cafile == str(second)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(first))
    assert NetworkOptions.resolve().cafile == str(first)
    monkeypatch.setenv("PIP_CERT", str(second))
    assert NetworkOptions.resolve().cafile == str(second)
