"""Why an error happened and what fixes it: the catalog `compat explain` reads evidence with.

A cause is recognised by what the release's own code says (the site's template, its file, the exception a
traceback names), never by one release's line numbers. Its fix comes from the catalog doctor uses: a patch
of the patches registry whose version gate covers the release (compat/patches), a release the curated known
issues name (compat/known_issues.py), the conversion to the release's layout (`compat convert ckpt`), or a
flag. When no entry fits, the finding says where the engine raised it and that compat has no cause on file:
nothing is made up. Failures that have nothing to do with speculative decoding (out of memory, an exception
in the user's own code) are said to be so.
"""

from __future__ import annotations

import difflib
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from compat.explain.analysis import KERNELS_NOT_LOADED, OUT_OF_MEMORY, Event
from compat.explain.tracebacks import Traceback
from compat.fix import AskFix, ConvertFix, FlagFix, Fix, KeyFix, NoFix, PatchFix, ReleaseFix
from compat.release_ref import ReleaseRef

UNRELATED, ERROR, WARNING = "unrelated", "error", "warning"
_SHAPE = re.compile(r"shape '\[[^\]]*\]' is invalid|size mismatch|mat1 and mat2 shapes|Attempted to load weight|"
                    r"must match the size of tensor|cannot be multiplied|Tried to load weights of size")
# pydantic's words for a key a dataclass does not have (v2 dataclasses: the second; models: the first)
_PYDANTIC_EXTRA = ("Extra inputs are not permitted", "Unexpected keyword argument")
DRAFTER_WORDS = ("eagle", "draft", "spec_decode", "speculat", "medusa", "mtp")


@dataclass(frozen=True)
class Release:
    """What a fix needs to know about the release and the run."""

    engine: str
    version: str | None
    report: dict  # the release's probe report (speculative config fields, ...)
    architectures: tuple[str, ...] = ()  # what the log says vLLM resolved (target first)
    ref: ReleaseRef | None = None  # the release the user named: every command a fix prints names it so
    later: Callable[[], tuple[str, ...]] | None = None  # the releases after this one (ascending), asked when needed
    index_of: Callable[[str], Any] | None = None  # version -> that release's SiteIndex (None: cannot be had)
    tree: Any = None  # the release's source (an EngineTree): the lines around a site, read when a cause needs them
    tree_of: Callable[[str], Any] | None = None  # version -> that release's source (None: cannot be had)


@dataclass(frozen=True)
class Cause:
    id: str
    kind: str
    applies: Callable[[Event, Release], bool]
    cause: Callable[[Event, Release], str]
    fix: Callable[[Event, Release], Fix | None]


def _template(event: Event) -> str:
    return event.site.template.lower() if event.site is not None else ""


def event_text(event: Event) -> str:
    """The event's message with the lines after it that are still its message (pydantic lists the bad key there)."""
    tb = event.traceback
    return event.text + ("\n" + "\n".join(tb.more) if tb is not None and tb.more else "")


def in_drafter(event: Event, release: Release) -> bool:
    """The traceback passes through the drafter's code (its model, the proposer, the speculative config)."""
    tb = event.traceback
    if tb is None:
        return False
    return any(any(w in (rel + " " + f.function).lower() for w in DRAFTER_WORDS)
               for f, rel in tb.engine_frames(release.engine))


# -- fixes: the same catalog doctor draws from -------------------------------------------------------------------
def _ref(release: Release) -> ReleaseRef:
    return release.ref or ReleaseRef.released(release.engine, release.version)


def patch_fix(release: Release, ids: tuple[str, ...], why: str, model_type: str | None = None) -> PatchFix | None:
    """The patches of `ids` whose version gate covers the release, as the `compat patch` command to run; with
    the target's `model_type`, each patch's own `options_for_target` adds what this target needs (a whitelist
    patch adds a type its defaults lack), as doctor's fixes do."""
    from compat.patches import all_patches

    covering = [p for p in all_patches(release.engine) if p.id in ids and p.applies_to(release.version)]
    if not covering:
        return None
    settings = {p.id: p.options_for_target(model_type, None) for p in covering} if model_type else {}
    return PatchFix.for_error(_ref(release), [p.id for p in covering], settings, why)


def release_fix(release: Release, issue_ids: tuple[str, ...], platform: str | None = None) -> ReleaseFix | None:
    """The first release the curated known issues say fixes it, when the release is affected (on `platform`, for
    an issue of one platform)."""
    from compat.known_issues import KNOWN_ISSUES, matching

    affected = ({i["id"] for i in matching(release.engine, release.version, ["*"], platform)}
                if release.version else set())
    for issue in KNOWN_ISSUES:
        if issue["id"] in issue_ids and issue.get("fixed_in") and (not release.version or issue["id"] in affected):
            return ReleaseFix(f">={issue['fixed_in']}", f"move to {release.engine} >= {issue['fixed_in']} ({issue['link']})")
    return None


def convert_fix(release: Release, why: str) -> ConvertFix:
    command = shlex.join(["compat", "convert", "ckpt", "DRAFTER", "DRAFTER-converted", "--to", release.engine,
                          *_ref(release).args("convert"), "--target", "TARGET"])
    return ConvertFix(command, text=f"{why}: {command} (DRAFTER: your drafter's directory, TARGET: the target's; then "
                      "serve the converted directory)")


def doctor_fix(release: Release, text: str) -> NoFix:
    command = shlex.join(["compat", "doctor", "TARGET", "DRAFTER", *_ref(release).args("doctor")])
    return NoFix(f"{text}; {command} checks the pair against this release", command)


def _first(*fixes: Fix | None) -> Fix | None:
    return next((f for f in fixes if f is not None), None)


# -- the catalog -------------------------------------------------------------------------------------------------
def _whitelist(event: Event, release: Release) -> bool:
    t = _template(event)
    return "only supported for" in t and ("eagle" in t or "model" in t) and event.site is not None


def _whitelist_fix(event: Event, release: Release) -> Fix | None:
    found = re.search(r"model_type='?([\w.-]+)", event_text(event))
    model_type = found.group(1) if found else None
    why = f"add {model_type or 'the target model_type'} to the whitelist"
    return _first(patch_fix(release, ("vllm-eagle3-whitelist",), why, model_type),
                  release_fix(release, ("vllm-eagle3-whitelist-kimi",)),
                  doctor_fix(release, "no compat patch covers this release's whitelist"))


def _interface(event: Event, release: Release) -> bool:
    t = _template(event)
    return ("eagle3 interface" in t or "set_eagle3_layers_to_capture" in event.text) and (
        event.site is not None or "set_eagle3_layers_to_capture" in event.text)


# the engines' messages of a target without the interface (vLLM's runner; SGLang's AttributeError): the patches that
# declare they fix one of them (FIXES_ERRORS) give a target class the interface
INTERFACE_ERRORS = ("does not support EAGLE3 interface", "set_eagle3_layers_to_capture")
INTERFACE_ISSUES = ("vllm-deepseek-no-eagle3-interface", "vllm-kimi-k25-wrapper", "sglang-deepseek-no-capture")


def _target(release: Release) -> str | None:
    drafters = ("eagle", "medusa", "mtp", "draft")
    return next((a for a in release.architectures if not any(w in a.lower() for w in drafters)), None)


def _interface_cause(event: Event, release: Release) -> str:
    target = _target(release)
    who = f"the target's model class ({target}, as the log says vLLM resolved it)" if target else "the target's model class"
    return (f"{who} does not implement the EAGLE-3 aux-hidden-state interface (SupportsEagle3 / "
            f"set_eagle3_layers_to_capture) in {release.engine} {release.version or ''}".rstrip()
            + ": the drafter cannot be fed its hidden states")


def _interface_patches(release: Release) -> tuple[str, ...]:
    from compat.patches import all_patches

    return tuple(p.id for p in all_patches(release.engine)
                 if any(said in message for message in p.fixes_errors for said in INTERFACE_ERRORS))


def _interface_fix(event: Event, release: Release) -> Fix | None:
    from compat.patches import all_patches

    target = _target(release)
    ids = _interface_patches(release)
    if target:  # only a patch that declares it serves this target class (TARGET_CLASSES)
        ids = tuple(p.id for p in all_patches(release.engine) if p.id in ids and p.serves(target))
    fix = patch_fix(release, ids, f"give {target} the interface") if ids else None
    if target is None:  # which patch depends on the target class, which the text does not name
        covering = [p for p in all_patches(release.engine) if p.id in ids and p.applies_to(release.version)]
        options = "; ".join(f"{p.description} ({p.id})" for p in covering) or "none covers this release"
        return AskFix("the text does not name the target class (vLLM logs `Resolved architecture: ...`): compat's "
                      f"patches for {release.engine} {release.version or ''}: {options}; "
                      + doctor_fix(release, "for another target").text, patch_ids=tuple(p.id for p in covering))
    return _first(fix, release_fix(release, INTERFACE_ISSUES) if target and "deepseek" in target.lower() else None,
                  doctor_fix(release, f"no compat patch gives {target or 'this target'} the interface on this release"))


def _target_layout(event: Event, release: Release) -> bool:
    return "target model does not have" in _template(event)


def _target_layout_cause(event: Event, release: Release) -> str:
    target = _target(release)
    return (f"the target's model class{f' ({target})' if target else ''} is not one {release.engine} "
            f"{release.version or ''} can hang an EAGLE-3 drafter on: the proposer looks for the attributes of the "
            "targets it supports (their decoder as `.model`, its embeddings) and this class has none")


def _unknown_key(event: Event, release: Release) -> bool:
    text = event_text(event)
    return any(words in text for words in _PYDANTIC_EXTRA) and "SpeculativeConfig" in text


def _unknown_key_name(event: Event) -> str | None:
    lines = event_text(event).splitlines()
    for i, line in enumerate(lines):
        if any(words in line for words in _PYDANTIC_EXTRA) and i > 0:
            return lines[i - 1].strip().split()[0] if lines[i - 1].strip() else None
    return None


def _unknown_key_fix(event: Event, release: Release) -> KeyFix:
    key = _unknown_key_name(event)
    fields = [f["name"] for f in (release.report.get("speculative_config") or {}).get("fields") or []]
    close = difflib.get_close_matches(key or "", fields, n=1)
    said = f"remove {key!r} from --speculative-config" if key else "remove the unknown key from --speculative-config"
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    text = f"{said}{hint}; {release.engine} {release.version or ''} accepts: " + ", ".join(fields) if fields else said + hint
    return KeyFix(text, key, close[0] if close else None)


def _shapes(event: Event, release: Release) -> bool:
    """A shape the drafter's tensors do not have: said so by the message, or an assert of a weight loader (which
    may have no message: `assert loaded_weight.shape[output_dim] == self.org_vocab_size`) on the drafter's load."""
    loader_assert = event.site is not None and event.site.kind == "assert" and "weight_loader" in (event.site.function or "")
    return (bool(_SHAPE.search(event_text(event))) or loader_assert) and (in_drafter(event, release) or "fc" in event_text(event))


def _no_weights(event: Event, release: Release) -> bool:
    return "cannot find any model weights" in _template(event) or "no model weights" in _template(event)


def _block_size(event: Event, release: Release) -> bool:
    return "no common block size" in _template(event)


def _cpu_runner(event: Event, release: Release) -> bool:
    """The CPU model runner's own refusal of speculation (vLLM < 0.20: `assert self.speculative_config is None`)."""
    site = event.site
    return (site is not None and site.file.endswith("cpu_model_runner.py")
            and any(word in site.template.lower() for word in ("spec decode", "specul")))


def _cpu_runner_cause(event: Event, release: Release) -> str:
    return (f"{release.engine} {release.version or ''} runs on CPU here, and its CPU model runner refuses every "
            "speculative config: speculative decoding does not run on this release's CPU backend, whatever the "
            "drafter")


def _cpu_runner_fix(event: Event, release: Release) -> Fix | None:
    return _first(release_fix(release, ("vllm-cpu-no-spec-decode",), platform="cpu"),
                  NoFix("no compat patch makes this release's CPU backend speculate: serve without "
                        "--speculative-config on CPU, or on a GPU build"))


def _oom(event: Event, release: Release) -> bool:
    return bool(OUT_OF_MEMORY.search(event.text))


def _kernels(event: Event, release: Release) -> bool:
    return event.site is None and bool(KERNELS_NOT_LOADED.search(event.text))


def _kernels_fix(event: Event, release: Release) -> NoFix:
    command = shlex.join(["compat", "env", *_ref(release).args("env")])
    return NoFix(f"install the torch this {release.engine} release was built against: {command} sets the engine's "
                 "own torch requirement against the torch installed beside it", command)


def _user_code(event: Event, release: Release) -> bool:
    tb = event.traceback
    if event.user_frame is not None:
        return True
    return tb is not None and bool(tb.frames) and not tb.engine_frames(release.engine) and event.site is None


def _where_in_user_code(tb: Traceback | None, frame=None) -> str:
    if frame is None and (tb is None or not tb.frames):
        return "no traceback"
    last = frame or tb.frames[-1]  # type: ignore[union-attr]
    code = f" (`{last.code}`)" if last.code else ""
    return f"{last.path}:{last.line} in {last.function}{code}"


def _user_code_cause(event: Event, release: Release) -> str:
    """Raised by code outside the engine: the user's line, and what the engine had to do with it."""
    tb = event.traceback
    where = _where_in_user_code(tb, event.user_frame)
    tree = release.tree
    engine_frames = [(f, rel) for f, rel in (tb.engine_frames(release.engine) if tb is not None else [])
                     if f is not event.user_frame and (tree is None or tree.exists(rel))]
    if not engine_frames:
        return (f"{event.exception} raised in code outside {release.engine} ({where}): no frame of the traceback is in "
                f"{release.engine}, so this is not a speculative-decoding failure")
    frame, relpath = engine_frames[-1]
    return (f"{event.exception} raised by your own code, not by {release.engine}: at {where}, a file outside "
            f"{release.engine}'s package. {release.engine}'s frames are above it in the traceback ({relpath}:"
            f"{frame.line} in {frame.function} the nearest), but the line that raised is yours")


CATALOG: tuple[Cause, ...] = (
    Cause("out-of-memory", UNRELATED, _oom,
          lambda e, r: "the process ran out of memory: not a speculative-decoding failure (a drafter adds its weights and "
                       "KV cache, so lower gpu_memory_utilization / max_model_len / max_num_seqs, or serve on more memory)",
          lambda e, r: None),
    Cause("engine-kernels-not-loaded", UNRELATED, _kernels,
          lambda e, r: f"{r.engine}'s compiled kernels did not load (undefined symbols): they were built against another "
                       "torch than the one installed. Not a speculative-decoding failure, but every run of this engine "
                       "is affected, often with errors far from here",
          _kernels_fix),
    Cause("user-code", UNRELATED, _user_code, _user_code_cause, lambda e, r: None),
    Cause("target-not-whitelisted", ERROR, _whitelist,
          lambda e, r: "the release's EAGLE-3 target whitelist (SpeculativeConfig) does not list the target's model_type",
          _whitelist_fix),
    Cause("no-eagle3-interface", ERROR, _interface, _interface_cause, _interface_fix),
    Cause("target-not-supported", ERROR, _target_layout, _target_layout_cause, _interface_fix),
    Cause("speculative-config-unknown-key", ERROR, _unknown_key,
          lambda e, r: f"--speculative-config has a key SpeculativeConfig does not have ({_unknown_key_name(e) or '?'}): "
                       "its fields reject unknown keys",
          _unknown_key_fix),
    Cause("drafter-shape-mismatch", ERROR, _shapes,
          lambda e, r: "a tensor of the drafter does not have the shape this release builds from the drafter's config: the "
                       "fc layer's width (aux hidden states x hidden size) against the number of layer ids, the vocabulary "
                       "against draft_vocab_size and d2t, the hidden size against the tensors; or the checkpoint is in "
                       "another layout",
          lambda e, r: convert_fix(r, "write the drafter in this release's layout (ids, fc and names checked together)")),
    Cause("drafter-without-weights", ERROR, _no_weights,
          lambda e, r: ("the drafter directory holds no weights file the loader reads (*.safetensors or *.bin)"
                        if in_drafter(e, r) else "the model directory holds no weights file the loader reads "
                        "(*.safetensors or *.bin)"),
          lambda e, r: FlagFix("point \"model\" in --speculative-config at the directory holding the drafter's "
                               "model.safetensors (a training checkpoint: " + convert_fix(r, "convert it").command + ")")),
    Cause("cpu-runner-no-spec-decode", ERROR, _cpu_runner, _cpu_runner_cause, _cpu_runner_fix),
    Cause("kv-cache-block-size", ERROR, _block_size,
          lambda e, r: "the target's attention backend and the drafter's share no KV-cache block size (an MLA target with "
                       "an EAGLE-3 drafter on CPU)",
          lambda e, r: _first(patch_fix(r, ("vllm-cpu-attn-block16",), "let CPU attention use block size 16"),
                              doctor_fix(r, "no compat patch covers this release"))),
)


# -- the methods beyond EAGLE-3 (compat.methods; messages as the releases raise them) ------------------------------
def _says(*fragments: str) -> Callable[[Event, Release], bool]:
    return lambda event, release: any(f in event_text(event) for f in fragments)


def _method_fix(release: Release, text: str) -> NoFix:
    command = shlex.join(["compat", "doctor", "TARGET", "DRAFTER", *_ref(release).args("doctor"), "--method", "NAME"])
    return NoFix(f"{text}; {command} checks the method, the drafter and the target together", command)


CATALOG = CATALOG + (
    Cause("method-peagle-removed", ERROR, _says("P-EAGLE (parallel drafting EAGLE-3) is not supported"),
          lambda e, r: "this release serves no P-EAGLE drafter: vLLM 0.34.0 removed it (its speculators translation "
                       "raises, the PEagle classes are gone); 0.22.0 - 0.33.0 serve it as eagle3 with parallel_drafting",
          lambda e, r: ReleaseFix(">=0.22.0,<=0.33.0", f"serve it on {r.engine} >=0.22.0,<=0.33.0 (\"method\": "
                                  "\"eagle3\", \"parallel_drafting\": true)")),
    Cause("method-suffix-needs-arctic-inference", ERROR, _says("Arctic Inference is required for suffix decoding"),
          lambda e, r: "suffix decoding runs on Snowflake's Arctic Inference, which is not a dependency of this release: "
                       "the serving venv lacks it",
          lambda e, r: FlagFix("in the venv that serves: pip install arctic-inference==0.1.1 (vLLM 0.34.0's GPU suffix "
                               "speculator needs nothing)")),
    Cause("method-unknown-name", ERROR, _says("Unknown speculative algorithm name", "Unsupported speculative method",
                                              "Input should be 'ngram'"),
          lambda e, r: "the method launched is not one this release has (or not under that name; SGLang folds the case, "
                       "vLLM does not)",
          lambda e, r: _method_fix(r, "compat probe --methods lists this release's methods; doctor names the releases "
                                      "that have the one you want")),
    Cause("method-drafter-mismatch", ERROR, _says("but the draft model", "Pass a matching method or a matching draft"),
          lambda e, r: "the method configured is not the one the drafter was trained for (the draft declares its own): "
                       "vLLM 0.34.0 refuses the pair rather than run the wrong head",
          lambda e, r: _method_fix(r, "run the method the error names (its \"Use method=...\")")),
    Cause("method-gemma4-assistant-eagle3", ERROR, _says("Gemma4AssistantForCausalLM draft requires"),
          lambda e, r: "a Gemma4 assistant draft runs as FROZEN_KV_MTP, which SGLang reaches from EAGLE or NEXTN, not EAGLE3",
          lambda e, r: FlagFix("--speculative-algorithm NEXTN (SGLang promotes it to FROZEN_KV_MTP)")),
    Cause("method-uno-arguments", ERROR, _says("UNO requires --uno-lora-path", "UNO reuses the target model",
                                               "UNO only supports CUDA"),
          lambda e, r: "UNO drafts with the target itself through a LoRA: it takes --uno-lora-path and no draft model, "
                       "on CUDA only",
          lambda e, r: FlagFix("drop --speculative-draft-model-path, give --uno-lora-path and "
                               "--speculative-num-draft-tokens")),
    Cause("method-dspark-without-markov", ERROR, _says("DSPARK requires markov_rank > 0"),
          lambda e, r: "the drafter has no Markov head: it is a DFlash drafter, launched as DSPARK",
          lambda e, r: FlagFix("--speculative-algorithm DFLASH (or a DSpark drafter)")),
    Cause("method-dflash-anchor", ERROR, _says("sample_from_anchor=True is not supported for DFlash"),
          lambda e, r: "the drafter's block is anchor-first (DSpark's layout), which DFlash cannot read",
          lambda e, r: _method_fix(r, "run it as dspark if it is a DSpark drafter, else set sample_from_anchor false")),
    Cause("method-layer-ids-out-of-range", ERROR, _says("target_layer_ids contains an out-of-range layer id"),
          lambda e, r: "the drafter's target layer ids name layers the target does not have: it was trained for another "
                       "target, or its ids are in another convention",
          lambda e, r: convert_fix(r, "write the ids this release reads for this target")),
)


# -- a backend that serves without the drafter (the speculative_backend fact: LMDeploy's TurboMind) --------------
def _backend_drops(event: Event, release: Release) -> bool:
    """The site is the one the release's speculative_backend fact says drops the drafter (its message, in its file)."""
    drops = (release.report.get("speculative_backend") or {}).get("drops") or {}
    where = str(drops.get("location") or "").rpartition(":")[0]
    return (event.site is not None and bool(where) and event.site.file == where
            and event.site.template.strip() == str(drops.get("message") or "").strip())


def _backend_fix(release: Release) -> Fix:
    fact = release.report.get("speculative_backend") or {}
    flag = (fact.get("flag") or {}).get("name") or "--backend"
    return FlagFix(f"{flag} {fact.get('speculates')}: the backend that speculates (the default, "
                   f"{(fact.get('flag') or {}).get('default')}, serves without the drafter)")


CATALOG = CATALOG + (
    Cause("backend-drops-drafter", WARNING, _backend_drops,
          lambda e, r: "the server runs on a backend that does not speculate: the drafter is dropped and every token is "
                       "decoded by the target alone (no error, no speed-up)",
          lambda e, r: _backend_fix(r)),
)
