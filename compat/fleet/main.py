"""The entry point compat runs by on a remote host (inside the unpacked bundle): `compat.cli.main`, and one
clear error document when a dependency the bundle could not carry (one with compiled code, libcst) is
missing from that host's python, instead of a traceback the fleet side could not read."""

from __future__ import annotations

import json
import sys

# What needs each dependency that is not shipped (compat/fleet/bundle.py: shipped only for the ABI compat runs in): said in the fix.
NEEDED_BY = {"libcst": "compat patch and compat plugin install compute the patched source with it"}


def main() -> int:
    from compat.cli import main as cli_main

    try:
        return cli_main()
    except ImportError as err:  # not there, or the copy shipped for this ABI does not load (an older libc)
        name = (err.name or "").split(".")[0]
        if name not in NEEDED_BY:
            raise
        why = NEEDED_BY[name]
        message = f"{name} is not installed in {sys.executable} on this host ({why})"
        fix = (f"{sys.executable} -m pip install {name} (it has compiled code: compat ships it only to hosts whose "
               "python has the same ABI as the one compat runs in)")
        print(json.dumps({"schema": "compat.error/1", "error": message, "fix": fix, "exit_code": 3}))
        print(f"error: {message}\n  fix: {fix}", file=sys.stderr)
        return 3
