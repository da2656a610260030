"""Re-open what was written, before it is moved into DST: the destination layout must read it back
with every tensor it loads, the planned shapes and dtypes, the planned layer ids, and each tensor's
bytes equal to the source's (compared as they were copied, by write_safetensors)."""

from __future__ import annotations

import json
from pathlib import Path

from compat import checkpoints
from compat.checkpoints import RECORD_FILE, RECORD_KEY, ReadContext
from compat.core.errors import EXIT_CHECK_FAILED, CompatError
from compat.safetensors_stream import TensorInfo, WrittenTensor, read_header

from .plan import Plan


class VerificationError(CompatError):
    exit_code = EXIT_CHECK_FAILED


def verify(out_dir: Path, plan: Plan, written: list[WrittenTensor]) -> None:
    problems = []
    infos: dict[str, TensorInfo] = {}
    for file_name, _ in plan.shards:
        try:
            infos.update(read_header(out_dir / file_name).tensors)
        except CompatError as exc:
            raise VerificationError(f"verification: the written {file_name} does not read back: {exc}") from None
    expected = {t.name: t for t in written}
    if set(infos) != set(expected):
        problems.append(f"tensor set differs: missing {sorted(set(expected) - set(infos))}, unexpected {sorted(set(infos) - set(expected))}")
    dest_layout = checkpoints.get_layout(plan.dest_layout)
    canonical = {dest_layout.to_canonical(name) for name in infos}
    wanted = {t.canonical for t in plan.tensors if t.dest_name}
    if None in canonical or canonical != wanted:
        problems.append(f"the {plan.dest_layout} layout reads back {sorted(c for c in canonical if c)}, planned {sorted(wanted)}")
    for name, info in infos.items():
        want = expected.get(name)
        if want and (info.dtype != want.dtype or info.shape != tuple(want.shape)):
            problems.append(f"{name}: written as {info.dtype} {list(info.shape)}, planned {want.dtype} {list(want.shape)}")
    for tensor in written:
        if tensor.mismatch:
            problems.append(f"{tensor.name}: {tensor.mismatch}")
    config = json.loads((out_dir / "config.json").read_text())
    config[RECORD_KEY] = json.loads((out_dir / RECORD_FILE).read_text())
    try:
        reread = dest_layout.read_config(config, ReadContext(target=plan.target))
    except CompatError as exc:
        problems.append(f"the written config.json does not read back as {plan.dest_layout}: {exc}")
    else:
        if reread.layer_ids.capture_before != plan.drafter.layer_ids.capture_before:
            problems.append(f"the written config reads back layer ids {reread.layer_ids.capture_before}, "
                            f"planned {plan.drafter.layer_ids.capture_before}")
    matches = checkpoints.detect_layout(config, set(infos))
    if not matches or matches[0].NAME != plan.dest_layout:
        problems.append(f"the output is detected as {matches[0].NAME if matches else 'no layout'}, not {plan.dest_layout}")
    if problems:
        raise VerificationError("verification of the written checkpoint failed (nothing was moved into DST):\n  - "
                                + "\n  - ".join(problems))
