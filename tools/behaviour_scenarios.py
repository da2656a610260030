"""The fixed scenario list of tools/record_behaviour.py: which compat command lines it runs, and on what.

A scenario is {"id", "argv" (after `compat`), "phase", "dst" (a directory to record, for convert)}.
Phase 0 runs first (it makes the compat-converted drafters the doctor scenarios of phase 1 read).
The list depends only on this file and on which releases are in the user cache (`cached_releases`,
recorded in the output's _meta line).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from behaviour_explain_matrix import explain_scenarios, matrix_scenarios, write_logs
from behaviour_fixtures import (DEEPSEEK_FAMILY, DRAFTERS, TARGETS, output_of_ids, write_broken, write_drafter,
                                write_target)

# Release spreads for doctor and convert: across the boundaries the research notes name (whitelist renamed
# 0.17 and removed 0.22, DeepSeek/Kimi EAGLE-3 0.18, ids read from 0.11.1, unknown keys refused from 0.16;
# SGLang DeepSeek capture 0.5.4.post2, Kimi-K2.5 0.5.10, MLA drafter 0.5.12, conditional +1 0.5.13, ...).
VLLM_SPREAD = ["0.10.0", "0.10.2", "0.11.0", "0.11.1", "0.13.0", "0.15.0", "0.16.0", "0.17.1", "0.18.0", "0.19.0",
               "0.21.0", "0.22.0", "0.24.0", "0.27.0", "0.30.0", "0.32.0", "0.33.0"]
SGLANG_SPREAD = ["0.4.4", "0.4.6", "0.4.9", "0.4.10", "0.5.2", "0.5.4.post1", "0.5.4.post2", "0.5.8", "0.5.10",
                 "0.5.12", "0.5.13", "0.5.16", "0.5.17", "0.5.18", "0.5.20", "0.5.23"]
GRID_TARGETS = ["Kimi-K2-Instruct", "DeepSeek-V3", "Kimi-K2.5", "Llama-3.1-8B", "Qwen3-8B"]
DRAFTER_KINDS = list(DRAFTERS) + ["converted"]
ENGINE_VENV = Path.home() / ".cache" / "compat" / "engine-venv"


def _version_key(text: str) -> tuple:
    parts = []
    for piece in text.replace(".post", ".-1.").split("."):
        parts.append(int(piece) if piece.lstrip("-").isdigit() else 0)
    return tuple(parts)


def cached_releases(cache: Path) -> dict[str, list[str]]:
    """Every complete release (a release.json beside its source) in the cache, oldest first."""
    found = {}
    for engine in ("vllm", "sglang"):
        root = cache / "releases" / engine
        names = [p.name for p in root.iterdir() if (p / "release.json").is_file()] if root.is_dir() else []
        found[engine] = sorted(names, key=_version_key)
    return found


def spread(cached: dict[str, list[str]]) -> tuple[list[str], list[str], list[str]]:
    """(vllm, sglang) spreads limited to the cache, and the spread releases missing from it."""
    vllm = [v for v in VLLM_SPREAD if v in cached["vllm"]]
    sglang = [v for v in SGLANG_SPREAD if v in cached["sglang"]]
    missing = [f"vllm=={v}" for v in VLLM_SPREAD if v not in vllm] + [f"sglang=={v}" for v in SGLANG_SPREAD if v not in sglang]
    return vllm, sglang, missing


def drafter_dir(kind: str, target: str) -> str:
    return f"{kind}-{target}"


def build_inputs(work: Path) -> None:
    """Every target and drafter the scenarios name (the converted drafters come from phase 0)."""
    for name in TARGETS:
        write_target(work, name)
    seed = 0
    for target in GRID_TARGETS + ["Qwen3-30B-A3B", "tiny-llama"]:
        for kind in DRAFTERS:
            seed += 1
            write_drafter(work, drafter_dir(kind, target), kind, TARGETS[target][2], seed)
    write_broken(work)
    write_logs(work)
    if ENGINE_VENV.is_dir():  # a serving venv named by a relative path
        os.symlink(ENGINE_VENV, work / "venv-serve")


def _pick(items: list[str], i: int) -> str:
    return items[i % len(items)]


def scenarios(cached: dict[str, list[str]]) -> list[dict]:
    vllm, sglang, _ = spread(cached)
    out: list[dict] = []

    def add(sid: str, *argv: str, phase: int = 1, dst: str | None = None) -> None:
        out.append({"id": sid, "argv": list(argv), "phase": phase, **({"dst": dst} if dst else {})})

    # phase 0: the compat-converted drafters (with their record) that doctor reads later
    for target in GRID_TARGETS + ["Qwen3-30B-A3B"]:
        name = drafter_dir("converted", target)
        add(f"convert/setup/{target}", "convert", "ckpt", drafter_dir("sf", target), name, "--to", "vllm",
            "--target", target, "--json", phase=0, dst=name)

    # probe every cached release
    for engine in ("vllm", "sglang"):
        for version in cached[engine]:
            add(f"probe/{engine}=={version}", "probe", "--engine", f"{engine}=={version}", "--json")
    for spec in (f"vllm=={_pick(vllm, 8)}", f"vllm=={vllm[-1]}", f"sglang=={_pick(sglang, 10)}", f"sglang=={sglang[0]}"):
        add(f"probe-human/{spec}", "probe", "--engine", spec)

    # doctor: every target x drafter, two releases of each engine, rotating through the spreads
    i = 0
    for target in GRID_TARGETS:
        for kind in DRAFTER_KINDS:
            drafter = drafter_dir(kind, target)
            for engine, versions, step in (("vllm", vllm, 0), ("vllm", vllm, 7), ("sglang", sglang, 0), ("sglang", sglang, 7)):
                version = _pick(versions, i + step)
                add(f"doctor/{target}/{kind}/{engine}=={version}", "doctor", target, drafter,
                    "--engine", f"{engine}=={version}", "--json")
            i += 1
    # the seed case over every spread release
    for engine, versions in (("vllm", vllm), ("sglang", sglang)):
        for version in versions:
            add(f"doctor-seed/{engine}=={version}", "doctor", "Kimi-K2.5", drafter_dir("vllm-nested", "Kimi-K2.5"),
                "--engine", f"{engine}=={version}", "--json")
    # Qwen3-MoE and a target named by its config.json
    for kind in ("sf", "speculators", "converted", "toplevel"):
        for spec in (f"vllm=={_pick(vllm, 9)}", f"sglang=={_pick(sglang, 12)}"):
            add(f"doctor/Qwen3-30B-A3B/{kind}/{spec}", "doctor", "Qwen3-30B-A3B", drafter_dir(kind, "Qwen3-30B-A3B"),
                "--engine", spec, "--json")
    for spec in (f"vllm=={_pick(vllm, 8)}", f"sglang=={_pick(sglang, 10)}"):
        add(f"doctor-config-json/{spec}", "doctor", "Kimi-K2-Instruct/config.json",
            drafter_dir("sf", "Kimi-K2-Instruct") + "/", "--engine", spec, "--json")

    # --layer-ids-convention on drafters that do and do not settle it
    for target in ("Kimi-K2-Instruct", "Llama-3.1-8B"):
        for kind in ("toplevel", "noids", "sf", "vllm-nested", "converted"):
            for convention in ("capture-before", "output-of"):
                for spec in (f"vllm=={_pick(vllm, 8)}", f"sglang=={_pick(sglang, 10)}"):
                    add(f"doctor-convention/{target}/{kind}/{convention}/{spec}", "doctor", target,
                        drafter_dir(kind, target), "--engine", spec, "--layer-ids-convention", convention, "--json")

    # the installed engine of another interpreter (--python), named absolutely and relatively
    serve = str(ENGINE_VENV / "bin" / "python")
    for kind in ("sf", "toplevel", "converted"):
        add(f"doctor-python/Llama-3.1-8B/{kind}", "doctor", "Llama-3.1-8B", drafter_dir(kind, "Llama-3.1-8B"),
            "--engine", "vllm", "--python", serve, "--json")
    add("doctor-python/Kimi-K2-Instruct/sf", "doctor", "Kimi-K2-Instruct", drafter_dir("sf", "Kimi-K2-Instruct"),
        "--engine", "vllm", "--python", serve, "--json")
    add("doctor-python/relative", "doctor", "Llama-3.1-8B", drafter_dir("sf", "Llama-3.1-8B"), "--engine", "vllm",
        "--python", "./venv-serve/bin/python", "--json")
    add("doctor-python/release-and-python", "doctor", "Kimi-K2-Instruct", drafter_dir("sf", "Kimi-K2-Instruct"),
        "--engine", f"vllm=={_pick(vllm, 8)}", "--python", serve, "--json")
    add("doctor-python/human", "doctor", "Llama-3.1-8B", drafter_dir("toplevel", "Llama-3.1-8B"), "--engine", "vllm",
        "--python", "./venv-serve/bin/python")
    add("probe-python/json", "probe", "--engine", "vllm", "--python", serve, "--json")
    add("probe-python/human", "probe", "--engine", "vllm", "--python", "./venv-serve/bin/python")

    # quiet, human output, launch options
    sf_kimi = ("Kimi-K2-Instruct", drafter_dir("sf", "Kimi-K2-Instruct"))
    seed = ("Kimi-K2.5", drafter_dir("vllm-nested", "Kimi-K2.5"))
    for j, spec in enumerate((f"vllm=={_pick(vllm, 8)}", f"sglang=={_pick(sglang, 10)}")):
        add(f"doctor-quiet/json/{spec}", "doctor", *sf_kimi, "--engine", spec, "-q", "--json")
        add(f"doctor-quiet/human/{spec}", "doctor", *sf_kimi, "--engine", spec, "-q")
        add(f"doctor-quiet/qq/{spec}", "doctor", *seed, "--engine", spec, "-qq")
        add(f"doctor-quiet/before-command/{spec}", "-q", "doctor", *seed, "--engine", spec)
    for target, kind, spec in (("Kimi-K2.5", "vllm-nested", f"vllm=={_pick(vllm, 6)}"),
                               ("Kimi-K2.5", "vllm-nested", f"vllm=={_pick(vllm, 8)}"),
                               ("Kimi-K2-Instruct", "sf", f"sglang=={_pick(sglang, 10)}"),
                               ("Kimi-K2-Instruct", "toplevel", f"vllm=={vllm[-1]}"),
                               ("DeepSeek-V3", "mla", f"sglang=={sglang[-1]}"),
                               ("Llama-3.1-8B", "speculators", f"vllm=={_pick(vllm, 3)}"),
                               ("Qwen3-8B", "zerod2t", f"sglang=={_pick(sglang, 4)}"),
                               ("Llama-3.1-8B", "converted", f"vllm=={_pick(vllm, 0)}")):
        add(f"doctor-human/{target}/{kind}/{spec}", "doctor", target, drafter_dir(kind, target), "--engine", spec)
    for extra in (("--num-speculative-tokens", "5"), ("--topk", "4"), ("--spec", "disable_by_batch_size=4"),
                  ("--spec", "num_speculative_tokens=2"), ("--color", "always")):
        for spec in (f"vllm=={_pick(vllm, 8)}", f"sglang=={_pick(sglang, 10)}"):
            add(f"doctor-options/{'='.join(extra)}/{spec}", "doctor", *sf_kimi, "--engine", spec, *extra,
                *(() if extra[0] == "--color" else ("--json",)))

    # --releases over small ranges (the cached index listing: --offline)
    add("doctor-releases/vllm/json", "doctor", *sf_kimi, "--engine", "vllm", "--releases", ">=0.17,<0.19", "--offline", "--json")
    add("doctor-releases/vllm/human", "doctor", *seed, "--engine", "vllm", "--releases", ">=0.17,<0.19", "--offline")
    add("doctor-releases/sglang/json", "doctor", *sf_kimi, "--engine", "sglang", "--releases", ">=0.5.12,<0.5.14",
        "--offline", "--json")
    add("doctor-releases/sglang/quiet", "doctor", *seed, "--engine", "sglang", "--releases", ">=0.5.12,<0.5.14",
        "--offline", "-q")
    _convert_scenarios(add, vllm, sglang)
    _error_scenarios(add, vllm)
    explain_scenarios(add, vllm, sglang, serve)
    matrix_scenarios(add, vllm, sglang)
    return out


def _convert_scenarios(add, vllm: list[str], sglang: list[str]) -> None:
    n = 0

    def convert(sid: str, src: str, *options: str) -> None:
        nonlocal n
        n += 1
        dst = f"out-{n:03d}"
        add(f"convert/{sid}", "convert", "ckpt", src, dst, *options, "--json", dst=dst)

    tiny, kimi, ds = "tiny-llama", "Kimi-K2-Instruct", "DeepSeek-V3"
    for kind in ("sf", "vllm-nested", "speculators", "toplevel", "noids", "fourids", "nod2t", "zerod2t"):
        for to in ("vllm", "sglang", "speculators", "eagle"):
            convert(f"{kind}-{to}/tiny-llama", drafter_dir(kind, tiny), "--to", to, "--target", tiny)
    for to in ("vllm", "sglang", "eagle"):  # the refusal, then each reading
        for convention in ("capture-before", "output-of"):
            convert(f"toplevel-{to}/{convention}", drafter_dir("toplevel", tiny), "--to", to, "--target", tiny,
                    "--layer-ids-convention", convention)
    convert("noids-vllm/layer-ids", drafter_dir("noids", tiny), "--to", "vllm", "--target", tiny, "--layer-ids", "3", "5", "6")
    convert("noids-vllm/layer-ids-output-of", drafter_dir("noids", tiny), "--to", "vllm", "--target", tiny,
            "--layer-ids", "2,4,5", "--layer-ids-convention", "output-of")
    convert("sf-vllm/no-target", drafter_dir("sf", tiny), "--to", "vllm")
    for version in (sglang[0], _pick(sglang, 9), _pick(sglang, 10), sglang[-1]):
        convert(f"sf-sglang/kimi/sglang=={version}", drafter_dir("sf", kimi), "--to", "sglang", "--target", kimi,
                "--engine", f"sglang=={version}")
        convert(f"mla-sglang/deepseek/sglang=={version}", drafter_dir("mla", ds), "--to", "sglang", "--target", ds,
                "--engine", f"sglang=={version}")
    for version in (vllm[0], _pick(vllm, 3), _pick(vllm, 8), vllm[-1]):
        convert(f"sf-vllm/kimi/vllm=={version}", drafter_dir("sf", kimi), "--to", "vllm", "--target", kimi,
                "--engine", f"vllm=={version}")
    convert("mla-vllm/deepseek", drafter_dir("mla", ds), "--to", "vllm", "--target", ds)
    convert("mla-eagle/refused", drafter_dir("mla", ds), "--to", "eagle", "--target", ds)
    convert("mla-speculators/refused", drafter_dir("mla", ds), "--to", "speculators", "--target", ds)
    convert("sf-mla/refused", drafter_dir("sf", tiny), "--to", "mla", "--target", tiny)
    convert("seed-vllm/kimi25", drafter_dir("vllm-nested", "Kimi-K2.5"), "--to", "vllm", "--target", "Kimi-K2.5")
    convert("seed-vllm/kimi25-output-of", drafter_dir("vllm-nested", "Kimi-K2.5"), "--to", "vllm", "--target",
            "Kimi-K2.5", "--layer-ids-convention", "output-of")
    convert("converted-sglang/kimi", drafter_dir("converted", kimi), "--to", "sglang", "--target", kimi,
            "--engine", f"sglang=={_pick(sglang, 10)}")
    convert("converted-eagle/llama", drafter_dir("converted", "Llama-3.1-8B"), "--to", "eagle", "--target", "Llama-3.1-8B")
    convert("sf-vllm/from-eagle", drafter_dir("sf", tiny), "--to", "vllm", "--from", "eagle", "--target", tiny)
    convert("sf-vllm/from-wrong", drafter_dir("sf", tiny), "--to", "vllm", "--from", "speculators", "--target", tiny)
    convert("sf-vllm/dtype-float32", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny, "--dtype", "float32")
    convert("sf-vllm/dtype-float16", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny, "--dtype", "float16")
    convert("sf-vllm/shards", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny, "--max-shard-size", "40KB")
    convert("sf-vllm/sha256", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny, "--checksum", "sha256")
    convert("sf-vllm/crc32", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny, "--checksum", "crc32")
    convert("sf-vllm/dry-run", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny, "--dry-run")
    convert("sf-vllm/engine-version", drafter_dir("sf", tiny), "--to", "vllm", "--target", tiny,
            "--engine-version", _pick(vllm, 8))
    convert("sf-vllm/wrong-target", drafter_dir("sf", kimi), "--to", "vllm", "--target", tiny)
    add("convert/exists", "convert", "ckpt", drafter_dir("sf", tiny), "exists", "--to", "vllm", "--json", dst="exists")
    add("convert/force", "convert", "ckpt", drafter_dir("sf", tiny), "replace-me", "--to", "vllm", "--target", tiny,
        "--force", "--json", dst="replace-me")
    add("convert/human", "convert", "ckpt", drafter_dir("sf", kimi), "out-human", "--to", "vllm", "--target", kimi,
        dst="out-human")
    add("convert/human-refused", "convert", "ckpt", drafter_dir("toplevel", tiny), "out-human-refused", "--to", "sglang",
        dst="out-human-refused")


def _error_scenarios(add, vllm: list[str]) -> None:
    sf = ("Kimi-K2-Instruct", drafter_dir("sf", "Kimi-K2-Instruct"))
    spec = f"vllm=={_pick(vllm, 8)}"
    for sid, argv in (
        ("probe/no-such-release", ["probe", "--engine", "vllm==0.0.1", "--offline", "--json"]),
        ("probe/bad-engine", ["probe", "--engine", "tensorrt==1.0", "--json"]),
        ("probe/bad-spec", ["probe", "--engine", "vllm>=>1", "--json"]),
        ("probe/no-path", ["probe", "--path", "nowhere", "--json"]),
        ("probe/not-a-tree", ["probe", "--path", "empty-dir", "--json"]),
        ("probe/python-missing", ["probe", "--engine", "vllm", "--python", "./nowhere/bin/python", "--json"]),
        ("doctor/no-target", ["doctor", "nowhere", sf[1], "--engine", spec, "--json"]),
        ("doctor/no-drafter", ["doctor", sf[0], "nowhere", "--engine", spec, "--json"]),
        ("doctor/no-config", ["doctor", sf[0], "no-config", "--engine", spec, "--json"]),
        ("doctor/bad-json", ["doctor", "bad-json", sf[1], "--engine", spec, "--json"]),
        ("doctor/bad-header", ["doctor", "tiny-llama", "bad-header", "--engine", spec, "--json"]),
        ("doctor/bad-header-human", ["doctor", "tiny-llama", "bad-header", "--engine", spec]),
        ("doctor/bad-convention", ["doctor", *sf, "--engine", spec, "--layer-ids-convention", "sideways", "--json"]),
        ("doctor/bad-releases", ["doctor", *sf, "--engine", "vllm", "--releases", "not a range", "--offline", "--json"]),
        ("doctor/missing-drafter-arg", ["doctor", sf[0], "--json"]),
        ("doctor/hub-id-not-cached", ["doctor", "org/model", sf[1], "--engine", spec, "--json"]),
        ("convert/no-src", ["convert", "ckpt", "nowhere", "out-err-1", "--to", "vllm", "--json"]),
        ("convert/bad-to", ["convert", "ckpt", sf[1], "out-err-2", "--to", "tensorrt", "--json"]),
        ("convert/bad-header", ["convert", "ckpt", "bad-header", "out-err-3", "--to", "vllm", "--json"]),
        ("convert/no-config", ["convert", "ckpt", "no-config", "out-err-4", "--to", "vllm", "--json"]),
        ("convert/bad-shard-size", ["convert", "ckpt", sf[1], "out-err-5", "--to", "vllm", "--max-shard-size", "lots", "--json"]),
        ("convert/bad-layer-ids", ["convert", "ckpt", sf[1], "out-err-6", "--to", "vllm", "--layer-ids", "a", "b", "--json"]),
        ("cli/unknown-command", ["frobnicate", "--json"]),
        ("cli/no-command", []),
    ):
        add(f"error/{sid}", *argv)


def describe(scenario_list: list[dict]) -> str:
    kinds: dict[str, int] = {}
    for s in scenario_list:
        kind = s["id"].split("/")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    return json.dumps(kinds)
