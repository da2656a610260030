"""Benchmark `compat convert ckpt` on a Kimi-K2-shaped EAGLE-3 drafter against `cp -r`.

    python bench/bench_convert.py [--dir /tmp] [--repeat 5] [--cold] [--keep]

Builds (once, into DIR/compat-bench-kimi-drafter) a drafter with Kimi-K2 / AQ-MedAI shapes in bf16:
hidden 7168, target vocab 163840 (embed_tokens included), draft vocab 32000, fc 21504 -> 7168, one
Llama-style decoder layer (64 heads x 128, intermediate 18432), d2t/t2d. The file is written block
by block, never held in memory. Then times `cp -r` and the conversion to the vLLM layout (each in
its own child process, wall time, CPU and peak RSS from GNU time), alternating, and prints a table
of medians. Every run starts from the same state: dirty pages synced, DST removed, and the source
either in the page cache for every command (default: one untimed `cp -r` warms it) or, with --cold
(needs root), dropped from it before every run of every command.

Goal (issue 4): within 1.2x of `cp` and under 128 MB peak RSS. The conversion fsyncs before its
rename and `cp -r` does not, so `cp -r && sync` is the like-for-like baseline; both are reported.
On the shared 2-core VM this was tuned on, the same warm `cp -r` took 1.5 to 4.1 s of CPU from run to
run (worst after --cold, which empties the page cache; the VM runs kdamond, so freed memory is probably
reclaimed by the host and faulted back in): compare the CPU column, run it more than once, and quote
medians with the load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HIDDEN, HEADS, HEAD_DIM, INTER = 7168, 64, 128, 18432
VOCAB, DRAFT_VOCAB, TARGET_LAYERS = 163840, 32000, 61
BLOCK = 16 * 1024 * 1024


def kimi_tensors() -> list[tuple[str, str, tuple[int, ...]]]:
    attn_in = 2 * HIDDEN
    layer = [
        ("midlayer.input_layernorm.weight", "BF16", (HIDDEN,)),
        ("midlayer.hidden_norm.weight", "BF16", (HIDDEN,)),
        ("midlayer.post_attention_layernorm.weight", "BF16", (HIDDEN,)),
        ("midlayer.self_attn.q_proj.weight", "BF16", (HEADS * HEAD_DIM, attn_in)),
        ("midlayer.self_attn.k_proj.weight", "BF16", (HEADS * HEAD_DIM, attn_in)),
        ("midlayer.self_attn.v_proj.weight", "BF16", (HEADS * HEAD_DIM, attn_in)),
        ("midlayer.self_attn.o_proj.weight", "BF16", (HIDDEN, HEADS * HEAD_DIM)),
        ("midlayer.mlp.gate_proj.weight", "BF16", (INTER, HIDDEN)),
        ("midlayer.mlp.up_proj.weight", "BF16", (INTER, HIDDEN)),
        ("midlayer.mlp.down_proj.weight", "BF16", (HIDDEN, INTER)),
    ]
    return [
        ("embed_tokens.weight", "BF16", (VOCAB, HIDDEN)),
        ("fc.weight", "BF16", (HIDDEN, 3 * HIDDEN)),
        *layer,
        ("norm.weight", "BF16", (HIDDEN,)),
        ("lm_head.weight", "BF16", (DRAFT_VOCAB, HIDDEN)),
        ("d2t", "I64", (DRAFT_VOCAB,)),
        ("t2d", "BOOL", (VOCAB,)),
    ]


SIZES = {"BF16": 2, "I64": 8, "BOOL": 1}


def build(directory: Path) -> int:
    """Write the drafter block by block; returns its size in bytes."""
    if (directory / "model.safetensors").is_file() and (directory / "config.json").is_file():
        return (directory / "model.safetensors").stat().st_size
    tmp = directory.with_name(directory.name + ".building")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rng = np.random.default_rng(0)
    used = np.sort(rng.choice(VOCAB, size=DRAFT_VOCAB, replace=False))
    small = {"d2t": (used - np.arange(DRAFT_VOCAB)).astype("<i8").tobytes()}
    mask = np.zeros(VOCAB, np.uint8)
    mask[used] = 1
    small["t2d"] = mask.tobytes()
    header, position = {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape in kimi_tensors():
        size = math.prod(shape) * SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [position, position + size]}
        position += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    block = rng.integers(0, 2**16, size=BLOCK // 2, dtype=np.uint16)
    block = (block & 0x3FFF | 0x3C00).astype("<u2").tobytes()  # finite bf16-ish values, incompressible enough
    with open(tmp / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for name, dtype, shape in kimi_tensors():
            if name in small:
                f.write(small[name])
                continue
            remaining = math.prod(shape) * SIZES[dtype]
            while remaining:
                n = min(remaining, len(block))
                f.write(block[:n])
                remaining -= n
    config = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "head_dim": HEAD_DIM, "intermediate_size": INTER,
        "num_hidden_layers": 1, "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB, "rms_norm_eps": 1e-6,
        "hidden_act": "silu", "max_position_embeddings": 131072, "rope_theta": 50000.0, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "use_aux_hidden_state": True},
    }
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    target = tmp / "target"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
                                                    "hidden_size": HIDDEN, "vocab_size": VOCAB, "num_hidden_layers": TARGET_LAYERS}))
    os.sync()
    shutil.rmtree(directory, ignore_errors=True)
    os.rename(tmp, directory)
    return (directory / "model.safetensors").stat().st_size


def timed(argv: list[str]) -> tuple[float, int, float]:
    """Wall time, peak RSS (bytes) and CPU seconds of one command, measured by /usr/bin/time (GNU time).

    Not wait4() on a child of this process: a forked child's peak RSS starts at the parent's.
    """
    report = Path(os.environ.get("TMPDIR", "/tmp")) / f"compat-bench-time-{os.getpid()}.txt"
    proc = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%e %M %U %S", *argv],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()}")
    elapsed, max_kib, user, system = report.read_text().split()[-4:]
    report.unlink()
    return float(elapsed), int(max_kib) * 1024, float(user) + float(system)


PHASES_DRIVER = """
import json, os, sys, time
from pathlib import Path
import compat.convert as convert, compat.safetensors_stream as stream
totals = {}
def timing(name, func):
    def wrapper(*args):
        start = time.perf_counter()
        try:
            return func(*args)
        finally:
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - start
    return wrapper
stream._copy_range = timing("kernel copy, copy_file_range (main thread)", stream._copy_range)
stream._Check.compare_file_range = timing("read back + compare with the source (worker thread)", stream._Check.compare_file_range)
stream._start_writeback = timing("sync_file_range(WRITE) of verified pieces (worker thread)", stream._start_writeback)
stream.os.fsync = timing("fsync (main thread, after the copy)", os.fsync)
start = time.perf_counter()
plan = convert.make_plan(convert.Options(src=Path(sys.argv[1]), dst=Path(sys.argv[2]), to="vllm",
                                         target=Path(sys.argv[1]) / "target"))
totals["plan (headers, config, d2t/t2d checks)"] = time.perf_counter() - start
start = time.perf_counter()
convert.execute(plan, progress=False)
totals["execute, wall"] = time.perf_counter() - start
print(json.dumps(totals))
"""


def phases(src: Path, out: Path) -> dict[str, float]:
    """Where the conversion's time goes, from one instrumented in-process run."""
    os.sync()
    proc = subprocess.run([sys.executable, "-c", PHASES_DRIVER, str(src), str(out)], capture_output=True, text=True)
    shutil.rmtree(out, ignore_errors=True)
    if proc.returncode != 0:
        raise SystemExit(f"phase run failed: {proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def drop_caches() -> None:
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as exc:
        raise SystemExit(f"--cold needs root to drop the page cache: {exc}") from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp"), help="where to build the drafter (default /tmp)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="drop the page cache before every run (root only)")
    parser.add_argument("--keep", action="store_true", help="keep the drafter for the next run")
    args = parser.parse_args()

    src = args.dir / "compat-bench-kimi-drafter"
    t0 = time.perf_counter()
    size = build(src)
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(f"drafter: {src} ({size / 2**30:.2f} GiB, built/found in {time.perf_counter() - t0:.1f} s)", flush=True)
    out = args.dir / "compat-bench-out"
    convert = [sys.executable, "-c", "import sys; from compat.cli import main; sys.exit(main([\"convert\", \"ckpt\", *sys.argv[1:]]))",
               str(src), str(out), "--to", "vllm", "--target", str(src / "target")]
    commands = {"cp -r": ["cp", "-r", str(src), str(out)],
                "cp -r && sync": ["sh", "-c", f"cp -r '{src}' '{out}' && sync"],
                "compat convert ckpt --to vllm": convert,
                "  same, --checksum crc32": [*convert, "--checksum", "crc32"],
                "  same, --checksum sha256": [*convert, "--checksum", "sha256"]}
    results: dict[str, list[tuple[float, int, float]]] = {name: [] for name in commands}
    timed(commands["cp -r"])  # warm the page cache with the source once
    shutil.rmtree(out, ignore_errors=True)
    loads = []
    for _ in range(args.repeat):
        for name, argv in commands.items():
            os.sync()  # earlier dirty pages are not charged to the next run
            if args.cold:
                drop_caches()
            results[name].append(timed(argv))
            loads.append(os.getloadavg()[0])
            shutil.rmtree(out, ignore_errors=True)
    def wall(name: str, pick=statistics.median) -> float:
        return pick(run[0] for run in results[name])

    print(f"\n{'command':34} {'median s':>9} {'min s':>6} {'runs s':>30} {'vs cp':>6} {'min vs cp':>9} {'CPU s':>6} {'peak RSS':>10}")
    for name, runs in results.items():
        rss = max(run[1] for run in runs)
        cpu = statistics.median(run[2] for run in runs)
        print(f"{name:34} {wall(name):9.2f} {wall(name, min):6.2f} {' '.join(f'{run[0]:.2f}' for run in runs):>30} "
              f"{wall(name) / wall('cp -r'):5.2f}x {wall(name, min) / wall('cp -r', min):8.2f}x {cpu:6.2f} {rss / 2**20:7.1f} MiB")
    convert_name = "compat convert ckpt --to vllm"
    print(f"\nconversion vs cp -r && sync (both durable on disk; the converter fsyncs before its rename): "
          f"median {wall(convert_name) / wall('cp -r && sync'):.2f}x, min {wall(convert_name, min) / wall('cp -r && sync', min):.2f}x")
    print(f"throughput of the conversion: {size / wall(convert_name) / 2**30:.2f} GiB/s median "
          "(copies in the kernel, reads back every byte of the output and the source and compares them, fsyncs)")
    print(f"page cache: {'dropped before every run (cold)' if args.cold else 'source warm for every run'}")
    print(f"1-min load average after each run: median {statistics.median(loads):.2f}, max {max(loads):.2f} "
          f"on {os.cpu_count()} cores (other work on the machine inflates the spread)")
    print("\nphases of one instrumented conversion (seconds):")
    for name, seconds in phases(src, out).items():
        print(f"  {name:60} {seconds:6.2f}")
    if not args.keep:
        shutil.rmtree(src, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
