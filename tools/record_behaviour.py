#!/usr/bin/env python3
"""Record what compat's commands print and write, so a refactor can show it changed no behaviour.

`record` runs the compat that an interpreter imports (`PY -m compat ...` in subprocesses; this script
never imports compat) over a fixed list of about 540 scenarios (tools/behaviour_scenarios.py): probe on
every release in the user cache (~/.cache/compat/releases; no network), doctor over targets x drafters x
a spread of vLLM and SGLang releases x options (--layer-ids-convention, --python naming the shared
engine venv, -q, --releases, human output), convert ckpt over layouts and options (refusals too, with
DST's files: names, sizes, sha256), and error cases. The inputs are built in a fresh temporary directory,
the cwd of every run, so paths are relative as users type them. One JSON line per scenario:

    {"id", "argv", "exit_code", "stdout_json" (parsed, else the text), "stderr", "files" (convert's DST)}

What legitimately varies is normalised, nothing else: the temporary directory (<WORK>), the interpreter
and its venv (<PY>, <VENV>), the compat checkout (<COMPAT>), the home directory (~), timings (keys ending
in _seconds; "in 0.42 s" in text). The facts cache is the recording's own (COMPAT_FACTS_DIR in the
temporary directory; `--facts-cache off` turns it off): every report is computed by the code under test,
never read from the user's cache. SOURCE_DATE_EPOCH pins dates. The first line (_meta) names the releases
used; the scenario list depends on which releases are cached, so record both sides on the same cache.

For a refactor (issue 18): record the base once, record your branch, compare (about 20 minutes per
recording with --jobs 2 on a busy 2-core machine; --only REGEX for a quick look at some scenarios):

    python tools/record_behaviour.py record --python /work/wt/base/.venv/bin/python --out before.jsonl
    python tools/record_behaviour.py record --python .venv/bin/python --out after.jsonl
    python tools/record_behaviour.py compare before.jsonl after.jsonl   # exit 0: identical

`compare` prints, per differing scenario, its id and the JSON path of each difference (a line diff for
multi-line text) and exits 1; a scenario only in one file is a difference.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from behaviour_scenarios import build_inputs, cached_releases, describe, scenarios, spread  # noqa: E402

TIMEOUT = 900
SECONDS_KEY = re.compile(r"(^|_)(seconds|elapsed|duration)$")
SECONDS_TEXT = re.compile(r"\b(in|took) \d+\.\d+ s\b")  # "probed in 0.42 s", "exit 1 in 3.10 s" (-v)
# what a run stamps with its time: the preflight's log (verify-logs/preflight-20261208-031030-5838.log) and how long
# its build took in doctor's text ("(<PY>, 21 s)"); normalised when recorded and again when compared
STAMPS = ((re.compile(r"preflight-\d{8}-\d{6}-\d+\.log"), "preflight-<STAMP>.log"),
          (re.compile(r", \d+ s\)"), ", <SECONDS> s)"))
EPOCH = "1767225600"  # 2026-01-01T00:00:00Z


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "compat"


class Normaliser:
    """Replaces the paths of one recording by placeholders (longest first), and timings by <SECONDS>."""

    def __init__(self, work: Path, python: str, venv: str, compat_root: str):
        home = str(Path.home())
        pairs = {str(work): "<WORK>", os.path.realpath(work): "<WORK>", python: "<PY>", venv: "<VENV>",
                 compat_root: "<COMPAT>"}
        self.pairs = sorted(((k, v) for k, v in pairs.items() if k and k != "/"), key=lambda kv: -len(kv[0]))
        self.home = home

    def text(self, text: str) -> str:
        for real, placeholder in self.pairs:
            text = text.replace(real, placeholder)
        if self.home not in ("", "/"):
            text = re.sub(re.escape(self.home) + r"(?=/|\b|$)", "~", text)
        return unstamped(SECONDS_TEXT.sub(r"\1 <SECONDS> s", text))

    def value(self, value, key: str = ""):
        if isinstance(value, dict):
            return {self.text(k): self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and SECONDS_KEY.search(key):
            return "<SECONDS>"
        if isinstance(value, str):
            return self.text(value)
        return value


def interpreter_facts(python: str) -> dict:
    code = ("import json, os, sys, compat; "
            "print(json.dumps({'prefix': sys.prefix, 'version': getattr(compat, '__version__', None), "
            "'root': os.path.dirname(os.path.dirname(os.path.abspath(compat.__file__)))}))")
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd="/")
    if proc.returncode:
        raise SystemExit(f"record: {python} cannot import compat:\n{proc.stderr}")
    return json.loads(proc.stdout)


def child_env(work: Path, facts_cache: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMPAT_", "FORCE_COLOR", "PYTEST"))}
    if facts_cache == "off":
        env["COMPAT_FACTS_CACHE"] = "off"
    else:  # a cache of this recording's own: computed by the code under test, reused only within the recording
        env["COMPAT_FACTS_DIR"] = str(work / ".facts")
    env.update(COLUMNS="100", NO_COLOR="1", TERM="dumb", SOURCE_DATE_EPOCH=EPOCH,
               HF_HOME=str(work / ".hf"), HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore", LC_ALL="C.UTF-8",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("HF_HUB_CACHE", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def files_of(directory: Path, norm: Normaliser) -> list[dict] | None:
    """Every file under a convert DST: name, size, sha256 (of the normalised bytes where paths were replaced)."""
    if not directory.exists():
        return None
    out = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file() or p.is_symlink()):
        raw = path.read_bytes() if path.is_file() else os.readlink(path).encode()
        entry: dict = {"name": str(path.relative_to(directory))}
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            text = None
        if text is not None and norm.text(text) != text:
            raw, entry["normalised"] = norm.text(text).encode(), True
        entry.update(size=len(raw), sha256=hashlib.sha256(raw).hexdigest())
        if path.suffix == ".json" and text is not None:
            try:
                entry["json"] = norm.value(json.loads(text))
            except ValueError:
                pass
        out.append(entry)
    return out


def run_one(scenario: dict, python: str, work: Path, env: dict, norm: Normaliser) -> dict:
    start = time.monotonic()
    try:
        proc = subprocess.run([python, "-m", "compat", *scenario["argv"]], cwd=work, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout, stderr = "timeout", exc.stdout or "", exc.stderr or ""
        stdout, stderr = [s.decode() if isinstance(s, bytes) else s for s in (stdout, stderr)]
    try:
        parsed = norm.value(json.loads(stdout)) if stdout.strip() else stdout
    except ValueError:
        parsed = norm.text(stdout)
    record = {"id": scenario["id"], "argv": ["compat", *scenario["argv"]], "exit_code": code,
              "stdout_json": parsed, "stderr": norm.text(stderr)}
    if "dst" in scenario:
        record["files"] = files_of(work / scenario["dst"], norm)
    record["_seconds"] = round(time.monotonic() - start, 2)
    return record


def record(args: argparse.Namespace) -> int:
    started = time.monotonic()
    python = os.path.abspath(args.python)
    facts = interpreter_facts(python)
    cached = cached_releases(cache_dir())
    vllm, sglang, missing = spread(cached)
    if not vllm or not sglang:
        raise SystemExit(f"record: the release cache {cache_dir()} holds no vLLM or no SGLang release")
    for spec in missing:
        print(f"record: spread release {spec} is not in the cache: left out (named in _meta)", file=sys.stderr)
    todo = scenarios(cached)
    if args.only:
        todo = [s for s in todo if s["phase"] == 0 or any(re.search(p, s["id"]) for p in args.only)]
    print(f"record: {len(todo)} scenarios {describe(todo)} with {python} (compat {facts['version']} at "
          f"{facts['root']}), {args.jobs} jobs", file=sys.stderr)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="compat-behaviour-") as tmp:
        work = Path(tmp)
        build_inputs(work)
        norm = Normaliser(work, python, facts["prefix"], facts["root"])
        env = child_env(work, args.facts_cache)
        done = 0
        for phase in sorted({s["phase"] for s in todo}):
            batch = [s for s in todo if s["phase"] == phase]
            with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                for result in pool.map(lambda s: run_one(s, python, work, env, norm), batch):
                    results[result["id"]] = result
                    done += 1
                    if done % 50 == 0 or done == len(todo):
                        print(f"record: {done}/{len(todo)} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    wall = round(time.monotonic() - started, 1)
    meta = {"id": "_meta", "releases": cached, "spread": {"vllm": vllm, "sglang": sglang},
            "spread_missing_from_cache": missing, "scenarios": len(todo),
            "python": python, "compat_version": facts["version"], "compat_root": facts["root"], "jobs": args.jobs, "facts_cache": args.facts_cache,
            "wall_seconds": wall}
    slowest = sorted(results.values(), key=lambda r: -r["_seconds"])[:3]
    with open(args.out, "w") as out:
        out.write(json.dumps(meta, sort_keys=True) + "\n")
        for scenario in todo:
            result = dict(results[scenario["id"]])
            result.pop("_seconds")
            out.write(json.dumps(result, sort_keys=True) + "\n")
    print(f"record: wrote {len(todo)} scenarios to {args.out} in {wall} s; slowest: "
          + ", ".join(f"{r['id']} {r['_seconds']} s" for r in slowest), file=sys.stderr)
    return 0


META_COMPARED = ("releases", "spread", "spread_missing_from_cache", "scenarios")


def unstamped(value):
    """`value` with the time stamps of STAMPS replaced (recordings made before they were normalised compare too)."""
    if isinstance(value, dict):
        return {k: unstamped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unstamped(v) for v in value]
    if isinstance(value, str):
        for pattern, placeholder in STAMPS:
            value = pattern.sub(placeholder, value)
    return value


def load(path: str) -> tuple[dict, dict[str, dict]]:
    meta, rows = {}, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = unstamped(json.loads(line))
            if row.get("id") == "_meta":
                meta = row
            elif row["id"] in rows:
                raise SystemExit(f"compare: {path} line {n}: scenario {row['id']} appears twice")
            else:
                rows[row["id"]] = row
    return meta, rows


def differences(a, b, path: str = "$") -> list[tuple[str, object, object]]:
    """(JSON path, a's value, b's value) for every leaf that differs; a missing key is <absent>."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += differences(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            out += differences(a[i] if i < len(a) else "<absent>", b[i] if i < len(b) else "<absent>", f"{path}[{i}]")
        return out
    if a != b or type(a) is not type(b):
        return [(path, a, b)]
    return []


def show(path: str, a, b, width: int = 300) -> list[str]:
    if isinstance(a, str) and isinstance(b, str) and ("\n" in a or "\n" in b):
        diff = difflib.unified_diff(a.splitlines(), b.splitlines(), "A", "B", lineterm="", n=1)
        return [f"  {path}:"] + [f"    {line}" for line in list(diff)[2:40]]
    def cut(value) -> str:
        text = json.dumps(value, sort_keys=True)
        return text if len(text) <= width else text[:width] + "..."
    return [f"  {path}:", f"    A: {cut(a)}", f"    B: {cut(b)}"]


def compare(args: argparse.Namespace) -> int:
    (meta_a, a), (meta_b, b) = load(args.a), load(args.b)
    lines, differing = [], 0
    meta_diff = differences({k: meta_a.get(k) for k in META_COMPARED}, {k: meta_b.get(k) for k in META_COMPARED}, "$_meta")
    if meta_diff:
        differing += 1
        lines.append("_meta (the releases or scenario count differ):")
        for path, x, y in meta_diff:
            lines += show(path, x, y)
    for sid in list(a) + [s for s in b if s not in a]:
        if sid not in b or sid not in a:
            differing += 1
            lines.append(f"{sid}: only in {'A' if sid in a else 'B'}")
            continue
        found = differences(a[sid], b[sid])
        if found:
            differing += 1
            lines.append(f"{sid}: {len(found)} difference(s)  ({' '.join(a[sid]['argv'])})")
            for path, x, y in found[:args.max_paths]:
                lines += show(path, x, y)
            if len(found) > args.max_paths:
                lines.append(f"  ... and {len(found) - args.max_paths} more")
    print("\n".join(lines)) if lines else None
    total = len(set(a) | set(b))
    if differing:
        print(f"compare: {differing} of {total} scenarios differ (A={args.a}, B={args.b})")
        return 1
    print(f"compare: {total} scenarios identical")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run the scenarios with PY's compat and write one JSON line each")
    rec.add_argument("--python", required=True, help="the interpreter whose compat runs (PY -m compat)")
    rec.add_argument("--out", required=True, help="the JSONL file to write")
    rec.add_argument("--jobs", type=int, default=2, help="scenarios run at once (default 2)")
    rec.add_argument("--facts-cache", choices=("private", "off"), default="private",
                     help="private (default): a facts cache in the recording's temporary directory, so every "
                          "report is computed by the code under test and reused only within the recording; "
                          "off: COMPAT_FACTS_CACHE=off (slower)")
    rec.add_argument("--only", action="append", default=[], metavar="REGEX",
                     help="only scenarios whose id matches (repeatable; for a quick look, not for a proof)")
    cmp_ = sub.add_parser("compare", help="exit 0 when two recordings are identical, else show each difference")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    cmp_.add_argument("--max-paths", type=int, default=20, help="differences shown per scenario (default 20)")
    args = parser.parse_args(argv)
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    raise SystemExit(main())
