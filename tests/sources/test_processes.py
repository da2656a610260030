"""Several real `compat` processes and one cache (issue 23, item 2): concurrent fetches of one release download it
once; a fetcher killed while it holds the release's lock is taken over by the next; a stalled index ends a run
within --timeout with exit 3 and one error; pip's variables and options are honoured on the command line."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fake_index import package_files

SDIST = "vllm-0.10.0.tar.gz"


def env(tmp_path: Path, **extra: str) -> dict:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "COMPAT_")) and "PROXY" not in k.upper()}
    return {**keep, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "PIP_CONFIG_FILE": os.devnull, "HOME": str(tmp_path / "home"),
            "COMPAT_FACTS_CACHE": "off", **extra}


def compat(*args: str, env: dict, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "compat", *args], env=env, **{"stdout": subprocess.PIPE,
                            "stderr": subprocess.PIPE, "text": True, **popen})


def probe(server, cache: Path, *extra: str) -> list[str]:
    return ["probe", "--engine", "vllm==0.10.0", "--index-url", server.url, "--cache-dir", str(cache), *extra]


def test_concurrent_probes_of_one_release_download_it_once(index, server_factory, cache, tmp_path):
    server = server_factory(index, delay=1.0)  # the artifact is slow: every process asks while the first fetches
    runs = [compat(*probe(server, cache, "--json"), env=env(tmp_path)) for _ in range(4)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0, 0], [err for _, err in outputs]
    assert len(server.requests_for(SDIST)) == 1
    sources = [json.loads(out)["source"] for out, _ in outputs]
    assert sorted(s["cached"] for s in sources) == [False, True, True, True]
    assert {s["location"] for s in sources} == {str(cache / "releases" / "vllm" / "0.10.0")}
    assert sorted(p.name for p in (cache / "releases" / "vllm").iterdir()) == ["0.10.0"]


def test_a_fetcher_killed_while_it_holds_the_lock_is_taken_over(index, server_factory, cache, tmp_path):
    server = server_factory(index, stall=60)
    server.inject("stall", SDIST, at=0.5)  # the first fetch hangs half-way, holding the release's lock
    first = compat(*probe(server, cache, "--timeout", "60"), env=env(tmp_path))
    lock = cache / "locks" / "vllm-0.10.0.lock"
    deadline = time.monotonic() + 30
    while not (server.requests_for(SDIST) and lock.is_file() and lock.read_text().strip()):
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    assert lock.read_text().strip() == str(first.pid)
    second = compat(*probe(server, cache), env=env(tmp_path))  # not --json: it says what it waits for
    said: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [said.put(line) for line in second.stderr], daemon=True).start()
    assert said.get(timeout=60) == f"waiting: another compat (pid {first.pid}) is fetching vllm 0.10.0 into {cache}\n"
    assert second.poll() is None  # and it waits
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert second.wait(timeout=60) == 0
    requests = server.requests_for(SDIST)  # it took the lock over and fetched the release itself
    assert len(requests) == 2 and requests[1]["sent"] == (index.root / "files" / SDIST).stat().st_size
    assert sorted(p.name for p in (cache / "releases" / "vllm").iterdir()) == ["0.10.0"]  # the killed one's .tmp-* gone
    tree = cache / "releases" / "vllm" / "0.10.0"
    assert {p.relative_to(tree).as_posix() for p in (tree / "vllm").rglob("*.py")} == set(package_files("vllm", "0.10.0"))


@pytest.mark.parametrize("how", ["options", "pip-variables"])
def test_a_stalled_index_ends_within_the_timeout_with_exit_3_and_one_error(how, index, server_factory, cache, tmp_path):
    server = server_factory(index, stall=60)
    server.inject("stall", SDIST, times=99, at=0.5)
    if how == "options":
        args, run_env = probe(server, cache, "--timeout", "0.5", "--retries", "1"), env(tmp_path)
    else:
        args, run_env = probe(server, cache), env(tmp_path, PIP_TIMEOUT="0.5", PIP_RETRIES="1")
    started = time.monotonic()
    run = compat(*args, env=run_env)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 3 and time.monotonic() - started < 10
    lines = err.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err
    assert errors[0].startswith(f"error: could not fetch {server.url.replace('/simple/', '/files/')}{SDIST}: download "
                                "interrupted: no data for 0.5 s")
    assert lines[lines.index(errors[0]) + 1].startswith("  fix: a slow or busy index: raise --timeout (PIP_TIMEOUT; now 0.5 s)")
    assert len(server.requests_for(SDIST)) == 2  # the first try and one retry


@pytest.mark.parametrize("args, extra, said", [
    (["--retries", "-1"], {}, "argument --retries: expected a whole number, 0 or more: '-1'"),
    (["--timeout", "0"], {}, "argument --timeout: expected seconds, more than 0: '0'"),
    ([], {"PIP_RETRIES": "many"}, "PIP_RETRIES='many': expected a whole number of retries, 0 or more"),
    ([], {"PIP_CERT": "/nonexistent/ca.pem"}, "PIP_CERT=/nonexistent/ca.pem: no such file"),
])
def test_bad_network_settings_are_refused_naming_them(args, extra, said, index, server_factory, cache, tmp_path):
    server = server_factory(index)
    run = compat(*probe(server, cache, *args), env=env(tmp_path, **extra))
    _, err = run.communicate(timeout=60)
    assert run.returncode in (2, 3) and said in err and "Traceback" not in err
    assert server.requests_for(SDIST) == []


def test_a_damaged_cached_release_is_refused_offline_and_fetched_again_online(index, server_factory, cache, tmp_path):
    server = server_factory(index)
    assert compat(*probe(server, cache), env=env(tmp_path)).wait(timeout=60) == 0
    damaged = cache / "releases" / "vllm" / "0.10.0" / "vllm" / "config" / "speculative.py"
    damaged.write_bytes(damaged.read_bytes()[:10])  # a file cut short (a full disk, a crash without fsync)
    listed = compat("cache", "list", "--json", "--cache-dir", str(cache), env=env(tmp_path)).communicate(timeout=60)[0]
    assert [r["state"] for r in json.loads(listed)["releases"]] == ["damaged"]
    offline = compat(*probe(server, cache, "--offline"), env=env(tmp_path))
    _, err = offline.communicate(timeout=60)
    assert offline.returncode == 3
    assert "is damaged: vllm/config/speculative.py has 10 bytes, the manifest says" in err
    assert "fix: compat cache clean vllm==0.10.0, then run without --offline to fetch it again" in err
    online = compat(*probe(server, cache), env=env(tmp_path))
    out, err = online.communicate(timeout=60)
    assert online.returncode == 0
    assert "note: the cached vllm 0.10.0 is damaged (vllm/config/speculative.py has 10 bytes" in err
    assert damaged.read_bytes() == package_files("vllm", "0.10.0")["vllm/config/speculative.py"]
    assert len(server.requests_for(SDIST)) == 2


def test_on_a_terminal_the_progress_bar_says_when_it_is_waiting(index, server_factory, cache, tmp_path):
    import pty
    import re as regex

    server = server_factory(index, delay=0.3)
    server.inject("503", SDIST, times=2)  # retries after 0 s and 0.5 s: the bar says so meanwhile
    leader, follower = pty.openpty()
    run = compat(*probe(server, cache, "--retries", "3"), env=env(tmp_path, COLUMNS="200", TERM="xterm"), stdin=subprocess.DEVNULL,
                 stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the process closed its end
            break
        if not chunk:
            break
        seen += chunk
    run.wait(timeout=60)
    os.close(leader)
    text = regex.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))
    assert run.returncode == 0, text
    assert regex.search(r"waiting: HTTP 503 [^\n]*; retry 2 of 3 in 0\.5 s", text)
    assert "fetching vllm 0.10.0" in text
