"""`compat doctor`: will this target + drafter work on this engine release, and how to launch it.

Answered statically, before any GPU time, from the same facts `compat probe` reports (no second
parser of engine code):

    sources -> probes -> report ----\
    target config.json --------------+-> checks (one small function each) -> fixes -> launch command
    drafter config + tensor headers -/

Each check returns {check, title, verdict: pass|fail|warn, detail, fix, location}: `location` is
the engine source line of the probe fact it relied on. A failing check gets a fix, tried in this
order and verified, not guessed:

- `compat patch`: the release's source is patched in memory (the patch registry's own transforms,
  applied to an overlay of the tree) and probed again; the fix is offered when the check passes then;
- `compat convert ckpt`: the conversion is planned (nothing written) and the check is run again on
  the drafter the plan would write;
- otherwise a release that works, when the known-issues data knows one.

Across releases (`--releases SPEC`) the same diagnosis runs per release and each gets one verdict:
works as is / works after compat patch / needs a converted drafter / does not work.

Curated facts (what code cannot tell) live in compat/known_issues.py; checkpoint name maps and the
loader version gates come from the layouts under checkpoints/.
"""

from __future__ import annotations

import ast
import json
import operator
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat.errors import EXIT_CHECK_FAILED, EXIT_OK, EXIT_SOURCE, CompatError, RefusedError, SourceError, UsageError

PASS, FAIL, WARN = "pass", "fail", "warn"

WORKS = "works as is"
WORKS_PATCHED = "works after compat patch"
NEEDS_CONVERT = "needs a converted drafter"
WORKS_PATCHED_CONVERTED = "works after compat patch + a converted drafter"
DOES_NOT_WORK = "does not work"
SOURCE_UNAVAILABLE = "source unavailable"

DEFAULT_SPEC_TOKENS = 3  # vLLM num_speculative_tokens / SGLang --speculative-num-steps
DEFAULT_TOPK = 1  # SGLang --speculative-eagle-topk; with topk 1 draft tokens = steps + 1 (sglang-eagle3.md 1.4)

# Loader facts no probe reports yet (research sglang-eagle3.md 3.2, vllm-eagle3.md 4.2); the other
# gates are the checkpoint layouts' own constants (checkpoints/vllm.py, checkpoints/sglang.py).
SGLANG_ACCEPTS_MODEL_PREFIX = Version("0.4.9")  # LlamaForCausalLMEagle3.load_weights tries name, then model.name
VLLM_UNKNOWN_NAMES_RAISE_MLA = Version("0.25.0")  # deepseek_eagle3 skips unknown names silently before AutoWeightsLoader
# vLLM rewrites these drafter model_types to MTP in SpeculativeConfig.hf_config_override (vllm-eagle3.md 5.1);
# SGLang rewrites these drafter architectures to NextN in ModelConfig (sglang-eagle3.md 5.1).
VLLM_MTP_REWRITTEN_MODEL_TYPES = ("deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_v4")
SGLANG_NEXTN_REWRITTEN_ARCHITECTURES = ("DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM")


# ---------------------------------------------------------------------------------------------
# Inputs: the target's config and the drafter's config + tensor headers


@dataclass
class Target:
    path: Path  # the model directory (what the engine is given)
    config: dict
    model_type: str | None  # the text model's: what vLLM's whitelist tests (hf_text_config.model_type)
    top_model_type: str | None
    architecture: str | None  # architectures[0]: the class the engine instantiates
    num_layers: int | None
    vocab_size: int | None
    hidden_size: int | None

    @property
    def names(self) -> list[str]:
        return [n for n in (self.model_type, self.top_model_type, self.architecture) if n]

    @property
    def needs_remote_code(self) -> bool:
        return bool(self.config.get("auto_map"))


def read_target(path: str | Path) -> Target:
    path = Path(path).expanduser()
    config_path = path / "config.json" if path.is_dir() else path
    if not config_path.is_file():
        raise UsageError(f"target {path}: no config.json there", hint="pass the target model directory or its config.json")
    config = _read_json(config_path, "target")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}  # Kimi-K2.5 wraps its LM

    def pick(key):
        value = text.get(key) if text.get(key) is not None else config.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    architectures = config.get("architectures") or text.get("architectures") or []
    return Target(
        path=config_path.parent, config=config,
        model_type=text.get("model_type") or config.get("model_type"), top_model_type=config.get("model_type"),
        architecture=architectures[0] if architectures else None,
        num_layers=pick("num_hidden_layers"), vocab_size=pick("vocab_size"), hidden_size=pick("hidden_size"),
    )


@dataclass
class Drafter:
    path: Path
    config: dict
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # name -> (dtype, shape), from the headers only
    layout: Any = None  # the checkpoints/ layout module that recognises it
    trained_ids: list[int] | None = None  # capture-before ids it was trained on (None: unknown)
    trained_origin: str = ""
    read_error: str | None = None  # the layout could not read the config (e.g. ambiguous ids)

    @property
    def architecture(self) -> str | None:
        archs = self.config.get("architectures") or []
        return archs[0] if archs else None


def read_drafter(path: str | Path, target: Target | None) -> Drafter:
    from compat.convert import open_source

    path = Path(path).expanduser()
    if not path.is_dir():
        raise UsageError(f"drafter {path} is not a directory", hint="pass the drafter directory (config.json + weights)")
    source = open_source(path)  # config.json + safetensors headers; tensor bytes are never read
    tensors = {name: (t.dtype, tuple(t.shape)) for name, t in source.tensors.items()}
    config = {k: v for k, v in source.config.items()}
    return _recognise(Drafter(path, config, tensors), target)


def _recognise(drafter: Drafter, target: Target | None) -> Drafter:
    from compat.checkpoints import detect_layout
    from compat.checkpoints._canonical import ReadContext, TargetInfo, default_layer_ids

    layouts = detect_layout(drafter.config, set(drafter.tensors))
    drafter.layout = layouts[0] if layouts else None
    if drafter.layout is None:
        drafter.read_error = "no known drafter layout (no midlayer.* / layers.0.* tensors, no speculators config)"
        return drafter
    info = None
    if target is not None:
        info = TargetInfo(str(target.path), target.hidden_size, target.vocab_size, target.num_layers,
                          target.model_type, [a for a in [target.architecture] if a])
    try:
        canonical = drafter.layout.read_config(drafter.config, ReadContext(None, info))
    except CompatError as err:
        drafter.read_error = str(err).split("\n")[0]
        return drafter
    if canonical.layer_ids.capture_before is not None:
        drafter.trained_ids = list(canonical.layer_ids.capture_before)
        drafter.trained_origin = canonical.layer_ids.origin
    elif target is not None and target.num_layers:
        drafter.trained_ids = default_layer_ids(target.num_layers)
        drafter.trained_origin = "not declared: trained on the default (2, n//2, n-3)"
    return drafter


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RefusedError(f"{what} {path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise RefusedError(f"{what} {path}: not a JSON object")
    return data


# ---------------------------------------------------------------------------------------------
# The context every check reads


@dataclass
class Options:
    num_speculative_tokens: int = DEFAULT_SPEC_TOKENS
    topk: int = DEFAULT_TOPK
    extra_spec: dict = field(default_factory=dict)  # more --speculative-config keys the user wants (vLLM)


@dataclass
class Ctx:
    report: dict
    target: Target
    drafter: Drafter
    options: Options

    @property
    def engine(self) -> str:
        return self.report["engine"]

    @property
    def version(self) -> Version | None:
        try:
            return Version(Version(str(self.report.get("version"))).public)
        except InvalidVersion:
            return None

    def at_least(self, gate: Version) -> bool | None:
        return None if self.version is None else self.version >= gate


def result(check: str, title: str, verdict: str, detail: str, location: str | None = None, **extra) -> dict:
    return {"check": check, "title": title, "verdict": verdict, "detail": detail, "fix": None, "location": location, **extra}


# ---------------------------------------------------------------------------------------------
# Checks: one function each, in the order they are shown


def check_whitelist(ctx: Ctx) -> dict:
    title = "target model_type is on the release's EAGLE-3 whitelist"
    if unknown := _probe_failed(ctx, "target-whitelist", title, "eagle3_whitelist"):
        return unknown
    wl = ctx.report.get("eagle3_whitelist") or {}
    if ctx.engine != "vllm" or not wl.get("present"):
        why = wl.get("reason") or "no config-time model-type whitelist in this release"
        return result("target-whitelist", title, PASS, why, wl.get("location"))
    gated = wl.get("methods_gated") or ["eagle3"]
    if "eagle3" not in gated:
        return result("target-whitelist", title, PASS, f"the whitelist gates {gated}, not eagle3", wl.get("location"))
    model_type = ctx.target.model_type or ""
    hits = [entry for entry in wl.get("model_types") or [] if entry in model_type]  # substring, as vLLM tests it
    where = wl.get("list_location") or wl.get("location")
    if hits:
        return result("target-whitelist", title, PASS, f"model_type {model_type!r} matches {hits[0]!r} "
                      f"({wl.get('variable') or 'inline list'}, substring match)", where)
    return result("target-whitelist", title, FAIL,
                  f"model_type {model_type!r} is not on {wl.get('variable') or 'the list'} {wl.get('model_types')}: "
                  f"SpeculativeConfig refuses it at start-up ({wl.get('raises') or 'ValueError'}: "
                  f"\"... only supported for [...] models\")", where)


def check_interface(ctx: Ctx) -> dict:
    title = "target class can feed aux hidden states to an EAGLE-3 drafter"
    if unknown := _probe_failed(ctx, "target-interface", title, "eagle3_targets"):
        return unknown
    arch = ctx.target.architecture
    if not arch:
        return result("target-interface", title, FAIL, "the target config.json has no architectures", None)
    entry = _target_entry(ctx.report, arch)
    if ctx.engine == "vllm":
        if entry is not None and entry.get("interface"):
            return result("target-interface", title, PASS,
                          f"{arch} -> {entry['class']} implements {entry['interface']}", entry.get("location"))
        passes_config = check_whitelist(ctx)["verdict"] == PASS
        trap = (" It passes config validation, then fails at model load, after the target weights are loaded"
                if passes_config else " (The whitelist refuses it first; once a patch admits the target, it still "
                "fails at model load, after the target weights are loaded.)")
        return result("target-interface", title, FAIL,
                      f"no registered class for {arch} implements SupportsEagle3 in this release: "
                      f"\"Model does not support EAGLE3 interface\".{trap}", _interface_use_location(ctx.report))
    if entry is not None:
        return result("target-interface", title, PASS,
                      f"{arch} -> {entry['class']} has set_eagle3_layers_to_capture", entry.get("method_location") or entry.get("location"))
    return result("target-interface", title, FAIL,
                  f"{arch} has no set_eagle3_layers_to_capture in this release: EAGLE3 dies with AttributeError "
                  "when the runner asks it for aux hidden states", _interface_use_location(ctx.report))


def check_drafter_architecture(ctx: Ctx) -> dict:
    title = "drafter architecture is a registered EAGLE-3 drafter"
    if unknown := _probe_failed(ctx, "drafter-architecture", title, "eagle3_drafters"):
        return unknown
    arch = ctx.drafter.architecture
    registered = _facts(ctx.report, "eagle3_drafters")
    where = _drafter_location(ctx.report, arch) or _first_location(ctx.report, "eagle3_drafter_classes")
    if not arch:
        return result("drafter-architecture", title, FAIL, "the drafter config.json has no architectures", where)
    if ctx.engine == "vllm":
        model_type = ctx.drafter.config.get("model_type")
        if model_type in VLLM_MTP_REWRITTEN_MODEL_TYPES:
            return result("drafter-architecture", title, FAIL,
                          f"drafter model_type {model_type!r}: vLLM's hf_config_override rewrites it to deepseek_mtp "
                          "(an MTP module, not this EAGLE-3 head)", where)
        # EAGLEConfig keeps names that start or end with Eagle3 and prefixes the others (vllm-eagle3.md 5.1)
        resolved = arch if arch.startswith("Eagle3") or arch.endswith("Eagle3") else "Eagle3" + arch
        if resolved in registered:
            how = "" if resolved == arch else f" (vLLM's EAGLEConfig renames {arch} to {resolved})"
            return result("drafter-architecture", title, PASS, f"{resolved} is registered{how}",
                          _drafter_location(ctx.report, resolved) or where)
        return result("drafter-architecture", title, FAIL,
                      f"{arch} resolves to {resolved}, which this release does not register (registered: {', '.join(registered) or 'none'})", where)
    if arch in SGLANG_NEXTN_REWRITTEN_ARCHITECTURES:
        return result("drafter-architecture", title, FAIL,
                      f"{arch}: SGLang's ModelConfig rewrites a draft with this architecture to the NextN (MTP) class", where)
    if arch in registered:
        return result("drafter-architecture", title, PASS, f"{arch} is registered", where)
    return result("drafter-architecture", title, FAIL,
                  f"{arch} is not a registered EAGLE-3 drafter here (SGLang renames nothing; registered: {', '.join(registered) or 'none'})", where)


def check_drafter_tensors(ctx: Ctx) -> dict:
    """Every tensor the drafter has, under the name it has: does this release's loader take it?"""
    title = "the release's loader takes every drafter tensor under its name"
    d = ctx.drafter
    if d.layout is None:
        return result("drafter-tensors", title, FAIL, d.read_error or "unknown drafter layout", None)
    from compat.checkpoints._canonical import LLAMA_LAYER0, MLA_LAYER0, REQUIRED_TOP

    load_errors, skipped, notes = [], [], []
    canonical: set[str] = set()
    loaded: set[str] = set()
    mla = "q_a_proj" in " ".join(d.tensors) or (d.architecture or "").startswith("Eagle3Deepseek")
    # SGLang (and vLLM's MLA drafter before AutoWeightsLoader) skip names they have no parameter for
    unknown_skipped = ctx.engine == "sglang" or (mla and ctx.at_least(VLLM_UNKNOWN_NAMES_RAISE_MLA) is False)
    for name in sorted(d.tensors):
        c = d.layout.to_canonical(name)
        if c is None:
            (skipped if unknown_skipped else load_errors).append(f"{name} (no such parameter)")
            continue
        canonical.add(c)
        problem = _loader_problem(ctx, name, c)
        if problem is None:
            loaded.add(c)
        else:
            kind, text = problem
            (load_errors if kind == "error" else skipped).append(f"{name} ({text})")
    layer0 = MLA_LAYER0 if mla else LLAMA_LAYER0
    random = [n for n in [*(f"layers.0.{t}" for t in layer0), *REQUIRED_TOP] if n not in loaded]
    if "embed_tokens.weight" not in canonical:
        notes.append("no embed_tokens: the target's embedding is shared")
    if "t2d" in canonical:
        notes.append("t2d is not loaded by either engine (d2t is what they use)")
    parts = []
    if load_errors:
        parts.append("loading fails on: " + ", ".join(load_errors[:6]) + (" ..." if len(load_errors) > 6 else ""))
    if skipped:
        parts.append("skipped silently: " + ", ".join(skipped[:6]) + (" ..." if len(skipped) > 6 else ""))
    if random:
        parts.append("left at random init (missing): " + ", ".join(random[:6]) + (" ..." if len(random) > 6 else ""))
    location = _drafter_location(ctx.report, _resolved_drafter(ctx))
    if parts:
        return result("drafter-tensors", title, FAIL, "; ".join(parts), location, skipped=skipped, random=random, load_errors=load_errors)
    return result("drafter-tensors", title, PASS,
                  f"{len(d.tensors)} tensors ({d.layout.NAME} layout) all load" + (f"; {'; '.join(notes)}" if notes else ""), location)


def _loader_problem(ctx: Ctx, name: str, canonical: str) -> tuple[str, str] | None:
    from compat.checkpoints import sglang as sglang_layout
    from compat.checkpoints import vllm as vllm_layout

    prefixed = name.startswith("model.") and not name.startswith("model.lm_head")
    if ctx.engine == "vllm":
        if prefixed:
            return "error", "vLLM prefixes model. itself: model.model.* does not exist"
        if canonical in ("d2t",) and _full_vocab(ctx.drafter) and ctx.at_least(vllm_layout.FULL_VOCAB_REJECTS_D2T):
            return "error", f"draft vocab == target vocab: vLLM >= {vllm_layout.FULL_VOCAB_REJECTS_D2T} has no draft_id_to_target_id"
        layer = _layer(canonical)
        if layer and layer > 0 and ctx.at_least(vllm_layout.MULTI_LAYER) is False:
            return "skip", f"vLLM before {vllm_layout.MULTI_LAYER} builds one drafter layer"
        return None
    if prefixed and ctx.at_least(SGLANG_ACCEPTS_MODEL_PREFIX) is False:
        return "skip", f"SGLang before {SGLANG_ACCEPTS_MODEL_PREFIX} loads model.* as model.model.*"
    bare = name[len("model."):] if prefixed else name
    if bare.startswith("layers.0.") and ctx.at_least(sglang_layout.LOADS_LAYERS_0) is False:
        return "skip", f"SGLang before {sglang_layout.LOADS_LAYERS_0} loads the first layer only as midlayer.*"
    layer = _layer(canonical)
    if layer and layer > 0 and ctx.at_least(sglang_layout.MULTI_LAYER) is False:
        return "skip", f"SGLang before {sglang_layout.MULTI_LAYER} builds one drafter layer"
    return None


def check_vocab_maps(ctx: Ctx) -> dict:
    title = "vocab maps present and consistent with draft_vocab_size and the target vocab"
    cfg, tensors = ctx.drafter.config, ctx.drafter.tensors
    vocab, target_vocab = _int(cfg.get("vocab_size")), ctx.target.vocab_size
    draft_vocab = _int(cfg.get("draft_vocab_size")) or vocab
    lm_head = _find(tensors, "lm_head.weight")
    d2t, t2d = _find(tensors, "d2t"), _find(tensors, "t2d")
    problems, facts = [], []
    if target_vocab and vocab and vocab != target_vocab:
        problems.append(f"drafter vocab_size {vocab} != target vocab_size {target_vocab}: d2t offsets and the shared "
                        "embedding index another vocabulary")
    if lm_head and draft_vocab and lm_head[1][0] != draft_vocab:
        problems.append(f"lm_head.weight has {lm_head[1][0]} rows but draft_vocab_size is {draft_vocab}")
    full = target_vocab or vocab
    if draft_vocab and full and draft_vocab < full:
        if d2t is None:
            problems.append(f"draft_vocab_size {draft_vocab} < target vocab {full} but there is no d2t: the engine takes "
                            "draft ids for target ids (drafts the wrong tokens, acceptance collapses, no error)")
        elif d2t[1] != (draft_vocab,):
            problems.append(f"d2t has shape {list(d2t[1])}, expected [{draft_vocab}] (draft_vocab_size)")
        else:
            facts.append(f"d2t [{draft_vocab}] maps the draft vocab into the target's {full}")
        if t2d is not None and t2d[1] != (full,):
            problems.append(f"t2d has shape {list(t2d[1])}, expected [{full}] (the target vocab)")
    elif draft_vocab and full:
        facts.append(f"draft vocab = target vocab ({full}): no map needed")
        if d2t is not None and ctx.engine == "vllm":
            from compat.checkpoints import vllm as vllm_layout

            if ctx.at_least(vllm_layout.FULL_VOCAB_REJECTS_D2T):
                problems.append(f"d2t ships with a full draft vocab: vLLM >= {vllm_layout.FULL_VOCAB_REJECTS_D2T} "
                                "has no draft_id_to_target_id and refuses it")
    verdict = FAIL if problems else PASS
    return result("vocab-maps", title, verdict, "; ".join(problems or facts) or "no vocab facts", None)


def check_layer_ids(ctx: Ctx) -> dict:
    """Which physical hidden states this release feeds the drafter, against the ones it was trained on."""
    title = "layer ids: the hidden states this release feeds = the ones the drafter was trained on"
    if unknown := _probe_failed(ctx, "layer-ids", title, "aux_layer_ids", "eagle3_targets"):
        return unknown
    aux = ctx.report.get("aux_layer_ids") or {}
    n = ctx.target.num_layers
    if not n:
        return result("layer-ids", title, WARN, "the target config has no num_hidden_layers: cannot compute the layers fed", None)
    default = _eval_default(aux.get("default"), n)
    feeds = _fed_ids(ctx, aux, default)
    trained = ctx.drafter.trained_ids
    reads = _key_locations(ctx, aux)
    location = aux.get("default_location") or aux.get("location")
    fed_text = "; ".join(f"{who}: {ids} ({how})" for who, ids, how in feeds)
    if trained is None:
        return result("layer-ids", title, WARN,
                      f"cannot tell what the drafter was trained on ({ctx.drafter.read_error or 'no ids'}); this release feeds {fed_text}. "
                      f"Reads: {reads}", location, fed=_fed_json(feeds), trained=None, reads=reads)
    if all(ids is None for _, ids, _ in feeds):
        return result("layer-ids", title, WARN, f"nothing is fed: {fed_text}; trained on {trained}. Reads: {reads}",
                      location, fed=_fed_json(feeds), trained=trained, reads=reads)
    wrong = [(who, ids, how) for who, ids, how in feeds if ids != trained]
    extra = ""
    if ctx.engine == "sglang" and aux.get("cuda_graph_defaults_quirk") and default and trained != default:
        extra = (f"; CUDA-graph replays use the default {default} here "
                 f"({aux.get('cuda_graph_defaults_location')}), so graphs and eager passes disagree "
                 "(eager only, e.g. --disable-cuda-graph, avoids it at a speed cost)")
        wrong = wrong or [("cuda graphs", default, "defaults")]
    detail = f"trained on {trained} ({ctx.drafter.trained_origin}); fed {fed_text}{extra}. Reads: {reads}"
    if wrong:
        return result("layer-ids", title, FAIL, "silent off-by-one / wrong layers (launches, low acceptance, no error): " + detail,
                      location, fed=_fed_json(feeds), trained=trained, reads=reads)
    return result("layer-ids", title, PASS, detail, location, fed=_fed_json(feeds), trained=trained, reads=reads)


def _fed_ids(ctx: Ctx, aux: dict, default: list[int] | None) -> list[tuple[str, list[int] | None, str]]:
    cfg = ctx.drafter.config
    if ctx.engine == "vllm":
        runners = aux.get("runners") or []
        if not aux.get("read_from_config") or not runners:
            return [("every runner", default, "drafter ids are not read; the target's default")]
        out = []
        for runner in runners:
            ids, how = default, "no key it reads is set: default"
            for key in runner.get("keys") or []:
                value = _config_value(cfg, key.get("where"), key.get("key"))
                if _is_id_list(value):
                    ids = [i + int(key.get("offset") or 0) for i in value]
                    how = f"{_key_name(key)} + {key.get('offset') or 0}"
                    break
            out.append((f"runner {runner.get('runner')}", ids, how))
        return out
    # SGLang: ids come from the drafter config keys; the target class applies its offset
    if _target_entry(ctx.report, ctx.target.architecture or "") is None:
        return [("target", None, "the target class cannot capture aux hidden states")]
    if not aux.get("read_from_config"):
        return [("target", default, "drafter ids are not read; the default")]
    declared, how = None, "no key it reads is set: default"
    for key in aux.get("keys") or []:
        value = _config_value(cfg, key.get("where"), key.get("key"))
        if _is_id_list(value):
            declared, how = list(value), _key_name(key)
            break
    if declared is None:
        return [("target", default, how)]
    offset = _sglang_offset(ctx)
    if offset is None:
        return [("target", None, f"{how}: the target's offset rule is unknown")]
    shift, rule = offset(declared)
    return [("target", [i + shift for i in declared], f"{how} {rule}")]


def _sglang_offset(ctx: Ctx) -> Callable[[list[int]], tuple[int, str]] | None:
    entry = _target_entry(ctx.report, ctx.target.architecture or "")
    if entry is None:
        return None
    rule = entry.get("layer_id_offset")
    if rule == "delegates":
        rule = (entry.get("delegates_to") or {}).get("layer_id_offset")
    if isinstance(rule, int):
        return lambda ids: (rule, f"+ {rule} ({entry['class']})")
    if isinstance(rule, dict) and "offset" in rule:
        cond = str(rule.get("when") or "")
        if cond.replace(" ", "") == "layer_ids[0]==1":
            otherwise = int(rule.get("otherwise") or 0)
            return lambda ids: ((int(rule["offset"]), f"+ {rule['offset']} (first id is 1; {entry['class']})") if ids and ids[0] == 1
                                else (otherwise, f"+ {otherwise} (first id is not 1; {entry['class']})"))
    return None


def check_method(ctx: Ctx) -> dict:
    title = "method: EAGLE-3 is selected explicitly (no auto-detection trap)"
    if unknown := _probe_failed(ctx, "method", title, "speculative_config" if ctx.engine == "vllm" else "cli_flags"):
        return unknown
    if ctx.engine == "vllm":
        sc = ctx.report.get("speculative_config") or {}
        methods = sc.get("methods") or []
        if "eagle3" not in methods:
            return result("method", title, FAIL, f"SpeculativeConfig has no method 'eagle3' (methods: {methods})", sc.get("methods_location"))
        asked = ctx.options.extra_spec.get("method", "eagle3")
        if asked != "eagle3":
            return result("method", title, FAIL, f"--spec method={asked!r}: an EAGLE-3 drafter run as {asked!r} drafts "
                          "with the wrong head (low acceptance, no error)", sc.get("methods_location"))
        detail = "the launch command passes \"method\": \"eagle3\"; without it vLLM guesses from the drafter path"
        if ctx.at_least(Version("0.10.2")) is False and "eagle3-" in str(ctx.drafter.path).lower():
            detail += " and, in this release, runs a path containing \"eagle3-\" as EAGLE-1"
        return result("method", title, PASS, detail, sc.get("methods_location"))
    flag = _flag(ctx.report, "--speculative-algorithm")
    if flag is None:
        return result("method", title, FAIL, "no --speculative-algorithm flag in this release", None)
    choices = flag.get("choices")
    if isinstance(choices, list) and "EAGLE3" not in choices:
        return result("method", title, FAIL, f"--speculative-algorithm accepts {choices}, not EAGLE3", flag.get("location"))
    return result("method", title, PASS, "the launch command passes --speculative-algorithm EAGLE3 "
                  "(EAGLE with an EAGLE-3 drafter runs at accept length 1.00)", flag.get("location"))


def check_known_issues(ctx: Ctx) -> dict:
    from compat.known_issues import matching

    title = "known issues for this release and target family"
    issues = matching(ctx.engine, str(ctx.version) if ctx.version else None, ctx.target.names)
    if not issues:
        return result("known-issues", title, PASS, "none recorded", "compat/known_issues.py", issues=[])
    detail = "; ".join(f"{i['title']} ({i['link']})" for i in issues)
    return result("known-issues", title, WARN, detail, "compat/known_issues.py", issues=issues)


def check_launch(ctx: Ctx) -> dict:
    title = "launch command uses only flags and keys this release accepts"
    if unknown := _probe_failed(ctx, "launch-command", title, "speculative_config" if ctx.engine == "vllm" else "cli_flags", "cli_flags"):
        return unknown
    launch = launch_command(ctx)
    verdict = FAIL if launch["problems"] else (WARN if launch["dropped"] else PASS)
    detail = "; ".join(launch["problems"] + [f"dropped {k!r}: {why}" for k, why in launch["dropped"].items()]) or (
        "validated against " + ("SpeculativeConfig's fields" if ctx.engine == "vllm" else "the release's CLI flags"))
    return result("launch-command", title, verdict, detail, launch.get("location"), launch=launch)


def _probe_failed(ctx: Ctx, check: str, title: str, *keys: str) -> dict | None:
    """A WARN when a probe this check needs failed on this release: the doctor cannot tell, so it does not guess."""
    for key in keys:
        value = ctx.report.get(key)
        if isinstance(value, dict) and value.get("error"):
            return result(check, title, WARN, f"cannot tell: probe {key} failed on this release ({value['error']})", None)
    return None


CHECKS: list[Callable[[Ctx], dict]] = [
    check_whitelist, check_interface, check_drafter_architecture, check_drafter_tensors, check_vocab_maps,
    check_layer_ids, check_method, check_known_issues, check_launch,
]
CHECK_BY_NAME = {
    "target-whitelist": check_whitelist, "target-interface": check_interface,
    "drafter-architecture": check_drafter_architecture, "drafter-tensors": check_drafter_tensors,
    "vocab-maps": check_vocab_maps, "layer-ids": check_layer_ids, "method": check_method,
    "known-issues": check_known_issues, "launch-command": check_launch,
}
# the checks a converted drafter can change (the others read only the engine and the target)
DRAFTER_CHECKS = {"drafter-architecture", "drafter-tensors", "vocab-maps", "layer-ids"}


# ---------------------------------------------------------------------------------------------
# The launch command


def launch_command(ctx: Ctx) -> dict:
    if ctx.engine == "vllm":
        return _vllm_launch(ctx)
    return _sglang_launch(ctx)


def _vllm_launch(ctx: Ctx) -> dict:
    sc = ctx.report.get("speculative_config") or {}
    fields = {f["name"] for f in sc.get("fields") or []}
    wanted = {"method": "eagle3", "model": str(ctx.drafter.path), "num_speculative_tokens": ctx.options.num_speculative_tokens,
              **ctx.options.extra_spec}
    problems, dropped, spec = [], {}, {}
    for key, value in wanted.items():
        if key in fields:
            spec[key] = value
        elif sc.get("rejects_unknown_keys"):
            dropped[key] = "this release's SpeculativeConfig has no such field and rejects unknown keys"
        else:
            dropped[key] = "this release's SpeculativeConfig has no such field (it would be ignored)"
    for required in ("method", "model", "num_speculative_tokens"):
        if required not in spec:
            problems.append(f"SpeculativeConfig has no {required!r} field")
    flag = _flag(ctx.report, "--speculative-config")
    if flag is None:
        problems.append("no --speculative-config flag in this release")
    spec_json = json.dumps(spec, separators=(",", ":"))
    model = str(ctx.target.path)
    extra = ["--trust-remote-code"] if ctx.target.needs_remote_code else []
    args = [*extra, "--speculative-config", spec_json]
    return {
        "engine": "vllm",
        "speculative_config": spec,
        "argv": ["vllm", "serve", model, *args],
        "module_argv": ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", model, *args],
        "problems": problems, "dropped": dropped,
        "location": (flag or {}).get("location") or sc.get("location"),
    }


def _sglang_launch(ctx: Ctx) -> dict:
    steps, topk = ctx.options.num_speculative_tokens, ctx.options.topk
    draft_tokens = steps + 1 if topk == 1 else steps * topk
    wanted = [("--speculative-algorithm", "EAGLE3"), ("--speculative-draft-model-path", str(ctx.drafter.path)),
              ("--speculative-num-steps", str(steps)), ("--speculative-eagle-topk", str(topk)),
              ("--speculative-num-draft-tokens", str(draft_tokens))]
    problems, args = [], []
    for name, value in wanted:
        flag = _flag(ctx.report, name)
        if flag is None:
            problems.append(f"no {name} flag in this release")
        args += [name, value]
    extra = ["--trust-remote-code"] if ctx.target.needs_remote_code else []
    argv = ["python", "-m", "sglang.launch_server", "--model-path", str(ctx.target.path), *extra, *args]
    flag = _flag(ctx.report, "--speculative-algorithm") or {}
    return {"engine": "sglang", "argv": argv, "module_argv": argv, "problems": problems, "dropped": {},
            "location": flag.get("location")}


# ---------------------------------------------------------------------------------------------
# Running the checks, then finding verified fixes


def run_checks(ctx: Ctx) -> list[dict]:
    return [check(ctx) for check in CHECKS]


def diagnose(tree, target: Target, drafter: Drafter, options: Options | None = None, *, try_fixes: bool = True) -> dict:
    """The whole answer for one release: checks, fixes, verdict, launch command."""
    from compat.report import build_report

    options = options or Options()
    report = build_report(tree)
    ctx = Ctx(report, target, drafter, options)
    checks = run_checks(ctx)
    if try_fixes:
        _fix_with_patches(tree, ctx, checks)
        _fix_with_conversion(ctx, checks)
        _fix_with_release(ctx, checks)
    launch = launch_command(ctx)
    return {
        "engine": report["engine"], "version": report.get("version"), "source": report.get("source"),
        "target": {"path": str(target.path), "model_type": target.model_type, "architecture": target.architecture,
                   "num_hidden_layers": target.num_layers, "vocab_size": target.vocab_size},
        "drafter": {"path": str(drafter.path), "architecture": drafter.architecture,
                    "layout": drafter.layout.NAME if drafter.layout else None, "tensors": len(drafter.tensors),
                    "trained_layer_ids": drafter.trained_ids},
        "checks": checks,
        "verdict": classify(checks),
        "launch": {"argv": launch["argv"], "module_argv": launch["module_argv"], "command": shlex.join(launch["argv"]),
                   "speculative_config": launch.get("speculative_config")},
        "probe_errors": report.get("probe_errors") or [],
    }


def _failing(checks: list[dict]) -> list[dict]:
    return [c for c in checks if c["verdict"] == FAIL and c["fix"] is None]


def _fix_with_patches(tree, ctx: Ctx, checks: list[dict]) -> None:
    """Apply the release's patches in memory, one after another, and re-run the failing checks."""
    from compat.report import build_report

    pending = {c["check"]: c for c in _failing(checks) if c["check"] not in DRAFTER_CHECKS or c["check"] == "layer-ids"}
    if not pending:
        return
    patches = _applicable_patches(ctx.engine, tree.version)
    if not patches:
        return
    overlay = _overlay(tree)
    applied: list[str] = []
    options_for = {}
    for patch in patches:
        options = dict(patch.options)
        if "model_types" in options and ctx.target.model_type:
            types = tuple(options["model_types"])
            if ctx.target.model_type not in types:
                options["model_types"] = (*types, ctx.target.model_type)
                options_for[patch.id] = ctx.target.model_type
        if not _apply_in_memory(patch, overlay, options):
            continue
        applied.append(patch.id)
        patched = Ctx(build_report(overlay), ctx.target, ctx.drafter, ctx.options)
        for name, check in list(pending.items()):
            again = _rerun(name, patched)
            if again["verdict"] == PASS:
                ids = _with_requirements(patch, patches, applied)
                model_types = [options_for[i] for i in ids if i in options_for]
                check["fix"] = {"kind": "patch", "patch_ids": ids, "command": _patch_command(ctx, ids, model_types),
                                "verified": f"re-probed with the patches applied in memory: {again['detail']}"}
                del pending[name]
        if not pending:
            return


def _rerun(name: str, ctx: Ctx) -> dict:
    return CHECK_BY_NAME[name](ctx)


def _with_requirements(patch, patches, applied: list[str]) -> list[str]:
    by_id = {p.id: p for p in patches}
    ids, todo = [], [patch.id]
    while todo:
        pid = todo.pop()
        if pid in ids or pid not in applied:
            continue
        ids.append(pid)
        todo.extend(by_id[pid].requires)
    return sorted(ids, key=applied.index)


def _applicable_patches(engine: str, version: str | None) -> list:
    try:
        from compat.patches import all_patches
    except ImportError:
        return []
    try:
        return [p for p in all_patches(engine) if p.applies_to(version)]
    except (ImportError, RuntimeError):
        return []


def _overlay(tree):
    """A second view of the same files in which patched files exist only in memory."""
    from compat.tree import EngineTree

    class PatchedInMemory(EngineTree):
        def replace(self, relpath: str, text: str) -> None:
            self._bytes[relpath] = text.encode()
            self._ast.pop(relpath, None)

    return PatchedInMemory(tree.engine, tree.root, tree.version, tree.source)


def _apply_in_memory(patch, overlay, options: dict) -> bool:
    """Transform the patch's files into the overlay's cache; False when it changes nothing or refuses."""
    try:
        files = patch.find_files(overlay)
        changed = False
        for role, relpath in files.items():
            source = overlay.text(relpath)
            if patch.has_fix(role, source, options):
                continue
            new = patch.transform(role, source, options)
            if new != source:
                overlay.replace(relpath, new)
                changed = True
        return changed
    except Exception:  # noqa: BLE001 - a patch that cannot apply to this release is not offered as its fix
        return False


def _patch_command(ctx: Ctx, ids: list[str], model_types: list[str]) -> str:
    src = ctx.report.get("source") or {}
    if src.get("kind") == "path":
        where = ["--path", src.get("location", "DIR")]
    elif src.get("kind") == "installed" and src.get("python"):
        where = ["--engine", ctx.engine, "--python", src["python"]]
    elif src.get("kind") == "installed":
        where = ["--engine", ctx.engine]
    else:  # a released tree is a shared cache: patch the venv that runs this release
        where = ["--engine", ctx.engine, "--python", f"<python of the venv with {ctx.engine} {ctx.report.get('version')}>"]
    parts = ["compat", "patch", *where]
    for pid in ids:
        parts += ["--select", pid]
    for mt in model_types:
        parts += ["--model-type", mt]
    return " ".join(shlex.quote(p) if not p.startswith("<") else p for p in parts)


def _fix_with_conversion(ctx: Ctx, checks: list[dict]) -> None:
    """Plan `compat convert ckpt --to <engine> --engine-version X` (nothing written) and re-check the result."""
    pending = [c for c in _failing(checks) if c["check"] in DRAFTER_CHECKS]
    if not pending or ctx.version is None:
        return
    attempts = {None: _converted_drafter(ctx)}
    if attempts[None][0] is None and "--layer-ids-convention" in (attempts[None][1] or ""):
        from compat.checkpoints._canonical import CONVENTIONS

        # the drafter does not say how to read its ids; a fix that holds under either reading is still a fix
        attempts = {conv: _converted_drafter(ctx, conv) for conv in CONVENTIONS}
    if any(drafter is None for drafter, _ in attempts.values()):
        error = next(err for drafter, err in attempts.values() if drafter is None)
        for check in pending:
            check["convert_refused"] = error
        return
    for check in pending:
        agains = [_rerun(check["check"], Ctx(ctx.report, ctx.target, drafter, ctx.options)) for drafter, _ in attempts.values()]
        if all(again["verdict"] == PASS for again in agains):
            conventions = [c for c in attempts if c]
            check["fix"] = {"kind": "convert", "command": _convert_command(ctx, "|".join(conventions) or None),
                            "verified": f"checked on the drafter the conversion would write: {agains[0]['detail']}"}
            if conventions:
                check["fix"]["note"] = ("the drafter's config does not say which convention its layer ids use: "
                                        "pass the one it was trained with")



def _converted_drafter(ctx: Ctx, convention: str | None = None) -> tuple[Drafter | None, str | None]:
    import tempfile

    from compat.convert import Options as ConvertOptions
    from compat.convert import make_plan

    target_config = ctx.target.path / "config.json"
    with tempfile.TemporaryDirectory(prefix="compat-doctor-") as tmp:
        dst = Path(tmp) / "converted"  # never created: make_plan only plans
        try:
            plan = make_plan(ConvertOptions(src=ctx.drafter.path, dst=dst, to=ctx.engine, engine_version=str(ctx.version),
                                            target=target_config if target_config.is_file() else None,
                                            layer_ids_convention=convention))
        except CompatError as err:
            return None, str(err).replace("\n", " ")
    tensors = {t.dest_name: (t.out_dtype, tuple(t.shape)) for t in plan.tensors if t.dest_name}
    converted = Drafter(Path(_converted_path(ctx)), dict(plan.config_after), tensors)
    return _recognise(converted, ctx.target), None


def _converted_path(ctx: Ctx) -> str:
    return str(ctx.drafter.path).rstrip("/") + f"-{ctx.engine}-{ctx.version}"


def _convert_command(ctx: Ctx, convention: str | None = None) -> str:
    parts = ["compat", "convert", "ckpt", str(ctx.drafter.path), _converted_path(ctx), "--to", ctx.engine,
             "--engine-version", str(ctx.version), "--target", str(ctx.target.path)]
    text = shlex.join(parts)
    return text + (f" --layer-ids-convention {convention}" if convention else "")


def _fix_with_release(ctx: Ctx, checks: list[dict]) -> None:
    """No patch or conversion helps: name the release the known issues say fixes it, if any."""
    from compat.known_issues import matching

    issues = [i for i in matching(ctx.engine, str(ctx.version) if ctx.version else None, ctx.target.names) if i.get("fixed_in")]
    for check in _failing(checks):
        if check["check"] in ("target-whitelist", "target-interface") and issues:
            best = max(issues, key=lambda i: Version(i["fixed_in"]))
            check["fix"] = {"kind": "release", "releases": f">={best['fixed_in']}",
                            "text": f"{ctx.engine} >= {best['fixed_in']} ({best['link']})"}
        else:
            hint = check.get("convert_refused")
            check["fix"] = {"kind": "none", "text": ("no compat patch or conversion fixes this here"
                                                    + (f" (conversion refused: {hint})" if hint else "")
                                                    + f"; compare releases: compat doctor ... --engine {ctx.engine} --releases '>=X'")}


def classify(checks: list[dict]) -> str:
    kinds = {(c["fix"] or {}).get("kind") for c in checks if c["verdict"] == FAIL}
    if not kinds:
        return WORKS
    if kinds - {"patch", "convert"}:
        return DOES_NOT_WORK
    if kinds == {"patch"}:
        return WORKS_PATCHED
    if kinds == {"convert"}:
        return NEEDS_CONVERT
    return WORKS_PATCHED_CONVERTED


# ---------------------------------------------------------------------------------------------
# Across releases


def diagnose_range(engine: str, specifier: str, target: Target, drafter: Drafter, options: Options | None = None, *,
                   versions: list[str] | None = None, open_release: Callable[[str], Any] | None = None,
                   cache_dir=None, offline: bool = False, progress: bool = False) -> dict:
    """One diagnosis per release in `specifier` (from the package index, or `versions`)."""
    from compat.sources.released import fetch_release, list_releases

    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        raise UsageError(f"--releases {specifier!r} is not a version specifier", hint="e.g. --releases '>=0.10,<0.34'") from None
    if versions is None:
        versions = list_releases(engine, cache_dir=cache_dir, offline=offline)
    chosen = sorted((v for v in versions if spec.contains(Version(v), prereleases=False)), key=Version)
    if not chosen:
        raise SourceError(f"no {engine} release matches {specifier!r}", hint=f"known: {', '.join(versions[-8:])}")
    open_release = open_release or (lambda v: fetch_release(engine, f"=={v}", cache_dir=cache_dir, offline=offline, progress=False))
    rows = []
    for version in _progress(chosen, f"{engine} releases", enabled=progress):
        try:
            tree = open_release(version)
        except SourceError as err:
            rows.append({"version": version, "verdict": SOURCE_UNAVAILABLE, "error": str(err).split("\n")[0], "fixes": []})
            continue
        diagnosis = diagnose(tree, target, drafter, options)
        rows.append({"version": version, "verdict": diagnosis["verdict"], "fixes": _fix_summary(diagnosis["checks"]),
                     "failing": [c["check"] for c in diagnosis["checks"] if c["verdict"] == FAIL],
                     "launch": diagnosis["launch"]["command"], "diagnosis": diagnosis})
    return {"engine": engine, "releases": specifier, "target": str(target.path), "drafter": str(drafter.path), "rows": rows}


def _progress(items: list[str], what: str, *, enabled: bool):
    if not enabled:
        yield from items
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"doctor: {what}", total=len(items))
        for item in items:
            bar.update(task, description=f"doctor: {what} ({item})")
            yield item
            bar.advance(task)


def _fix_summary(checks: list[dict]) -> list[str]:
    out = []
    for c in checks:
        fix = c["fix"] if c["verdict"] == FAIL else None
        if not fix:
            continue
        text = {"patch": lambda f: "patch " + ",".join(f["patch_ids"]), "convert": lambda f: "convert",
                "release": lambda f: f"use {f['releases']}", "none": lambda f: f"{c['check']}: no fix"}[fix["kind"]](fix)
        if text not in out:
            out.append(text)
    return out


# ---------------------------------------------------------------------------------------------
# Small helpers over the report


def _facts(report: dict, key: str) -> list:
    """A list-valued probe fact; [] when the probe found nothing or failed (it reports a dict then)."""
    value = report.get(key)
    return value if isinstance(value, list) else []


def _target_entry(report: dict, arch: str) -> dict | None:
    for entry in _facts(report, "eagle3_targets"):
        if entry.get("role") in ("drafter", "unregistered") or entry.get("is_drafter"):
            continue
        if arch in (entry.get("architectures") or []):
            return entry
    return None


def _interface_use_location(report: dict) -> str | None:
    """Where the release asks the target for aux hidden states (the call that fails without the interface)."""
    checks = (report.get("eagle3_whitelist") or {}).get("load_time_checks") or []
    if checks:
        return checks[0].get("location")
    aux = report.get("aux_layer_ids") or {}
    calls = [c for c in aux.get("capture_calls") or [] if c.get("with_ids")] or aux.get("capture_calls") or []
    runners = aux.get("runners") or []
    return ((calls[0].get("location") if calls else None) or aux.get("default_used_at")
            or (runners[0].get("location") if runners else None))


def _first_location(report: dict, key: str) -> str | None:
    value = report.get(key)
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return value[0].get("location") or value[0].get("registered")
    if isinstance(value, dict):
        return value.get("location")
    return None


def _drafter_location(report: dict, arch: str | None) -> str | None:
    for entry in _facts(report, "eagle3_drafter_classes"):
        if entry.get("architecture") == arch:
            return entry.get("location") or entry.get("registered")
    return None


def _resolved_drafter(ctx: Ctx) -> str | None:
    arch = ctx.drafter.architecture
    if ctx.engine == "vllm" and arch and not (arch.startswith("Eagle3") or arch.endswith("Eagle3")):
        return "Eagle3" + arch
    return arch


def _flag(report: dict, name: str) -> dict | None:
    for flag in _facts(report, "cli_flags"):
        if flag.get("name") == name or name in (flag.get("aliases") or []):
            return flag
    return None


def _config_value(cfg: dict, where: str | None, key: str | None):
    if not key:
        return None
    if where in (None, "top-level"):
        return cfg.get(key)
    nested = cfg.get(where)
    return nested.get(key) if isinstance(nested, dict) else None


def _key_name(key: dict) -> str:
    where = key.get("where")
    return key.get("key") if where in (None, "top-level") else f"{where}.{key.get('key')}"


def _key_locations(ctx: Ctx, aux: dict) -> str:
    if not aux.get("read_from_config"):
        return "no drafter key (ids are never read from the drafter config)"
    if ctx.engine == "vllm":
        parts = []
        for runner in aux.get("runners") or []:
            keys = ", ".join(f"{_key_name(k)} (+{k.get('offset') or 0}, {k.get('location')})" for k in runner.get("keys") or [])
            parts.append(f"runner {runner.get('runner')}: {keys or 'none'}")
        return "; ".join(parts) or "none"
    return ", ".join(f"{_key_name(k)} ({k.get('location')})" for k in aux.get("keys") or []) or "none"


def _fed_json(feeds) -> list[dict]:
    return [{"by": who, "ids": ids, "how": how} for who, ids, how in feeds]


def _is_id_list(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.FloorDiv: operator.floordiv, ast.Mult: operator.mul}


def _eval_default(expr: str | None, n: int) -> list[int] | None:
    """The probe's default ids, e.g. "(2, n // 2, n - 3)", evaluated for n layers (ints, n, + - * // only)."""
    if not expr:
        return None
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None

    def value(x):
        if isinstance(x, ast.Constant) and isinstance(x.value, int):
            return x.value
        if isinstance(x, ast.Name) and x.id in ("n", "N", "num_layers", "num_hidden_layers"):
            return n
        if isinstance(x, ast.BinOp) and type(x.op) in _OPS:
            return _OPS[type(x.op)](value(x.left), value(x.right))
        raise ValueError(ast.dump(x))

    try:
        return [value(e) for e in node.elts] if isinstance(node, (ast.Tuple, ast.List)) else None
    except ValueError:
        return None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _find(tensors: dict, canonical: str):
    for name, info in tensors.items():
        bare = name[len("model."):] if name.startswith("model.") and not name.startswith("model.lm_head") else name
        if bare == canonical or bare.endswith("." + canonical) and canonical in ("d2t", "t2d"):
            return name, info[1]
    return None


def _full_vocab(drafter: Drafter) -> bool:
    vocab, draft = _int(drafter.config.get("vocab_size")), _int(drafter.config.get("draft_vocab_size"))
    return vocab is not None and (draft is None or draft == vocab)


def _layer(canonical: str) -> int | None:
    from compat.checkpoints._canonical import layer_index

    return layer_index(canonical)
