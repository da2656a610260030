"""Peak memory, time and output of `compat convert ckpt` on hostile inputs (issue 11).

    python bench/bench_hostile_convert.py [--dir /tmp]

Each input is a tiny drafter with one thing wrong; each conversion runs in its own process (peak RSS
from wait4). Goal: every one refused with exit 4 and a one-line message, no traceback, in well under
256 MB (the first rows show what importing torch and converting a healthy .bin cost, for scale).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "checkpoints"))
from ckpt_builders import canonical_tensors, eagle_config, write_drafter  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from compat.cli import main; sys.exit(main(sys.argv[1:]))", "convert", "ckpt"]


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def bin_drafter(root: Path, name: str, edit=None, legacy: bool = False) -> Path:
    import torch

    src = root / name
    src.mkdir()
    state = {k.replace("layers.0.", "midlayer."): torch.from_numpy(v.copy()) for k, v in canonical_tensors().items()}
    if edit:
        edit(state, torch)
    torch.save(state, src / "pytorch_model.bin", **({"_use_new_zipfile_serialization": False} if legacy else {}))
    (src / "config.json").write_text(json.dumps(eagle_config()))
    return src


def inputs(root: Path) -> dict[str, Path]:
    made = {
        "healthy pytorch_model.bin (baseline)": bin_drafter(root, "healthy"),
        "stride-0 expand(786432, 1024) (151 KB file)": bin_drafter(
            root, "expand", lambda s, t: s.__setitem__("fc.weight", t.zeros(1).expand(786432, 1024))),
        "stride-0 expand(1<<20, 1<<20)": bin_drafter(root, "expand2", lambda s, t: s.__setitem__("fc.weight", t.zeros(1).expand(1 << 20, 1 << 20))),
        "pickle calling os.system": bin_drafter(root, "evil", lambda s, t: s.__setitem__("x", Evil())),
        "legacy-format pickle calling os.system": bin_drafter(root, "evil-legacy", lambda s, t: s.__setitem__("x", Evil()), legacy=True),
    }
    bomb = bin_drafter(root, "bomb")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z, z.open("archive/data.pkl", "w", force_zip64=True) as member:
        member.write(b"\x80\x02}q\x00")
        for _ in range(1024):  # 1 GiB of pickle that deflates to ~1 MB, written 1 MiB at a time
            member.write(b"N" * (1 << 20))
    (bomb / "pytorch_model.bin").write_bytes(buffer.getvalue())
    made["zip bomb (1 GiB data.pkl, deflated)"] = bomb
    for name, make in (("config.json -> /dev/zero", lambda p: p.symlink_to("/dev/zero")), ("config.json is a FIFO", os.mkfifo)):
        src = write_drafter(root / name.replace(" ", "_").replace("/", "_"), "eagle")
        (src / "config.json").unlink()
        make(src / "config.json")
        made[name] = src
    return made


def measure(argv: list[str]) -> tuple[int, float, float, str]:
    """Exit code, seconds and peak RSS (MiB) of argv, from GNU time (its own small process forks the
    child, so the child's peak is not inflated by this process's memory at fork time)."""
    report = Path(tempfile.mktemp(prefix="compat-bench-time-"))
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", str(report), *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, errors="replace")
    elapsed = time.monotonic() - start
    kib = int(report.read_text().split()[-1])
    report.unlink()
    return proc.returncode, elapsed, kib / 1024, proc.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="compat-hostile-bench-") as tmp:
        root = Path(tmp)
        code, seconds, rss, _ = measure([sys.executable, "-c", "import torch, compat.cli"])
        print(f"{'input':46} {'exit':>4} {'s':>6} {'peak RSS':>10}  traceback  message")
        label = "(import torch, compat.cli: the floor)"
        print(f"{label:46} {code:>4} {seconds:6.2f} {rss:7.1f} MiB")
        worst = 0.0
        for name, src in inputs(root).items():
            code, seconds, rss, err = measure([*CLI, str(src), str(root / "out"), "--to", "vllm"])
            subprocess.run(["rm", "-rf", str(root / "out")])
            first = next((line for line in err.splitlines() if line.startswith("error:")), err.strip()[:90])
            if "baseline" not in name:
                worst = max(worst, rss)
            print(f"{name:46} {code:>4} {seconds:6.2f} {rss:7.1f} MiB  {'YES' if 'Traceback' in err else 'no':9}  "
                  f"{first.replace(str(root), '<tmp>')[:140]}")
        print(f"\nworst peak RSS on a hostile input: {worst:.1f} MiB (goal: under 256 MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
