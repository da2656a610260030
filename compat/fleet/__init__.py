"""Fleet mode: run probe, doctor, env, patch, plugin or verify on remote hosts over SSH (`--host`,
`--hosts FILE`), or on every node of a Ray cluster (`--ray ADDRESS`), and report them as one fleet.

How compat runs on a host, and why. compat ships itself: the installed package (and its pure-Python
dependencies) as one zip, built here and cached by its content hash (compat/fleet/bundle.py), is sent
over the SSH connection once per host and version and unpacked in the host's ~/.cache/compat/fleet/HASH/;
then `python -c ... COMMAND ARGS --json` runs the very same code there (compat/fleet/ssh.py). The other
way, reading the remote engine's files over SFTP into a local cache, was not taken:

- remote facts equal local facts by construction: the same probes read the same files where they are,
  instead of a second code path that must mimic the installed-engine lookup (site-packages, .pth files,
  editable installs, the interpreter's own answers) across a network;
- patching is journaled, dry-run first, atomic and byte-identical on revert on the remote host because
  the code that guarantees it locally is the code doing it there; over SFTP every rename, lock and
  journal step would be a network round trip that can half-happen;
- the plugin's hook, env's torch questions and verify's engine run must run in the serving
  interpreter anyway: only a process on the host can do them;
- the host needs only Python (3.10+), no pip install and no network of its own; one upload per compat
  version (a few MB), then each run is three short commands on one connection.

What it costs: a dependency with compiled code (libcst) cannot be shipped to a platform we do not know,
so `patch` and `plugin install` use the host's own libcst, and say how to install it when it is missing
(compat/fleet/main.py); probe, doctor, env, plugin status/remove and verify need nothing more.

The arguments are passed on as the user typed them (only the fleet options, --json and the global
output options are taken out): `--python`, TARGET and DRAFTER name the host's interpreter and paths,
relative ones against the login's home there. `--python` is also the interpreter compat runs with on
the host (default: python3 there), so compat needs nothing installed beside the engine.
"""

from __future__ import annotations

import argparse

from compat.core.argtypes import seconds
from compat.core.errors import UsageError

TYPE_CHECKING = False  # typing costs milliseconds to import at start-up (every --host command's parser imports this)
if TYPE_CHECKING:
    from rich.console import Console

    from compat.fleet.outcome import Outcome

# The fleet options and whether each takes a value: taken out of the words passed on to the hosts.
FLEET_OPTIONS = {"--host": True, "--hosts": True, "--jobs": True, "--ray": True, "--accept-new-host-keys": False,
                 "--connect-timeout": True}
# Said by the fleet side, never passed on: the hosts always answer in JSON, and print no progress.
LOCAL_OPTIONS = {"--json": False, "--color": True, "--quiet": False, "--verbose": False}
DEFAULT_JOBS = 8


def _jobs(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, 1 or more: {value!r}")
    return int(value)


def add_fleet_arguments(parser: argparse.ArgumentParser) -> None:
    """The fleet options, one declaration for every command that runs on hosts (the command's FLEET = True)."""
    group = parser.add_argument_group(
        "fleet (run this on other machines; --python and paths then name theirs)")
    group.add_argument("--host", metavar="[USER@]HOST[:PORT]", action="append", default=[],
                       help="run on this host over SSH (repeatable); ~/.ssh/config, keys, the agent and known_hosts apply")
    group.add_argument("--hosts", metavar="FILE", action="append", default=[],
                       help="run on every host in FILE (one [user@]host[:port] per line, # comments)")
    group.add_argument("--ray", metavar="ADDRESS",
                       help="run on every alive node of this Ray cluster (e.g. auto, 10.0.0.1:6379; needs pip install ray)")
    group.add_argument("--jobs", metavar="N", type=_jobs, default=DEFAULT_JOBS,
                       help=f"hosts worked on at once over SSH (default {DEFAULT_JOBS}; --ray runs one task per node at once)")
    group.add_argument("--accept-new-host-keys", action="store_true",
                       help="trust a host key not yet in known_hosts and add it (ssh's accept-new); a changed key is refused")
    group.add_argument("--connect-timeout", metavar="SEC", type=seconds, default=15.0,
                       help="give up on a host that does not answer within SEC seconds (default 15)")


def requested(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "host", None) or getattr(args, "hosts", None) or getattr(args, "ray", None))


def _take_out(words: list[str], options: dict[str, bool]) -> list[str]:
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in options:
            skip = options[name] and "=" not in word
            continue
        if word.startswith("-") and not word.startswith("--") and set(word[1:]) <= {"q", "v"} and len(word) > 1:
            continue  # -q, -qq, -v, -vv, -qv
        out.append(word)
    return out


def _split_dashes(words: list[str]) -> tuple[list[str], list[str] | None]:
    """The words before `--`, and those after it (doctor's launch line: its --host is vllm's, kept whole)."""
    if "--" in words:
        at = words.index("--")
        return words[:at], words[at + 1:]
    return words, None


def remote_words(command: str, words: list[str]) -> list[str]:
    """What runs on each host: the command and its words as typed, without the fleet and output options, with --json."""
    options, after = _split_dashes(words)
    kept = [command, *_take_out(_take_out(options, FLEET_OPTIONS), LOCAL_OPTIONS), "--json"]
    return kept if after is None else [*kept, "--", *after]


def python_given(words: list[str]) -> str | None:
    """The --python value as typed (a path on the host: never made absolute here)."""
    options, _ = _split_dashes(words)
    for i, word in enumerate(options):
        if word == "--python" and i + 1 < len(options):
            return options[i + 1]
        if word.startswith("--python="):
            return word.split("=", 1)[1]
    return None


def run(args: argparse.Namespace, words: list[str], console: Console, err_console: Console) -> int:
    """Run the command on every host (or Ray node) and report the fleet; returns the exit code."""
    from compat.fleet import report

    if args.ray and (args.host or args.hosts):
        raise UsageError("give either --host/--hosts or --ray, not both")
    if getattr(args, "server", None):
        raise UsageError("verify --server measures a deployment by its URL: it needs no --host",
                         hint="compat verify --server http://HOST:PORT")
    remote = remote_words(args.command, words)
    if args.ray:
        from compat.fleet.ray_nodes import run_on_nodes

        outcomes = run_on_nodes(args.ray, remote, python_given(words), progress=_progress(args, err_console))
        via = f"ray {args.ray}"
    else:
        outcomes = _over_ssh(args, remote, python_given(words), err_console)
        via = "ssh"
    differ = report.mixed(args.command, outcomes)
    code = report.exit_code(args.command, outcomes, differ)
    if args.json:
        print(report.as_json(report.document(args.command, outcomes, differ, code, via)))
    else:
        report.render(args.command, outcomes, differ, console, via=via)
    return code


def _progress(args: argparse.Namespace, err_console: Console, *, several: bool = True):
    """A line per host as it finishes; none for one host (its report follows at once: the line would only repeat it)."""
    if args.quiet or args.json or not several:
        return lambda outcome: None
    return lambda o: err_console.print(f"  {o.host}: " + ("ok" if o.ok else f"exit {o.exit_code}") + f" ({o.seconds:.1f} s)",
                                       highlight=False)


def _over_ssh(args: argparse.Namespace, remote: list[str], python: str | None, err_console: Console) -> list[Outcome]:
    import asyncio

    from compat.fleet.bundle import build_bundle
    from compat.fleet.hosts import hosts_of
    from compat.fleet.ssh import SshOptions, asyncssh_module, run_on_host

    try:
        asyncssh_module()  # a runtime dependency; said clearly if a broken install lacks it
    except ImportError:
        raise UsageError("--host needs asyncssh, which is not installed here", hint="pip install asyncssh") from None
    hosts = hosts_of(args.host, args.hosts)
    bundle = build_bundle()  # the local cache: --cache-dir names the hosts' cache
    options = SshOptions(accept_new_host_keys=args.accept_new_host_keys, connect_timeout=args.connect_timeout)
    progress = _progress(args, err_console, several=len(hosts) > 1)

    async def all_hosts() -> list[Outcome]:
        gate = asyncio.Semaphore(args.jobs)

        async def one(host):
            async with gate:
                outcome = await run_on_host(host, remote, python, bundle, options)
            progress(outcome)
            return outcome

        return list(await asyncio.gather(*(one(h) for h in hosts)))

    return asyncio.run(all_hosts())

