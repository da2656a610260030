"""The ground floor: what every part of compat stands on, knowing nothing of drafters, checks or patches.

compat's floors, from the bottom: this package; the engines (compat/engines/: what each engine is called,
where its files live, how it is launched); the rule folders (probes/, patches/, checkpoints/, checks/); the
parts that run them (report, doctor, patching, convert, verify, explain, matrix, fleet); and the commands.
A module belongs here when it would serve any tool of this shape unchanged:

- errors.py     the typed errors every command turns into an exit code
- output.py     the exit-code table and the JSON documents every command prints
- console.py    the two consoles (stdout for results, stderr for errors and progress)
- argtypes.py   argparse types the commands and the fleet options share
- registry.py   the one loader of the rule folders (a folder, a contract, a check of each rule against it)
- tree.py       a source tree on disk: cached reads, grep, parse on demand, in-memory overlays
- files.py      reading files of someone else's directory without following links out of it
- locking.py    one run at a time on a directory (flock, the holder's pid)
- interpreter.py  which python (--python), asked a question in a child process
- hashing.py    sha256 without loading OpenSSL

Left out on purpose: facts.py (it knows which code computes a probe report, probes/ and report.py, and where
the release cache keeps entries), the release cache and the package index (compat/sources/), and anything
that reads a checkpoint, a target or a log. Nothing here imports a module outside compat.core
(tests/test_architecture.py checks it).
"""
