"""A failure told in the user's own words: a paragraph that names a class, a method it lacks and the flag that was
set (`... crashes because Qwen2ForCausalLM does not implement the EAGLE3 draft method set_embed; started with
--speculative-algorithm EAGLE3 and no --speculative-draft-model-path`). The names are found in the text and looked up
in the release:

- a class and a method or attribute (`CamelCase` and `snake_case` names): when the release defines the class, lacks
  the name on it, and has a line that reads that name, that line is the site, read as Python's AttributeError there
  would be (python_errors.py);
- every name: the release's raise and log templates that hold it, the guards that read it (an option `--x` as its
  server argument `x`, an environment variable), the lines that read it;
- what was searched is said, whatever is found: when nothing is, the answer names the words it looked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from compat.core.tree import EngineTree
from compat.explain.sites import Site, SiteIndex

_CLASS = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+)(?![\w])")
_SNAKE = re.compile(r"(?<![\w-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w-])")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)+)")
_ENV = re.compile(r"(?<![\w])([A-Z][A-Z0-9]{2,}(?:_[A-Z0-9]+)+)(?![\w])")
_DOTTED = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*)")
MAX_NAMES = 12
MAX_SITES = 6


@dataclass
class Names:
    classes: list[str] = field(default_factory=list)
    members: list[str] = field(default_factory=list)  # methods and attributes (snake_case, or the last of a dotted name)
    flags: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return [*self.classes, *self.members, *self.flags, *self.env]


def names_in(text: str) -> Names:
    """The code names a paragraph holds, in the order it gives them (each once)."""
    out = Names()
    for dotted in _DOTTED.findall(text):  # `draft_runner.model.hot_token_id`: its last name is the member read
        last = dotted.rpartition(".")[2]
        if "_" in last and last not in out.members and not re.fullmatch(r"\w+\.(py|json|md|txt|yaml)", dotted):
            out.members.append(last)
    for pattern, bucket in ((_CLASS, out.classes), (_SNAKE, out.members), (_FLAG, out.flags), (_ENV, out.env)):
        for name in pattern.findall(text):
            if name not in bucket:
                bucket.append(name)
    out.members = [m for m in out.members if not any(m == f[2:].replace("-", "_") for f in out.flags)][:MAX_NAMES]
    out.classes = out.classes[:MAX_NAMES]
    return out


def template_sites(index: SiteIndex, names: Names) -> list[Site]:
    """The raise sites whose message holds one of the names, or whose guard reads one (an option's argument, an
    environment variable)."""
    wanted = [*names.classes, *names.members, *names.env]
    reads = [*names.members, *(f[2:].replace("-", "_") for f in names.flags), *names.env]
    found: list[Site] = []
    for site in index.sites:
        if site.kind == "log":
            continue
        test = (site.guard or {}).get("test") or ""
        if any(re.search(rf"\b{re.escape(n)}\b", site.template) for n in wanted) or \
                any(re.search(rf"\b{re.escape(n)}\b", test) for n in reads):
            found.append(site)
        if len(found) >= MAX_SITES:
            break
    return found


def read(evidence, tree: EngineTree, index: SiteIndex, files: list[str]) -> list[str]:
    """A paste that named no error the release raises: its names looked up. Returns the names searched."""
    from compat.explain.analysis import SHORT_INPUT, Event, record_event
    from compat.explain.calls import calls_of
    from compat.explain.classes import definitions, find_class, hierarchy
    from compat.explain.python_errors import Problem, locate, site_of

    # a paste whose error the release's code already places (a site, candidates) or that Python itself reported (an
    # exception, a traceback) is no prose: the log lines around it are not a description of it
    if evidence.lines > SHORT_INPUT or any(e.site is not None or e.candidates or e.exception or e.traceback is not None
                                           for e in evidence.events):
        return []
    lines = [line for line, _ in evidence.unmatched]
    if not lines:
        return []
    names = names_in("\n".join(line.text for line in lines))
    if not names.all():
        return []
    calls_index = calls_of(tree, files)
    seen = {("site", e.site.location) if e.site is not None else ("text", e.text): e for e in evidence.events}
    first = lines[0]
    text = " ".join(line.text.strip() for line in lines)
    for owner in names.classes:  # a class, and a name the text says it lacks that the release reads on it
        info = find_class(tree, owner)
        if info is None:
            continue
        chain = hierarchy(tree, info)[0]
        for member in names.members:
            if any(d.always for c in chain for d in definitions(c, member)) or not calls_index.of(member):
                continue
            finding = locate(Problem("attribute", member, owner), tree, lambda: calls_index)
            if finding.site is None and not finding.candidates:
                continue
            message = f"'{owner}' object has no attribute '{member}' (as the text tells it)"
            record_event(evidence, seen, Event(first.number, _cut(text), None, site_of(finding, "AttributeError", message),
                                               "names in the text", process=first.process, access=finding))
            return names.all()
    sites = template_sites(index, names)
    if sites:
        record_event(evidence, seen, Event(first.number, _cut(text), None, None, "names in the text",
                                           process=first.process, candidates=sites))
    return names.all()


def _cut(text: str, width: int = 400) -> str:
    return text if len(text) <= width else text[:width] + " ..."
