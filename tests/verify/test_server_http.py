"""The bounded client of verify --server against real sockets: servers that lie about sizes, never end, dribble,
answer HTML or refuse the key. Each must end in one typed error, in bounded time and memory."""

from __future__ import annotations

import time

import pytest

from compat.core.errors import EXIT_REFUSED, EXIT_SOURCE, EXIT_USAGE
from compat.verify.server.http import (Client, HttpStatus, NotJson, ResponseTooLarge, TooSlow, Unauthorized, Unreachable,
                                       normalize_url)
from server_fakes import FakeServer, sse


def _endless(req):
    req.start_chunked("application/json")
    try:
        while True:
            req.chunk(b"[" * 65536)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _dribble(req):
    req.start_chunked("application/json")
    try:
        for _ in range(200):
            req.chunk(b" ")
            time.sleep(0.05)
        req.end_chunked()
    except (BrokenPipeError, ConnectionResetError):
        pass


def _sse_dribble(req):
    req.start_chunked()
    try:
        for _ in range(200):
            req.chunk(b": keep-alive\n")
            time.sleep(0.05)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _sse_dribble_no_newline(req):
    """An event that never ends: one byte at a time, well within the socket timeout, never a newline."""
    req.start_chunked()
    try:
        req.chunk(b"data: ")
        for _ in range(400):
            req.chunk(b"x")
            time.sleep(0.05)
    except (BrokenPipeError, ConnectionResetError):
        pass


def _huge_event(req):
    req.start_chunked()
    try:
        req.chunk(b"data: " + b"x" * (2 << 20) + b"\n\n")
        req.end_chunked()
    except (BrokenPipeError, ConnectionResetError):
        pass


ROUTES = {
    "GET /liar": lambda r: r.h.send_response(200) or r.h.send_header("Content-Length", str(1 << 40)) or r.h.end_headers(),
    "GET /endless": _endless,
    "GET /dribble": _dribble,
    "GET /html": lambda r: r.send(200, "<html>hello</html>", "text/html"),
    "GET /key": lambda r: r.send(200, {"ok": True}) if r.headers.get("Authorization") == "Bearer s3cret"
    else r.send(401, {"error": "unauthorized"}),
    "GET /missing-route": lambda r: r.send(404, {"detail": "Not Found"}),
    "POST /stream": lambda r: sse(r, [{"n": i} for i in range(3)]),
    "POST /stream-dribble": _sse_dribble,
    "POST /stream-dribble-no-newline": _sse_dribble_no_newline,
    "POST /stream-huge": _huge_event,
    "POST /stream-bad": lambda r: sse(r, []) if False else (r.start_chunked(), r.chunk(b"data: {not json\n\n"), r.end_chunked()),
}


@pytest.fixture(scope="module")
def server():
    with FakeServer(ROUTES) as s:
        yield s


def test_a_size_it_announces_over_the_cap_is_refused_before_reading(server):
    with pytest.raises(ResponseTooLarge, match=r"/liar announced 1099511627776 bytes, more than the \d+ this answer may "
                                               r"have; refused$") as err:
        Client(server.url).get_bytes("/liar")
    assert err.value.exit_code == EXIT_REFUSED and "announced" in err.value.message


def test_an_endless_body_is_cut_at_the_cap(server):
    started = time.monotonic()
    with pytest.raises(ResponseTooLarge, match="/endless sent more than 1048576 bytes; refused$"):
        Client(server.url).get_bytes("/endless", max_bytes=1 << 20)
    assert time.monotonic() - started < 10


def test_a_dribbling_server_meets_the_deadline(server):
    started = time.monotonic()
    with pytest.raises(TooSlow, match=r"/dribble " + r"took longer than \S+ s\n  fix: a slow or overloaded server: raise --request-timeout"):
        Client(server.url, io_timeout=5, deadline=1.0).get_bytes("/dribble")
    assert time.monotonic() - started < 3


def test_html_is_not_json_and_a_404_is_a_status(server):
    with pytest.raises(NotJson, match=r"/html did not answer JSON \('<html>hello</html>'\)$") as err:
        Client(server.url).get_json("/html")
    assert "'<html>hello</html>'" in err.value.message
    with pytest.raises(HttpStatus, match=r"/missing-route answered HTTP 404 Not Found: ") as err:
        Client(server.url).get_json("/missing-route")
    assert err.value.status == 404


def test_401_says_which_key_to_set(server):
    with pytest.raises(Unauthorized, match=r"asks for an API key \(HTTP 401\) and none was given\n  fix: set "
                                           r"OPENAI_API_KEY=<the server's key> or pass --api-key KEY") as err:
        Client(server.url).get_json("/key")
    assert err.value.exit_code == EXIT_USAGE and "OPENAI_API_KEY" in str(err.value) and "--api-key" in str(err.value)
    with pytest.raises(Unauthorized, match=r"refused the API key from --api-key \(HTTP 401\)\n  fix: give the key the "
                                           r"server was started with") as err:
        Client(server.url, api_key="wrong", key_source="--api-key").get_json("/key")
    assert "refused the API key from --api-key" in err.value.message
    assert Client(server.url, api_key="s3cret", key_source="--api-key").get_json("/key") == {"ok": True}


def test_unreachable_is_exit_3_and_names_the_url():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(Unreachable, match=f"^cannot reach http://127.0.0.1:{port}/v1/models: connection refused\n  fix: "
                                          "check the URL") as err:
        Client(f"http://127.0.0.1:{port}").get_json("/v1/models")
    assert err.value.exit_code == EXIT_SOURCE and "connection refused" in err.value.message
    with pytest.raises(Unreachable, match="^cannot reach http://no-such-host.invalid/v1/models: cannot resolve the host "
                                          "name") as err:
        Client("http://no-such-host.invalid").get_json("/v1/models")
    assert "resolve" in err.value.message


def test_server_sent_events(server):
    client = Client(server.url)
    assert [e for _, e in client.stream_events("/stream", {}, deadline=10)] == [{"n": 0}, {"n": 1}, {"n": 2}]
    with pytest.raises(TooSlow, match=r"/stream-dribble " + r"took longer than \S+ s\n  fix: a slow or overloaded server: raise --request-timeout"):
        list(client.stream_events("/stream-dribble", {}, deadline=0.5))
    started = time.monotonic()
    # found by tests/hostile: a readline waited for the newline as long as bytes came
    with pytest.raises(TooSlow, match=r"/stream-dribble-no-newline " + r"took longer than \S+ s\n  fix: a slow or overloaded server: raise --request-timeout"):
        list(Client(server.url, io_timeout=5).stream_events("/stream-dribble-no-newline", {}, deadline=0.5))
    assert time.monotonic() - started < 5
    with pytest.raises(ResponseTooLarge, match="/stream-huge sent more than 1048576 bytes in one event; refused$"):
        list(client.stream_events("/stream-huge", {}, deadline=10))
    with pytest.raises(NotJson, match=r"/stream-bad streamed an event that is not JSON \('\{not json'\)$"):
        list(client.stream_events("/stream-bad", {}, deadline=10))


@pytest.mark.parametrize("given, base", [
    ("127.0.0.1:8000", "http://127.0.0.1:8000"), ("http://host:8000/", "http://host:8000"),
    ("https://llm.example.com/v1", "https://llm.example.com"), ("https://h/prefix/v1/", "https://h/prefix"),
])
def test_normalize_url(given, base):
    assert normalize_url(given) == base


def test_normalize_url_refuses_other_schemes():
    with pytest.raises(ValueError, match=r"^'ftp://host' is not an http\(s\) URL$"):
        normalize_url("ftp://host")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """The same routes over https, with a self-signed certificate for 127.0.0.1 made by openssl (the fixture is the
    `openssl` part's, tests/parts.py: its tests are marked, and skipped without it)."""
    import ssl
    import subprocess

    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    server = FakeServer(ROUTES)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
    with server:
        yield server.url.replace("http://", "https://"), cert


def test_https_verifies_the_certificate_and_takes_the_ca_from_ssl_cert_file(tls_server, monkeypatch):
    url, cert = tls_server
    with pytest.raises(Unreachable, match=r"^cannot reach https://127.0.0.1:\d+/key: TLS certificate not trusted \(.+\); "
                                          r"set SSL_CERT_FILE to the CA that signed it") as err:
        Client(url).get_json("/key")
    assert "TLS certificate not trusted" in err.value.message and "SSL_CERT_FILE" in err.value.message
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    assert Client(url, api_key="s3cret", key_source="--api-key").get_json("/key") == {"ok": True}
