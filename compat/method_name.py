"""An engine's name for a method family, with the releases that accept it (the version gate).

The engine units declare them (`METHOD_NAMES` in compat/engines/<name>.py: family -> `Name`s); compat.methods
re-exports the type, and `Method.names` gathers each engine's. A leaf module: the engine units and the method
files both use it, and neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # packaging is imported when a gate is read: the engine units declare Names on every start-up
    from packaging.version import Version


@dataclass(frozen=True)
class Name:
    """One spelling an engine gives the family, with the releases that accept it (the version gate).

    `since` / `until` are the first and last release accepting it among those compat reads (vLLM from 0.10.0,
    SGLang from 0.4.4); None: every one of them / still accepted. They are what the releases' code says (a
    network test compares each gate with the probe of the releases either side of it); a name the user runs on a
    release outside the gate is answered with these releases."""

    name: str
    since: str | None = None
    until: str | None = None
    alias_of: str | None = None  # an alias the engine runs as another name (SGLang's NEXTN runs as EAGLE)
    drafts: bool = True  # False: accepted by the same option, but proposes no draft tokens (extract_hidden_states)
    note: str = ""
    # True: the name is another family's, which this one runs under with a setting the note names (P-EAGLE is
    # vLLM's "eagle3" with "parallel_drafting": true); the name is looked up as the other family's
    shared: bool = False
    serves: tuple[str, ...] = ()  # other families whose drafters the name also runs (SGLang's EAGLE runs NextN heads)

    def accepted_in(self, version: str | Version | None) -> bool | None:
        """Whether a release accepts it by this gate (None: the version cannot be read)."""
        from packaging.version import InvalidVersion, Version

        try:
            v = Version(str(version)) if not isinstance(version, Version) else version
        except InvalidVersion:
            return None
        v = Version(v.public)
        if self.since is not None and v < Version(self.since):
            return False
        return not (self.until is not None and v > Version(self.until))

    def gate(self) -> str:
        """The releases in words: ">=0.5.11", ">=0.22.0,<=0.33.0", "every release"."""
        parts = ([f">={self.since}"] if self.since else []) + ([f"<={self.until}"] if self.until else [])
        return ",".join(parts) or "every release"
