"""Known issues: what code cannot tell, curated by hand, each with its upstream link and version range.

`compat doctor` shows the entries that match the engine release and the target family. An entry:

    id          stable name (tests and --json use it)
    title       one line
    engine      "vllm" | "sglang"
    versions    PEP 440 specifier of the affected releases (as far as the research established it)
    applies_to  target model_types / architectures it concerns (substring match, lower case);
                ("*",) for every target
    link        the upstream issue or PR (only links recorded in shared/research or verified upstream)
    fix         what to do, in words (a `compat patch` id, a release, a flag)
    fixed_in    the first release without the problem, when known (None: open, or not established)
    checks      (with fixed_in) the doctor checks whose failure it explains: only those are fixed by its release (a
                target's EAGLE-3 capture fixed in 0.5.10 gives nothing to an MTP target without heads)
    verified    (optional) for a link the research notes do not record: what was read upstream, and where
    platform    (optional) the one platform it concerns ("cpu"): such an entry is matched only by a caller that
                knows the platform (explain, reading the CPU runner's refusal), never by doctor, whose inputs
                do not say where the engine runs

Add an entry when a user-visible failure cannot be read from the engine's source; when a probe
learns to see it, delete the entry here. Sources: shared/research/anchors-and-pains.md section 1,
vllm-eagle3.md sections 2-5, sglang-eagle3.md sections 2-5.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

DEEPSEEK_FAMILY = ("deepseek", "kimi_k2", "kimi_k25", "kimik25")
KIMI = ("kimi_k2", "kimi_k25", "kimik25")

KNOWN_ISSUES: tuple[dict, ...] = (
    # -- vLLM -------------------------------------------------------------------------------------------
    {
        "id": "vllm-eagle3-whitelist-kimi",
        "title": "EAGLE-3 target whitelist refuses Kimi-K2 / DeepSeek targets (\"Eagle3 is only supported for [...] models\")",
        "engine": "vllm",
        "versions": ">=0.10.0,<0.18.0",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/vllm-project/vllm/pull/31254",
        "fix": "compat patch --select vllm-eagle3-whitelist (0.10.1 - 0.21.0), or vLLM >= 0.18.0",
        "fixed_in": "0.18.0",
        "checks": ("target-whitelist",),
    },
    {
        "id": "vllm-deepseek-no-eagle3-interface",
        "title": "DeepseekV2/V3ForCausalLM (Kimi-K2) lacks SupportsEagle3: passes config validation, fails at model load "
                 "(\"Model does not support EAGLE3 interface\")",
        "engine": "vllm",
        "versions": ">=0.10.0,<0.18.0",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/vllm-project/vllm/pull/32079",
        "fix": "compat patch --select vllm-deepseek-eagle3-aux (0.10.1 - 0.17.1), or vLLM >= 0.18.0 (vllm#36361)",
        "fixed_in": "0.18.0",
        "checks": ("target-interface",),
    },
    {
        "id": "vllm-kimi-k25-wrapper",
        "title": "KimiK25ForConditionalGeneration neither implements nor forwards the EAGLE-3 interface; the proposer "
                 "looks up image_token_index, which Kimi-K2.5 lacks",
        "engine": "vllm",
        "versions": ">=0.15.0,<0.18.0",
        "applies_to": ("kimi_k25", "kimik25"),
        "link": "https://github.com/vllm-project/vllm/issues/36777",
        "fix": "compat patch --select vllm-kimi-k25-eagle3, or vLLM >= 0.18.0 (vllm#36361)",
        "fixed_in": "0.18.0",
        "checks": ("target-interface",),
    },
    {
        "id": "vllm-eagle3-path-autodetect",
        "title": "a drafter path containing \"eagle3-\" runs as EAGLE-1 unless \"method\": \"eagle3\" is given",
        "engine": "vllm",
        "versions": "<0.10.2",
        "applies_to": ("*",),
        "link": "https://github.com/vllm-project/vllm/issues/21737",
        "fix": "always pass \"method\": \"eagle3\" in --speculative-config (the launch command below does)",
        "fixed_in": "0.10.2",
    },
    {
        "id": "vllm-kimi-tool-parser-spec-decode",
        "title": "Kimi-K2 tool parser drops or truncates tool calls when speculative decoding bundles several tokens in one delta",
        "engine": "vllm",
        "versions": "<0.19.0",
        "applies_to": KIMI,
        "link": "https://github.com/vllm-project/vllm/pull/38579",
        "fix": "vLLM with vllm#38579 (merged 2026-03-30), or serve without tool calling",
        "fixed_in": None,
    },
    {
        "id": "vllm-mrv2-eagle3-acceptance",
        "title": "lower EAGLE-3 acceptance on model runner v2 than on v1 (open)",
        "engine": "vllm",
        "versions": ">=0.19.0",
        "applies_to": ("*",),
        "link": "https://github.com/vllm-project/vllm/issues/40551",
        "fix": "compare acceptance with VLLM_USE_V2_MODEL_RUNNER=0 and =1",
        "fixed_in": None,
    },
    {
        "id": "vllm-kimi-structured-output-eagle3",
        "title": "no structured-output backend works for Kimi-K2.x + EAGLE-3 (xgrammar bitmask desync) (open)",
        "engine": "vllm",
        "versions": ">=0.26.0",
        "applies_to": KIMI,
        "link": "https://github.com/vllm-project/vllm/issues/51660",
        "fix": "avoid guided decoding with speculative decoding on these targets until the issue is fixed",
        "fixed_in": None,
    },
    {
        "id": "vllm-minimax-sglang-convention",
        "title": "MiniMax-M2 drafters trained against SGLang's +1 layer-id convention get ~10% acceptance on vLLM",
        "engine": "vllm",
        "versions": ">=0.20.0",
        "applies_to": ("minimax_m2",),
        "link": "https://github.com/vllm-project/vllm/pull/43671",
        "fix": "declare capture-before ids (compat convert ckpt --to vllm with --layer-ids-convention output-of)",
        "fixed_in": None,
    },
    {
        "id": "vllm-cpu-no-spec-decode",
        "title": "vLLM's CPU model runner refuses every speculative config (\"AssertionError: spec decode is not "
                 "supported.\")",
        "engine": "vllm",
        "versions": ">=0.10.0,<0.20.0",
        "applies_to": ("*",),
        "link": "https://github.com/vllm-project/vllm/issues/28384",
        "verified": "the issue (2025-11-10) quotes this AssertionError from vllm/v1/worker/cpu_model_runner.py for eagle "
                    "and ngram on CPU; vllm#54934 says CPU speculative decoding landed in vllm#32662. Released source: "
                    "the assert is in every release 0.10.0-0.19.1 and gone from 0.20.0 (tests/engine checks the "
                    "boundary on 0.19.1 and 0.20.0)",
        "fix": "vLLM (vllm-cpu) >= 0.20.0 speculates on CPU (CPU speculative decoding landed in vllm#32662); "
               "or serve on a GPU build",
        "fixed_in": "0.20.0",
        "platform": "cpu",
    },
    # -- SGLang -----------------------------------------------------------------------------------------
    {
        "id": "sglang-deepseek-no-capture",
        "title": "DeepseekV2/V3ForCausalLM (Kimi-K2) has no set_eagle3_layers_to_capture: EAGLE3 dies with AttributeError",
        "engine": "sglang",
        "versions": "<0.5.4.post2",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/sgl-project/sglang/issues/6268",
        "fix": "SGLang >= 0.5.4.post2 (sglang#12319; first minor release 0.5.5)",
        "fixed_in": "0.5.4.post2",
        "checks": ("target-interface",),
    },
    {
        "id": "sglang-kimi-k25-no-capture",
        "title": "KimiK25ForConditionalGeneration lacks set_eagle3_layers_to_capture and get_embed_and_head",
        "engine": "sglang",
        "versions": "<0.5.10",
        "applies_to": ("kimi_k25", "kimik25"),
        "link": "https://github.com/sgl-project/sglang/pull/19689",
        "fix": "SGLang >= 0.5.10",
        "fixed_in": "0.5.10",
        "checks": ("target-interface",),
    },
    {
        "id": "sglang-deepseek-conditional-offset",
        "title": "DeepSeek/Kimi targets add +1 to drafter layer ids only when the first id is 1; other id lists are "
                 "read as capture-before (two conventions in the wild)",
        "engine": "sglang",
        "versions": ">=0.5.13",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/sgl-project/sglang/pull/25454",
        "fix": "compat doctor's layer-id check says which layers this release feeds; convert with --engine-version if they differ",
        "fixed_in": None,
    },
    {
        "id": "sglang-draft-inherits-trtllm-mla",
        "title": "a Llama (MHA) EAGLE-3 drafter inherits the MLA target's trtllm_mla attention backend and fails at startup",
        "engine": "sglang",
        "versions": ">=0.5.1",
        "applies_to": DEEPSEEK_FAMILY,
        "link": "https://github.com/sgl-project/sglang/issues/23490",
        "fix": "with --attention-backend trtllm_mla add --speculative-draft-attention-backend trtllm_mha (SGLang >= 0.5.7)",
        "fixed_in": None,
    },
    {
        "id": "sglang-eagle-flag-with-eagle3-drafter",
        "title": "--speculative-algorithm EAGLE with an EAGLE-3 drafter runs with accept length 1.00 and no warning",
        "engine": "sglang",
        "versions": ">=0.4.4",
        "applies_to": ("*",),
        "link": "https://github.com/sgl-project/sglang/pull/21272",
        "fix": "pass --speculative-algorithm EAGLE3 (the launch command below does)",
        "fixed_in": None,
    },
)


def _public(version: str) -> Version | None:
    try:
        return Version(Version(version).public)
    except (InvalidVersion, TypeError):
        return None


def applies(entry: dict, engine: str, version: str | None, model_types: list[str], platform: str | None = None) -> bool:
    """Does `entry` concern this engine release (on `platform`, when the caller knows it) and a target spelled by
    these model types / architectures?"""
    if entry["engine"] != engine or entry.get("platform", platform) != platform:
        return False
    parsed = _public(version) if version else None
    if parsed is None or not SpecifierSet(entry["versions"]).contains(parsed, prereleases=True):
        return False
    if "*" in entry["applies_to"]:
        return True
    names = [n.lower() for n in model_types if n]
    return any(key in name for key in entry["applies_to"] for name in names)


def matching(engine: str, version: str | None, model_types: list[str], platform: str | None = None) -> list[dict]:
    return [dict(entry) for entry in KNOWN_ISSUES if applies(entry, engine, version, model_types, platform)]
