"""Hostile inputs against the safetensors header reader and `compat convert ckpt` (issue 11).

    python bench/bench_hostile.py [--headers 10000] [--cli 300] [--seed 0] [--timeout 10] [--json]

1. The header campaign: --headers mutated safetensors files (tests/checkpoints/header_mutations.py:
   byte flips, JSON structure, huge numbers, deep nesting, wrong types, huge shapes, duplicate keys,
   offsets, lone surrogates, the length field) read by `read_header` in a worker process, each also
   read by the safetensors library (the oracle). Counted: uncaught exceptions (anything but a
   CheckpointFormatError), hangs (no answer within --timeout s: the worker is killed and restarted),
   disagreements with the library not documented in STRICTER, the slowest answer, and the worker's
   peak RSS.
2. Each hostile input of the issue, as a drafter directory through `python -m compat convert ckpt
   SRC DST --to vllm` in its own child: exit code, traceback or not, wall time (killed after
   --cli-timeout s: a hang), and the child's peak RSS (GNU time's, see run_child). The
   pytorch_model.bin, config.json and tokenizer.json inputs are read by compat/convert.py, not by the
   header reader: they are reported as they are today.
3. --cli mutated headers of a real drafter through the same command line, each in its own child.

Goal: 0 uncaught, 0 hangs in 10,000 headers, no traceback, peak RSS under 256 MB on every input.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "checkpoints"))  # the mutations and the drafter builders the tests use

from header_mutations import mutated_file, tree_from_json  # noqa: E402

MB = 1024 * 1024
GOAL_RSS_MB = 256

WORKER = r"""
import json, sys, time, traceback
sys.path.insert(0, sys.argv[1])
from header_mutations import differential
for line in sys.stdin:
    path = line.strip()
    start = time.process_time()
    try:
        problem, outcome = differential(path)
        result = {"outcome": outcome, "problem": problem}
    except BaseException as exc:  # what the campaign counts: anything read_header lets escape
        result = {"outcome": "uncaught", "problem": f"{type(exc).__name__}: {str(exc)[:200]}",
                  "where": traceback.format_exc().strip().splitlines()[-3][:200]}
    result["cpu"] = time.process_time() - start
    print(json.dumps(result), flush=True)
hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"vmhwm_kb": int(hwm.split()[1])}), flush=True)
"""


# ---------------------------------------------------------------------------------------------
# children: run, time out, peak RSS


MEMORY_CAP = 4 << 30  # RLIMIT_AS of every child: a file that makes compat allocate without bound fails at 4 GiB


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def vm_hwm_mb(pid: int) -> float | None:
    """The peak RSS of a running process's own memory (VmHWM: since its exec, unlike ru_maxrss)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_child(argv: list[str], timeout: float) -> dict:
    """Run argv under GNU time in its own session, capped at MEMORY_CAP; kill it after `timeout` s.

    The peak RSS is GNU time's %M: the wait4 rusage of its child. Not os.wait4 on a child of this
    process: Linux carries the parent's peak RSS into a forked child's ru_maxrss across exec, and this
    process holds the hostile files it builds. GNU time is small, so what its child inherits is ~2 MB.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        start = time.monotonic()
        proc = subprocess.Popen(["/usr/bin/time", "-o", report.name, "-f", "%M", *argv], stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_limit_memory)
        hung, rss = False, None
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            hung = True
            children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
            pids = children.read_text().split() if children.exists() else []
            rss = max((vm_hwm_mb(int(p)) or 0 for p in pids), default=None)
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own session: only what this bench started
            proc.wait()
        if not hung:
            text = report.read().strip().splitlines()
            rss = int(text[-1]) / 1024 if text and text[-1].isdigit() else None
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        code = proc.returncode
        if stderr.startswith("Command terminated by signal") or "Command exited with non-zero status" in stderr:
            stderr = "\n".join(line for line in stderr.splitlines() if not line.startswith("Command "))
        return {"code": code, "hung": hung, "seconds": time.monotonic() - start, "rss_mb": rss, "stderr": stderr,
                "stdout": out.read().decode("utf-8", "replace"), "traceback": "Traceback (most recent call last)" in stderr}


class Worker:
    """A child reading headers one by one; killed and replaced when one does not answer in time."""

    def __init__(self):
        self.peak_rss_mb = 0.0
        self._start()

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(ROOT / "tests" / "checkpoints")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     start_new_session=True, preexec_fn=_limit_memory)

    def read(self, path: Path, timeout: float) -> dict | None:
        self.proc.stdin.write(f"{path}\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self._reap(kill=True)
            self._start()
            return None
        return json.loads(self.proc.stdout.readline())

    def _reap(self, kill: bool) -> None:
        if kill:
            self.peak_rss_mb = max(self.peak_rss_mb, vm_hwm_mb(self.proc.pid) or 0)
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only what this bench started
        else:
            self.proc.stdin.close()
            last = json.loads(self.proc.stdout.readline())  # the worker's own peak RSS, said as it ends
            self.peak_rss_mb = max(self.peak_rss_mb, last["vmhwm_kb"] / 1024)
        self.proc.wait()

    def close(self) -> None:
        self._reap(kill=False)


# ---------------------------------------------------------------------------------------------
# 1. the header campaign


def header_campaign(count: int, seed: int, timeout: float, work: Path) -> dict:
    worker = Worker()
    path = work / "campaign.safetensors"
    outcomes: dict[str, int] = {}
    uncaught, hangs, disagreements = [], [], []
    slowest = (0.0, None)
    start = time.monotonic()
    try:
        for i in range(count):
            path.write_bytes(mutated_file(random.Random(seed + i)))
            result = worker.read(path, timeout)
            if result is None:
                hangs.append(seed + i)
                continue
            outcomes[result["outcome"]] = outcomes.get(result["outcome"], 0) + 1
            if result["outcome"] == "uncaught":
                uncaught.append((seed + i, result["problem"], result.get("where")))
            elif result["problem"]:
                disagreements.append((seed + i, result["problem"]))
            if result["cpu"] > slowest[0]:
                slowest = (result["cpu"], seed + i)
            if (i + 1) % 1000 == 0:
                print(f"  {i + 1:,} headers, {len(uncaught)} uncaught, {len(hangs)} hangs, {time.monotonic() - start:.0f} s",
                      file=sys.stderr)
    finally:
        worker.close()
    return {"headers": count, "seed": seed, "uncaught": len(uncaught), "hangs": len(hangs),
            "undocumented_disagreements": len(disagreements), "outcomes": dict(sorted(outcomes.items())),
            "slowest_cpu_s": round(slowest[0], 3), "slowest_seed": slowest[1], "worker_peak_rss_mb": round(worker.peak_rss_mb, 1),
            "wall_s": round(time.monotonic() - start, 1), "examples": {"uncaught": uncaught[:5], "hangs": hangs[:5],
                                                                      "disagreements": disagreements[:5]}}


# ---------------------------------------------------------------------------------------------
# 2. the hostile inputs, as drafter directories


def _header_parts(path: Path) -> tuple[str, bytes]:
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    return blob[8:8 + n].decode(), blob[8 + n:]


def _rewrite(path: Path, header: str, data: bytes | None = None) -> None:
    old_header, old_data = _header_parts(path)
    raw = header.encode("utf-8", "surrogatepass")
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + (old_data if data is None else data))


def _edit(path: Path, edit) -> None:
    header, _ = _header_parts(path)
    _rewrite(path, edit(header))


def _entry(name: str, dtype: str = "F32", shape: str = "[0]", extra: str = "") -> str:
    return f'"{name}":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[0,0]{extra}}}'


def _prepend(entry: str):
    return lambda header: "{" + entry + "," + header[1:]


def _safetensors_inputs() -> dict:
    """name -> edit(model.safetensors path): the header-reader inputs of the issue and around it."""
    huge_shape = "[" + ",".join([str(2**62)] * 200_000) + ",0]"
    return {
        "int of 4,301 digits (shape)": lambda p: _edit(p, _prepend(_entry("bad", shape="[" + "9" * 4301 + "]"))),
        "int of 100,000 digits (ignored field)": lambda p: _edit(p, _prepend(_entry("bad", extra=',"x":' + "9" * 100_000))),
        "nesting 100,000 deep (ignored field)": lambda p: _edit(p, _prepend(_entry("bad", extra=',"x":' + "[" * 100_000 + "]" * 100_000))),
        "nesting 1,000,000 deep (whole header)": lambda p: _rewrite(p, "[" * 1_000_000 + "]" * 1_000_000, b""),
        "dtype a list": lambda p: _edit(p, _prepend(_entry("bad").replace('"F32"', '["F32"]'))),
        "dtype a dict": lambda p: _edit(p, _prepend(_entry("bad").replace('"F32"', '{"F32":null}'))),
        "shape [2**62]*200000+[0] (4 MB)": lambda p: _edit(p, _prepend(_entry("bad", shape=huge_shape))),
        "shape [2**63]*500 (a 9,500-digit product)": lambda p: _edit(p, _prepend(_entry("bad", shape="[" + ",".join([str(2**63)] * 500) + "]"))),
        "lone surrogate in __metadata__": lambda p: _edit(p, lambda h: h.replace('"format":"pt"', '"format":"pt","note":"\\ud800"')),
        "lone surrogate in a tensor name": lambda p: _edit(p, _prepend(_entry("bad\\udc00"))),
        "NaN in a shape": lambda p: _edit(p, _prepend(_entry("bad", shape="[NaN]"))),
        "header length 100,000,000 (file 200 KB)": lambda p: p.write_bytes(struct.pack("<Q", 100_000_000) + p.read_bytes()[8:]),
        "header of 17 MiB (over compat's 16 MiB)": lambda p: _edit(p, lambda h: h + " " * (17 * MB)),
        "1,200,000 values in an ignored field": lambda p: _edit(p, _prepend(_entry("zero", extra=',"x":[' + ",".join(["[]"] * 600_000) + "]"))),
        "500,000 values in an ignored field (read)": lambda p: _edit(p, lambda h: h.replace(
            '"data_offsets"', '"x":[' + ",".join(["0"] * 500_000) + '],"data_offsets"', 1)),
        "110,000 zero-size tensors (a 15 MB header, read)": lambda p: _edit(p, _prepend(",".join(
            _entry(f"model.layers.{i // 256}.mlp.experts.{i % 256}.down_proj.weight_scale_inv", "BF16", "[0,7168]")
            for i in range(110_000)))),
        "model.safetensors a FIFO": lambda p: (p.unlink(), os.mkfifo(p)),
        "model.safetensors -> /dev/zero": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
    }


def _bin_inputs() -> dict:
    """pytorch_model.bin and side files: read by compat/convert.py (another part of issue 11)."""
    def bin_drafter(src: Path, expand: tuple[int, int]) -> None:
        """The drafter's own tensors and config (which convert as they are), as a pickle, with a stride-0 embedding."""
        import torch
        from safetensors.numpy import load_file

        state = {k: torch.from_numpy(v.copy()) for k, v in load_file(str(src / "model.safetensors")).items()}
        (src / "model.safetensors").unlink()
        state["embed_tokens.weight"] = torch.zeros(1, dtype=torch.float16).expand(*expand)
        torch.save(state, src / "pytorch_model.bin")

    def config_link(target: str):
        def edit(src: Path) -> None:
            (src / "config.json").unlink()
            (src / "config.json").symlink_to(target)
        return edit

    def config_fifo(src: Path) -> None:
        (src / "config.json").unlink()
        os.mkfifo(src / "config.json")

    def tokenizer_secret(src: Path) -> None:
        secret = src.parent / f"{src.name}-secret.txt"
        secret.write_text("the secret\n")
        (src / "tokenizer.json").symlink_to(secret)

    return {
        "pytorch_model.bin stride-0 expand(786432, 1024)": lambda src: bin_drafter(src, (786432, 1024)),
        "pytorch_model.bin stride-0 expand(1<<20, 1<<20)": lambda src: bin_drafter(src, (1 << 20, 1 << 20)),
        "config.json -> /dev/zero": config_link("/dev/zero"),
        "config.json a FIFO": config_fifo,
        "tokenizer.json -> a file outside SRC": tokenizer_secret,
    }


def _drafter(work: Path, name: str) -> Path:
    from ckpt_builders import write_drafter

    return write_drafter(work / name, "eagle")


def _convert(src: Path, dst: Path, timeout: float) -> dict:
    result = run_child([sys.executable, "-m", "compat", "convert", "ckpt", str(src), str(dst), "--to", "vllm"], timeout)
    lines = result["stderr"].strip().splitlines()
    result["message"] = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")[:160]
    result["dst_written"] = dst.exists()
    return result


def hostile_inputs(work: Path, timeout: float) -> list[dict]:
    rows = []
    cases = [("safetensors", n, e) for n, e in _safetensors_inputs().items()] + [("convert.py", n, e) for n, e in _bin_inputs().items()]
    for index, (reader, name, edit) in enumerate(cases):
        src = _drafter(work, f"hostile-{index}")
        if reader == "safetensors":
            edit(src / "model.safetensors")
        else:
            edit(src)
        dst = work / f"hostile-{index}-out"
        result = _convert(src, dst, timeout)
        leaked = (dst / "tokenizer.json").is_file() and not (dst / "tokenizer.json").is_symlink() if "tokenizer" in name else None
        rows.append({"input": name, "reader": reader, "code": result["code"], "hung": result["hung"],
                     "traceback": result["traceback"], "rss_mb": None if result["rss_mb"] is None else round(result["rss_mb"], 1),
                     "seconds": round(result["seconds"], 2), "message": result["message"],
                     **({"secret_copied_into_dst": leaked} if leaked is not None else {})})
        print(f"  {name}: exit {result['code']}{' HUNG' if result['hung'] else ''}{' TRACEBACK' if result['traceback'] else ''}, "
              f"{_mb(result['rss_mb'])} MB, {result['seconds']:.1f} s", file=sys.stderr)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.rmtree(src, ignore_errors=True)
    return rows


# ---------------------------------------------------------------------------------------------
# 3. mutated drafter headers through the command line


def cli_campaign(count: int, seed: int, timeout: float, work: Path) -> dict:
    base = _drafter(work, "cli-base")
    header, data = _header_parts(base / "model.safetensors")
    codes: dict[int, int] = {}
    tracebacks, hangs, unreadable_outputs, peak = [], [], [], 0.0
    for i in range(count):
        src, dst = work / f"cli-{i}", work / f"cli-{i}-out"
        shutil.copytree(base, src)
        (src / "model.safetensors").write_bytes(mutated_file(random.Random(seed + i), base=(tree_from_json(header), data)))
        result = _convert(src, dst, timeout)
        codes[result["code"]] = codes.get(result["code"], 0) + 1
        peak = max(peak, result["rss_mb"] or 0)
        if result["traceback"]:
            tracebacks.append((seed + i, result["stderr"].strip().splitlines()[-1][:200]))
        if result["hung"]:
            hangs.append(seed + i)
        if result["code"] == 0:
            from header_mutations import library_view

            if library_view(dst / "model.safetensors") is None:
                unreadable_outputs.append(seed + i)
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(dst, ignore_errors=True)
        if (i + 1) % 50 == 0:
            print(f"  {i + 1} through the CLI, {len(tracebacks)} tracebacks", file=sys.stderr)
    return {"runs": count, "exit_codes": dict(sorted(codes.items())), "tracebacks": len(tracebacks), "hangs": len(hangs),
            "outputs_the_library_refuses": len(unreadable_outputs), "peak_rss_mb": round(peak, 1),
            "examples": {"tracebacks": tracebacks[:5], "hangs": hangs[:5]}}


# ---------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--headers", type=int, default=10_000, help="mutated headers read by read_header (default 10000)")
    parser.add_argument("--cli", type=int, default=300, help="mutated drafter headers through the command line (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds for one header before it counts as a hang")
    parser.add_argument("--cli-timeout", type=float, default=30.0, help="seconds for one conversion before it counts as a hang")
    parser.add_argument("--no-hostile", action="store_true", help="skip the named hostile inputs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="compat-bench-hostile-") as tmp:
        work = Path(tmp)
        if args.headers:
            print(f"header campaign: {args.headers:,} mutated headers", file=sys.stderr)
            report["headers"] = header_campaign(args.headers, args.seed, args.timeout, work)
        if not args.no_hostile:
            print("hostile inputs through `compat convert ckpt`", file=sys.stderr)
            report["hostile"] = hostile_inputs(work, args.cli_timeout)
        if args.cli:
            print(f"{args.cli} mutated drafter headers through `compat convert ckpt`", file=sys.stderr)
            report["cli"] = cli_campaign(args.cli, args.seed, args.cli_timeout, work)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    return 0


def _mb(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def _print(report: dict) -> None:
    if "headers" in report:
        h = report["headers"]
        print(f"\nheader campaign ({h['headers']:,} mutated headers, seed {h['seed']}, {h['wall_s']} s):")
        print(f"  uncaught exceptions {h['uncaught']}, hangs {h['hangs']}, undocumented disagreements with the library "
              f"{h['undocumented_disagreements']}")
        print(f"  slowest answer {h['slowest_cpu_s']} s CPU (seed {h['slowest_seed']}), worker peak RSS {h['worker_peak_rss_mb']} MB")
        print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in h["outcomes"].items()))
        for kind, examples in h["examples"].items():
            for example in examples:
                print(f"    {kind}: {example}")
    if "hostile" in report:
        print(f"\nhostile inputs through `compat convert ckpt SRC DST --to vllm` (goal: no traceback, no hang, RSS < {GOAL_RSS_MB} MB):")
        print(f"  {'input':48} {'read by':12} {'exit':>4} {'hang':>4} {'tb':>3} {'RSS MB':>7} {'s':>6}  message")
        for row in report["hostile"]:
            print(f"  {row['input'][:48]:48} {row['reader']:12} {row['code']:>4} {'yes' if row['hung'] else '-':>4} "
                  f"{'yes' if row['traceback'] else '-':>3} {_mb(row['rss_mb']):>7} {row['seconds']:>6.2f}  {row['message'][:90]}"
                  + (f"  [secret copied into DST: {row['secret_copied_into_dst']}]" if "secret_copied_into_dst" in row else ""))
    if "cli" in report:
        c = report["cli"]
        print(f"\n{c['runs']} mutated drafter headers through the CLI: exit codes {c['exit_codes']}, tracebacks {c['tracebacks']}, "
              f"hangs {c['hangs']}, outputs the library refuses {c['outputs_the_library_refuses']}, peak RSS {c['peak_rss_mb']} MB")
        for example in c["examples"]["tracebacks"]:
            print(f"    traceback: {example}")


if __name__ == "__main__":
    raise SystemExit(main())
