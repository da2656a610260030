"""Trust, proxies and credentials as pip has them (settings.py, auth.py, network.py): an https index signed by a
CA of the test's own (made by openssl), trusted through PIP_CERT, REQUESTS_CA_BUNDLE or SSL_CERT_FILE and refused
without; a real forward proxy used through HTTP_PROXY / HTTPS_PROXY (CONNECT) / PIP_PROXY and bypassed for NO_PROXY;
netrc credentials."""

from __future__ import annotations

import base64

import pytest

from trust_parts import Proxy, make_ca

from compat.core.errors import SourceError
from compat.sources.released import fetch_release
from compat.sources.settings import NetworkOptions


@pytest.fixture(scope="module")
def certificate_authority(tmp_path_factory):
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture
def https(index, server_factory, certificate_authority):
    return server_factory(index, tls=certificate_authority[1])


@pytest.fixture
def proxy():
    running = Proxy()
    yield running
    running.close()


def fetch(server, cache, **options):
    return fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False,
                         network=NetworkOptions.resolve(**options) if options else None)


def test_an_index_signed_by_an_unknown_ca_is_refused_at_once(https, cache, monkeypatch):
    monkeypatch.setenv("PIP_RETRIES", "3")
    with pytest.raises(SourceError, match=r"^could not fetch https://127.0.0.1:\d+/simple/vllm/: TLS certificate not "
                                          r"trusted \(.+\); a proxy or mirror with its own CA needs PIP_CERT") as caught:
        fetch(https, cache)
    assert "TLS certificate not trusted" in caught.value.message and "tried" not in caught.value.message  # not retried
    assert "PIP_CERT" in caught.value.message and caught.value.exit_code == 3


@pytest.mark.parametrize("variable", ["PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"])
def test_the_ca_bundle_pip_would_trust_is_trusted(variable, https, cache, certificate_authority, monkeypatch):
    monkeypatch.setenv(variable, str(certificate_authority[0]))
    tree = fetch(https, cache)
    assert tree.version == "0.9.0" and https.requests_for("vllm-0.9.0.tar.gz")[0]["status"] == 200


def test_cert_in_pip_conf_is_trusted(https, cache, certificate_authority, tmp_path, monkeypatch):
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\ncert = {certificate_authority[0]}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    assert fetch(https, cache).version == "0.9.0"


def test_a_ca_bundle_that_is_not_pem_is_one_clear_error(https, cache, tmp_path, monkeypatch):
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate\n")
    monkeypatch.setenv("PIP_CERT", str(bogus))
    with pytest.raises(SourceError, match=r"cannot use the TLS settings \(CA bundle .*bogus\.pem"):
        fetch(https, cache)


def test_http_proxy_carries_the_requests_and_no_proxy_bypasses_it(index, server_factory, proxy, cache, monkeypatch):
    server = server_factory(index)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    assert fetch(server, cache).version == "0.9.0"
    assert ("GET", server.url + "vllm/") in proxy.log
    assert any(method == "GET" and url.endswith("/files/vllm-0.9.0.tar.gz") for method, url in proxy.log)
    carried = len(proxy.log)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=server.url, progress=False)
    assert len(proxy.log) == carried and server.requests_for("vllm-0.10.0.tar.gz")


def test_https_proxy_tunnels_with_connect(https, proxy, cache, certificate_authority, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("PIP_CERT", str(certificate_authority[0]))
    assert fetch(https, cache).version == "0.9.0"
    port = https.url.split(":")[2].split("/")[0]
    assert ("CONNECT", f"127.0.0.1:{port}") in proxy.log


def test_pip_proxy_is_used_for_every_scheme(index, server_factory, proxy, cache, monkeypatch):
    server = server_factory(index)
    monkeypatch.setenv("PIP_PROXY", proxy.url)
    assert fetch(server, cache).version == "0.9.0" and proxy.log


def test_netrc_credentials_are_sent_to_their_host(index, server_factory, cache, tmp_path, monkeypatch):
    server = server_factory(index, auth="Basic " + base64.b64encode(b"me:n3trc").decode())
    with pytest.raises(SourceError, match="HTTP 401"):
        fetch(server, cache)
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1\n  login me\n  password n3trc\n")
    monkeypatch.setenv("NETRC", str(netrc))
    assert fetch(server, cache).version == "0.9.0"
    assert "n3trc" not in "".join(p.read_text() for p in cache.rglob("*.json"))
