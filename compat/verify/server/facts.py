"""What verify needs to know about the server's release, read from that release's source by the probes:
the names of its speculative-decoding and traffic series on /metrics, its info endpoints, and the names of
its speculative server arguments where its server info reports them (SGLang's). Which report fact holds each
is the engine unit's SERVER_* fields (compat/engines/<name>.py): one builder reads every engine.

The release is the one the server reports (`/version`, SGLang's server info), fetched from the package
index into the cache like `compat probe --engine vllm==X` (or named with --engine / --path). A build that
is not a release (`0.11.1.dev12+g...`, `0.6.0rc1`) is read as the last release before it; a local suffix
(`0.32.0+cpu`) as its release. Nothing here is a table of names: every name carries the file and line the
probe read it from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from compat import engines
from compat.core.errors import CompatError, SourceError


@dataclass(frozen=True)
class Series:
    role: str       # e.g. num_drafts, generation_tokens, accept_length
    sample: str     # the name its samples carry on /metrics (vllm:spec_decode_num_drafts_total)
    kind: str       # counter | gauge
    location: str   # where the release declares it

    def to_json(self) -> dict:
        return {"sample": self.sample, "kind": self.kind, "location": self.location}


@dataclass(frozen=True)
class ReleaseFacts:
    engine: str
    version: str                        # the release whose source was read
    read_from: str                      # where that source came from, in words
    note: str | None                    # why it is not exactly the server's version, when it is not
    spec: dict[str, Series]
    traffic: dict[str, Series]
    position_label: str | None = None
    spec_registered_when: dict | None = None   # the guard that registers the counters only with speculation (vLLM's)
    server_info: dict = field(default_factory=dict)
    speculative_fields: tuple[str, ...] = ()   # server-argument names under which its server info reports its settings

    def wanted_samples(self) -> frozenset[str]:
        return frozenset(s.sample for s in (*self.spec.values(), *self.traffic.values()))

    def to_json(self) -> dict:
        return {"engine": self.engine, "release": self.version, "read_from": self.read_from, "note": self.note,
                "series": {role: s.to_json() for role, s in {**self.spec, **self.traffic}.items()},
                "position_label": self.position_label, "spec_registered_when": self.spec_registered_when,
                "server_info": self.server_info or None}


def release_spec(engine: str, version: str) -> tuple[str, str | None]:
    """(the --engine spec to read, a note when it is not the server's exact version)."""
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return f"{engine}==latest", f"the server's version {version!r} is not a version number: names from the latest release"
    if parsed.is_prerelease or parsed.is_devrelease:
        return f"{engine}<{parsed.base_version}", f"{version} is a pre-release or development build: names from the release before it"
    if parsed.local:
        return f"{engine}=={parsed.public}", None
    return f"{engine}=={version}", None


def read_release_facts(engine: str, version: str | None, *, source: str | None = None, path: str | None = None,
                       cache_dir: str | None = None, offline: bool = False,
                       progress: Callable[[str], None] | None = None) -> ReleaseFacts:
    """Probe the server's release (or the one `source`/`path` names) and keep what verify reads."""
    from compat.report import build_report
    from compat.sources import open_tree

    note = None
    if path is None and source is None:
        if version is None:
            raise SourceError(f"the {engine} server does not say its version, so verify cannot tell which release's "
                              "metric names to read", hint=f"name it: --engine {engine}==VERSION (or --path DIR)")
        source, note = release_spec(engine, version)
    if progress:
        progress(f"reading {source or path}'s source for its metric names")
    try:
        tree = open_tree(source, path=path, cache_dir=cache_dir, offline=offline, progress=False)
    except CompatError as err:
        raise SourceError(f"cannot read the source of {source or path} for its metric names: {err.message}",
                          hint=err.hint or "check the network, or name a cached release: --engine "
                                           f"{engine}==VERSION (compat cache list shows them)") from None
    report = build_report(tree)
    where = f"{tree.engine} {tree.version} ({tree.source.kind}: {tree.source.location})"
    return release_facts(engines.get(tree.engine), report, tree.version or "?", where, note)


def release_facts(unit: engines.Engine, report: dict, version: str, where: str, note: str | None) -> ReleaseFacts:
    """What verify reads from a release's report, where the engine's unit says it is (its SERVER_* fields)."""
    spec_fact, spec_key = _fact(report, unit.server_spec_series)
    traffic_fact, traffic_key = _fact(report, unit.server_traffic_series)
    info = _present(report.get(unit.server_info_fact)) if unit.server_info_fact else {}
    settings = (report.get(unit.server_settings_fact) or {}) if unit.server_settings_fact else {}
    fields = (settings.get("fields") if isinstance(settings, dict) else None) or []
    speculative = tuple(f["name"] for f in fields if str(f.get("name", "")).startswith("speculative_"))
    return ReleaseFacts(unit.name, version, where, note, spec=_series(spec_fact, spec_key),
                        traffic=_series(traffic_fact, traffic_key), position_label=spec_fact.get("position_label"),
                        spec_registered_when=spec_fact.get("registered_only_when_speculating"),
                        server_info=info, speculative_fields=speculative)


def _fact(report: dict, where: str) -> tuple[dict, str]:
    """The report fact and the key a unit's "FACT.KEY" names ({} and "" when it names none)."""
    name, _, key = where.partition(".")
    fact = report.get(name) if name else None
    return (fact if isinstance(fact, dict) else {}), key


def _series(fact: Any, key: str) -> dict[str, Series]:
    if not key or not isinstance(fact, dict) or not fact.get("present"):
        return {}
    return {role: Series(role, s["sample"], s["kind"], s["location"]) for role, s in (fact.get(key) or {}).items()}


def _present(fact: Any) -> dict:
    return fact if isinstance(fact, dict) and fact.get("present") else {}
