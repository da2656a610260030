"""Network errors that name the URL and the reason (network.py), and the progress line."""

from __future__ import annotations

import re

import pytest

from fake_index import Index

from compat.core.errors import SourceError
from compat.sources.released import fetch_release
from compat.sources.settings import NetworkOptions


# -- errors and progress ----------------------------------------------------------------------


def test_unreachable_index_is_retried_as_pip_does_then_a_source_error_with_url_and_reason(cache, monkeypatch):
    monkeypatch.setenv("PIP_RETRIES", "2")  # pip retries a refused connection too: after 0 s, then 0.5 s
    with pytest.raises(SourceError, match=r"^could not fetch http://127.0.0.1:9/simple/vllm/: connection refused "
                                          r"\(tried 3 times\)\n  fix: ") as caught:
        fetch_release("vllm", "latest", cache_dir=cache, index_url="http://127.0.0.1:9/simple/", progress=False)
    assert caught.value.exit_code == 3
    assert "could not fetch http://127.0.0.1:9/simple/vllm/: connection refused (tried 3 times)" in str(caught.value)
    # retried as pip does, then the fix of a refused connection: waiting longer will not help, the URL or proxy will
    assert caught.value.hint.startswith("nothing answers at 127.0.0.1:9: check the index URL")


def test_unknown_host_is_reported_as_dns(cache):
    with pytest.raises(SourceError, match=r"could not fetch http://no-such-host\.invalid/simple/vllm/: cannot resolve the host name"):
        fetch_release("vllm", "latest", cache_dir=cache, index_url="http://no-such-host.invalid/simple/", progress=False,
                      network=NetworkOptions(retries=0))


def test_project_missing_from_the_index(tmp_path, server_factory, cache):
    server = server_factory(Index(tmp_path / "empty"))
    with pytest.raises(SourceError, match=r"vllm is not on the package index http://127\.0\.0\.1"):
        fetch_release("vllm", "latest", cache_dir=cache, index_url=server.url, progress=False)


def test_missing_artifact_is_an_http_error(index, server_factory, cache):
    server = server_factory(index)
    (index.root / "files" / "vllm-0.9.0.tar.gz").unlink()
    with pytest.raises(SourceError, match=r"could not fetch http://\S+/files/vllm-0\.9\.0\.tar\.gz: HTTP 404"):
        fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=server.url, progress=False)
    assert list((cache / "releases" / "vllm").iterdir()) == []


def test_progress_line_on_a_non_terminal(index, cache, capsys):
    fetch_release("vllm", "==0.9.0", cache_dir=cache, index_url=index.file_url, progress=True)
    err = capsys.readouterr().err
    assert re.search(r"fetching vllm 0\.9\.0 \(\d+ B sdist\) from file://\S+/files/vllm-0\.9\.0\.tar\.gz\n", err)
    fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=index.file_url, progress=False)
    assert capsys.readouterr().err == ""


def test_a_long_fetch_into_a_log_says_how_far_it_is_every_few_seconds(capsys):
    """Into a pipe or a file (a CI log) a slow download is not one line and then silence: a line every `every`
    seconds while bytes arrive, with how much of how much; none in between, none with progress off."""
    from compat.sources.progress import Progress

    now = [100.0]
    progress = Progress(True, terminal=False, every=5.0, clock=lambda: now[0])
    progress.start("vllm 0.16.0 (29.2 MB sdist)", 29_200_000, "https://files.pythonhosted.org")
    for _ in range(12):  # 1 MB a second for 12 s
        now[0] += 1.0
        progress.advance(1_000_000)
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["fetching vllm 0.16.0 (29.2 MB sdist) from https://files.pythonhosted.org",
                     "fetching vllm 0.16.0 (29.2 MB sdist): 5.0 MB of 29.2 MB, 5 s",
                     "fetching vllm 0.16.0 (29.2 MB sdist): 10.0 MB of 29.2 MB, 10 s"]
    quiet = Progress(False, terminal=False, every=5.0, clock=lambda: now[0])
    quiet.start("vllm 0.16.0", 10, "x")
    now[0] += 60.0
    quiet.advance(10)
    assert capsys.readouterr().err == ""
