"""One reader per manifest format, one file each (the registry's rule-folder pattern).

A format module defines, in plain sight:

    NAME    what the output and the tests call it ("kubernetes", "kserve", "ray-serve", ...)
    TITLE   the format in words
    DOCS    the documentation pages and charts its shapes were written from (the tests cite them too)
    KINDS   the Kubernetes `kind`s it reads (() for a file that has none: Helm values, compose, SkyPilot)
    ORDER   which reader is asked first (lower first) when several could read a kind-less document
    ENGINE  the engine its resources run unless they name another (None: each container says): a format that
            serves one engine writes its entry point and engine from that engine's unit (compat/engines/<name>.py)
    detect  detect(doc) -> bool: a kind-less document is this format (None: only its KINDS)
    read    read(doc) -> list[Serving | Problem]: every serving container of the document, and what it could not read

A reader takes a parsed document (compat/manifests/nodes.py: nodes with their lines) and returns values
(compat/manifests/model.py); it runs nothing and fetches nothing. What several readers share (a pod's containers,
a Helm value that only Helm renders) is in `_pods.py`.
"""

from __future__ import annotations

from compat.core.registry import FUNCTION, Contract, ContractError, Field, Folder, Rule

CONTRACT = Contract("manifest format", (
    Field("NAME", str, doc="what the output and the tests call it"),
    Field("TITLE", str, doc="the format in words"),
    Field("DOCS", tuple, doc="the documentation pages and charts its shapes were written from"),
    Field("KINDS", tuple, default=(), doc="the Kubernetes kinds it reads (() for a kind-less file)"),
    Field("ORDER", int, default=50, doc="which reader is asked first for a kind-less document"),
    Field("ENGINE", str, default=None, doc="the engine its resources run unless they name another (an engine's NAME)"),
    Field("detect", FUNCTION, default=None, doc="detect(doc) -> bool, for a kind-less document"),
    Field("read", FUNCTION, doc="read(doc) -> list[Serving | Problem]"),
), key="NAME")



def _serves_a_known_engine(rule: Rule) -> None:
    from compat import engines

    if rule["ENGINE"] is not None and engines.find(rule["ENGINE"]) is None:
        raise ContractError("manifest format", rule.module.__name__, "ENGINE", f"is {rule['ENGINE']!r}: expected an "
                            f"engine compat knows ({engines.choices_text()})")


FOLDER = Folder(__name__, CONTRACT, check=_serves_a_known_engine)


def formats():
    """Every format rule, in ORDER."""
    return sorted(FOLDER.rules(), key=lambda rule: (rule["ORDER"], rule.name))


def for_kind(kind: str):
    return next((rule for rule in formats() if kind in rule["KINDS"]), None)


def for_kindless(doc):
    return next((rule for rule in formats() if rule["detect"] is not None and rule["detect"](doc)), None)
