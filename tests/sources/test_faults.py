"""The network as pip handles it (issue 23, item 1), against a package index on 127.0.0.1 that misbehaves on
purpose (fake_index.Server.inject): every transient fault is retried or resumed and recovered; what cannot be
recovered is refused with one error naming the URL and the fix (exit 3), and nothing that failed its sha256 or a
member's CRC is ever cached. Short timeouts and few retries keep each test within a second or two."""

from __future__ import annotations

import json
import re
import time

import pytest

from fake_index import Index, make_sdist, make_wheel, package_files

from compat.core.errors import EXIT_SOURCE, SourceError
from compat.sources.released import fetch_release
from compat.sources.settings import NetworkOptions

SDIST = "vllm-0.10.0.tar.gz"
WHEEL = "vllm-0.15.0-py3-none-any.whl"


def fetch(server, specifier="==0.10.0", *, retries=3, timeout=1.0, cache, progress=False):
    return fetch_release("vllm", specifier, cache_dir=cache, index_url=server.url, progress=progress,
                         network=NetworkOptions(retries=retries, timeout=timeout))


def nothing_cached(cache) -> bool:
    folder = cache / "releases" / "vllm"
    return not folder.exists() or list(folder.iterdir()) == []


@pytest.fixture
def wheel_index(tmp_path) -> Index:
    index = Index(tmp_path / "wheels")
    index.publish("vllm", WHEEL, make_wheel("vllm", "0.15.0", modules=20))
    return index


# -- transient answers are retried, with back-off, and said ------------------------------------------------


@pytest.mark.parametrize("status", ["429", "500", "502", "503", "504"])
def test_a_transient_status_on_the_page_and_the_artifact_is_retried(status, index, server_factory, cache, capsys):
    server = server_factory(index)
    server.inject(status, "/simple/vllm/", times=2)
    server.inject(status, SDIST, times=1)
    tree = fetch(server, cache=cache, progress=True)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.10.0"))
    assert [e["status"] for e in server.log if e["path"] == "/simple/vllm/"] == [int(status), int(status), 200]
    assert [e["status"] for e in server.requests_for(SDIST)] == [int(status), 200]
    err = capsys.readouterr().err
    assert re.search(rf"waiting: HTTP {status} [^\n]* from 127\.0\.0\.1:\d+; retry 1 of 3\n", err)
    assert "retry 2 of 3 in 0.5 s" in err  # urllib3's back-off, as pip: 0, 0.5, 1, 2 ... s


def test_retry_after_is_honoured(index, server_factory, cache):
    server = server_factory(index)
    server.inject("503", SDIST, retry_after="1")
    started = time.monotonic()
    fetch(server, cache=cache)
    assert time.monotonic() - started >= 1.0


def test_a_status_that_persists_is_refused_with_the_url_and_the_fix(index, server_factory, cache):
    server = server_factory(index)
    server.inject("503", SDIST, times=99)
    with pytest.raises(SourceError, match=r"^could not fetch \S+: HTTP 503 .* \(tried 3 times\)\n  fix: ") as caught:
        fetch(server, retries=2, cache=cache)
    assert caught.value.exit_code == EXIT_SOURCE
    assert re.match(r"could not fetch http://127\.0\.0\.1:\d+/files/vllm-0\.10\.0\.tar\.gz: HTTP 503 .* \(tried 3 times\)$",
                    caught.value.message)
    assert "--retries (PIP_RETRIES; now 2)" in caught.value.hint and "--timeout" in caught.value.hint
    assert len(server.requests_for(SDIST)) == 3 and nothing_cached(cache)


def test_a_client_error_is_not_retried(index, server_factory, cache):
    server = server_factory(index)
    (index.root / "files" / SDIST).unlink()
    with pytest.raises(SourceError, match="HTTP 404"):
        fetch(server, cache=cache)
    assert len(server.requests_for(SDIST)) == 1


# -- broken transfers are resumed where they stopped ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["reset-early", "stall-early", "reset", "truncate", "stall"])
def test_a_broken_sdist_transfer_is_resumed_and_checked(kind, index, server_factory, cache):
    server = server_factory(index, stall=5)
    server.inject(kind, SDIST, at=0.4)
    tree = fetch(server, timeout=0.5, cache=cache)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.10.0"))
    assert tree.source.detail["verified"] == "sha256"
    requests = server.requests_for(SDIST)
    assert len(requests) == 2
    if not kind.endswith("-early"):  # the second request asks for the rest only
        had = int(re.fullmatch(r"bytes=(\d+)-", requests[1]["range"]).group(1))
        size = len((index.root / "files" / SDIST).read_bytes())
        assert requests[1]["status"] == 206 and requests[1]["sent"] == size - had
        assert had <= requests[0]["sent"]  # a reset may drop what was sent but not yet read
    assert json.loads((tree.root / "release.json").read_text())["resumed"] == (0 if kind.endswith("-early") else 1)


def test_a_resume_the_server_answers_whole_skips_what_was_had(index, server_factory, cache):
    server = server_factory(index)
    server.inject("truncate", SDIST, at=0.5)
    server.inject("ignore-range", SDIST)
    tree = fetch(server, cache=cache)
    assert [r["status"] for r in server.requests_for(SDIST)] == [200, 200]
    assert tree.source.detail["verified"] == "sha256" and sorted(tree.files()) == sorted(package_files("vllm", "0.10.0"))


def test_a_truncated_index_page_is_asked_for_again(index, server_factory, cache):
    server = server_factory(index)
    server.inject("truncate", "/simple/vllm/")
    assert fetch(server, "latest", cache=cache).version == "0.10.0"


@pytest.mark.parametrize("times, recovered", [(1, True), (2, False)])
def test_a_mangled_index_page_is_asked_for_once_more(times, recovered, index, server_factory, cache):
    server = server_factory(index)
    server.inject("corrupt", "/simple/vllm/", times=times, at=0.5)
    if recovered:
        assert fetch(server, "latest", cache=cache).version == "0.10.0"
    else:
        with pytest.raises(SourceError, match=r"simple/vllm/: the index sent a page that does not parse"):
            fetch(server, "latest", cache=cache)
    assert len([e for e in server.log if e["path"] == "/simple/vllm/"]) == 2


def test_a_stall_that_persists_gives_up_within_the_timeout(index, server_factory, cache):
    server = server_factory(index, stall=30)
    server.inject("stall", SDIST, times=99, at=0.3)
    started = time.monotonic()
    with pytest.raises(SourceError, match=r"^could not fetch \S+: download interrupted: no data for 0.5 s") as caught:
        fetch(server, retries=1, timeout=0.5, cache=cache)
    elapsed = time.monotonic() - started
    assert elapsed < 3  # two attempts of 0.5 s each (no back-off before the first retry), not the server's 30 s
    assert re.match(r"could not fetch http://\S+/files/vllm-0\.10\.0\.tar\.gz: download interrupted: no data for 0\.5 s",
                    caught.value.message)
    assert "raise --timeout (PIP_TIMEOUT; now 0.5 s)" in caught.value.hint
    assert nothing_cached(cache)


# -- never a bad byte ---------------------------------------------------------------------------------------


def test_flipped_bytes_once_are_fetched_again(index, server_factory, cache, capsys):
    server = server_factory(index)
    server.inject("corrupt", SDIST, at=0.9)  # past the gzip member's data: only the sha256 can tell
    tree = fetch(server, cache=cache, progress=True)
    assert tree.source.detail["verified"] == "sha256" and len(server.requests_for(SDIST)) == 2
    assert "sha256 mismatch" in capsys.readouterr().err


@pytest.mark.parametrize("at", [0.2, 0.9])
def test_flipped_bytes_every_time_are_refused_and_nothing_is_cached(at, index, server_factory, cache):
    server = server_factory(index)
    server.inject("corrupt", SDIST, times=99, at=at)  # in the compressed data (a gzip error first) or after it
    with pytest.raises(SourceError, match=r"vllm-0\.10\.0\.tar\.gz from \S+: sha256 mismatch .*; nothing was cached") as caught:
        fetch(server, cache=cache)
    assert caught.value.exit_code == EXIT_SOURCE and len(server.requests_for(SDIST)) == 2
    assert nothing_cached(cache)


@pytest.mark.parametrize("kind", ["corrupt", "wrong-range"])
def test_a_wheel_member_that_fails_its_crc_in_a_ranged_read_sends_the_whole_wheel_down(kind, wheel_index, server_factory, cache):
    server = server_factory(wheel_index)
    server.inject(kind, WHEEL, times=2, at=0.9)  # the tail, then the first member's span (flipped, or shifted under a lying header)
    tree = fetch(server, "==0.15.0", cache=cache)
    assert tree.source.detail["verified"] == "sha256"  # the whole wheel, checked against the index
    assert server.requests_for(WHEEL)[-1]["range"] is None and len(server.requests_for(WHEEL)) <= 3
    assert tree.read_bytes("vllm/config/speculative.py") == package_files("vllm", "0.15.0")["vllm/config/speculative.py"]


def test_a_wheel_whose_bytes_are_wrong_whole_too_is_refused(wheel_index, server_factory, cache):
    server = server_factory(wheel_index, ranges=False)
    server.inject("corrupt", WHEEL, times=99, at=0.5)
    with pytest.raises(SourceError, match="sha256 mismatch"):
        fetch(server, "==0.15.0", cache=cache)
    assert nothing_cached(cache)


def test_a_range_at_another_offset_is_read_whole(wheel_index, server_factory, cache):
    server = server_factory(wheel_index)
    server.inject("wrong-range", WHEEL, times=1, at=0.1)  # the header says where the bytes come from: not asked for
    tree = fetch(server, "==0.15.0", cache=cache)
    assert tree.source.detail["verified"] == "sha256" and tree.exists("vllm/config/speculative.py")


@pytest.mark.parametrize("kind", ["reset", "truncate", "503"])
def test_a_broken_range_is_asked_for_again(kind, wheel_index, server_factory, cache):
    server = server_factory(wheel_index)
    server.inject(kind, WHEEL, times=2, at=0.5)
    tree = fetch(server, "==0.15.0", cache=cache)
    assert tree.source.detail["verified"].startswith("crc32")  # still ranged: only the broken spans again
    assert all(r["range"] for r in server.requests_for(WHEEL))
    assert tree.read_bytes("vllm/config/speculative.py") == package_files("vllm", "0.15.0")["vllm/config/speculative.py"]
