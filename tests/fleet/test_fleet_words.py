"""What a fleet run passes on to each host, and how hosts are named (no server needed)."""

from __future__ import annotations

import re

import pytest

from compat.cli import main
from compat.core.errors import RefusedError, UsageError
from compat.fleet import python_given, remote_words
from compat.fleet.hosts import parse_host, read_hosts_file


def test_fleet_and_output_options_stay_here_the_rest_goes_as_typed():
    words = ["./t", "~/d", "--host", "a", "--hosts=f", "-qq", "--json", "--jobs", "3", "--python", "~/venv",
             "--color", "never", "--accept-new-host-keys", "--connect-timeout=5", "-v", "--engine", "vllm"]
    assert remote_words("doctor", words) == ["doctor", "./t", "~/d", "--python", "~/venv", "--engine", "vllm", "--json"]
    assert python_given(words) == "~/venv" and python_given(["--python=/opt/py"]) == "/opt/py" and python_given([]) is None


def test_a_launch_line_after_dashes_goes_whole():
    words = ["t", "d", "--host", "gpu1", "--", "vllm", "serve", "t", "--host", "0.0.0.0", "--python", "x"]
    assert remote_words("doctor", words) == ["doctor", "t", "d", "--json", "--", "vllm", "serve", "t", "--host", "0.0.0.0",
                                             "--python", "x"]
    assert python_given(words) is None


@pytest.mark.parametrize("spec, user, host, port", [
    ("gpu1", None, "gpu1", None), ("alice@gpu2:2222", "alice", "gpu2", 2222), ("[::1]:22", None, "::1", 22),
    ("10.0.0.7", None, "10.0.0.7", None), ("fe80::1", None, "fe80::1", None),
])
def test_host_specs(spec, user, host, port):
    parsed = parse_host(spec)
    assert (parsed.user, parsed.hostname, parsed.port, str(parsed)) == (user, host, port, spec)


@pytest.mark.parametrize("spec, said", [
    ("", r"expected \[user@\]HOST\[:PORT\]\n  fix: e.g. --host gpu1"), ("@gpu", r"expected \[user@\]HOST\[:PORT\]"),
    ("gpu:0", "the port must be a number from 1 to 65535"), ("gpu:99999", "the port must be a number from 1 to 65535"),
    ("gpu:x", "the port must be a number from 1 to 65535"), ("a b", r"expected \[user@\]HOST\[:PORT\]"),
    ("[::1", r"expected \[ADDRESS\]:PORT\n  fix: e.g. --host '\[::1\]:2222'")])
def test_bad_host_specs_are_usage_errors(spec, said):
    with pytest.raises(UsageError, match=f"^--host {re.escape(repr(spec))}: {said}"):
        parse_host(spec)


def test_hosts_file(tmp_path):
    listing = tmp_path / "hosts"
    listing.write_text("# nodes\nalpha\n  beta:2200  # second\n\n")
    assert [str(h) for h in read_hosts_file(str(listing))] == ["alpha", "beta:2200"]
    with pytest.raises(UsageError, match="no such file"):  # nothing there: 2
        read_hosts_file(str(tmp_path / "missing"))
    with pytest.raises(RefusedError, match="cannot read it"):  # there, but not a text file: 4
        read_hosts_file(str(tmp_path))


def test_help_teaches_the_fleet_options(capsys):
    for command in ("probe", "doctor", "env", "patch", "plugin", "verify"):
        with pytest.raises(SystemExit, match="^0$"):  # help printed, exit 0
            main([command, "--help"])
        out = capsys.readouterr().out
        assert "--host [USER@]HOST[:PORT]" in out and "--hosts FILE" in out and "--ray ADDRESS" in out, command
    with pytest.raises(SystemExit, match="^0$"):
        main(["convert", "--help"])
    assert "--host" not in capsys.readouterr().out  # only the commands that run on hosts


def test_ray_and_hosts_together_is_a_usage_error(capsys):
    assert main(["probe", "--host", "a", "--ray", "auto", "--json"]) == 2
    assert "either --host/--hosts or --ray" in capsys.readouterr().out


def test_ray_missing_is_said_with_the_install_command():
    import json
    import subprocess
    import sys

    code = ("import sys; sys.modules['ray'] = None; from compat.cli import main; "  # as if Ray were not installed
            "sys.exit(main(['probe', '--ray', 'auto', '--json']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    error = json.loads(done.stdout)
    assert done.returncode == 2 and "--ray needs Ray" in error["error"] and "pip install ray" in error["fix"]
