#!/usr/bin/env python3
"""Make the README's screenshot of `compat matrix` (docs/matrix.png): the real page, in headless Chromium.

The page is built by the command a user types, for a Kimi-K2 target and a SpecForge drafter (written as
tools/behaviour_fixtures.py writes them) beside the built-in families, on both engines; Chromium (Debian's
`chromium`, driven over its DevTools pipe by tests/matrix_page/cdp.py) opens it offline, a click on the pair's
cell for one release opens its checks, and the window is saved as a PNG. Nothing is drawn by hand.

    python tools/matrix_screenshot.py                  # writes docs/matrix.png (and prints the command it ran)
    python tools/matrix_screenshot.py --offline        # cached releases only
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "matrix_page"))

RANGES = ("vllm:>=0.25", "sglang:>=0.5.14")
CLICK = ("vllm", "0.25.0")  # the pair's cell opened in the screenshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "matrix.png")
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=860)
    args = parser.parse_args()
    import behaviour_fixtures as fx
    from cdp import Browser

    with tempfile.TemporaryDirectory(prefix="matrix-shot-") as work:
        root = Path(work)
        target = fx.write_target(root, "Kimi-K2-Instruct")
        drafter = fx.write_drafter(root, "kimi-k2-eagle3", "sf", 61, 0)
        command = ["compat", "matrix", "--engine", "vllm", "--engine", "sglang", "--target", "Kimi-K2-Instruct",
                   "--drafter", "kimi-k2-eagle3", *[w for r in RANGES for w in ("--releases", r)],
                   "--out", "site", *(["--offline"] if args.offline else [])]
        print("$ " + " ".join(command))
        subprocess.run([sys.executable, "-m", "compat", *command[1:]], cwd=root, check=True)
        assert target.exists() and drafter.exists()
        with Browser() as browser:
            browser.open(root / "site" / "matrix.html", width=args.width, height=args.height)
            found = browser.evaluate(
                "(() => { const r = [...document.querySelectorAll('#matrix tr[data-engine=\"%s\"]')]"
                ".find(r => r.querySelector('th').textContent === '%s'); if (!r) return false;"
                " r.querySelector('td.c.user').id = 'shot-cell'; return true; })()" % CLICK)
            if not found:
                raise SystemExit(f"no row {CLICK} on the page")
            browser.click("#shot-cell")
            errors = browser.errors()
            if errors:
                raise SystemExit(f"the page logged errors: {errors}")
            args.out.parent.mkdir(parents=True, exist_ok=True)
            browser.screenshot(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
