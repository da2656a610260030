"""What the doctor checks need, in words every engine shares: the vocabulary of `@check(needs=...)`.

A check names the terms it reads (`needs=("launch options", "draft parallelism")`), never an engine's probe keys;
each engine unit says which of its probe facts provide a term (`FACTS` in compat/engines/<name>.py: term -> the
probe keys, `()` when the engine's own unit fields answer it and no probe fact is needed). A term an engine's
`FACTS` lacks is one compat does not read from that engine yet: every check needing it answers WARN "cannot tell"
naming the term, never a guess with another engine's assumptions. A term whose probe failed on the release:
"cannot tell: probe X failed".

Adding a term is adding a line here and the entries of the engines that provide it.
"""

from __future__ import annotations

TERMS: dict[str, str] = {
    # the release's registries and readers, shared by the EAGLE-3 checks
    "layer ids": "who reads the drafter's aux-hidden-state layer ids, and how (the runners, a hook, a config builder)",
    "eagle3 targets": "the target classes that feed an EAGLE-3 drafter their hidden states (interface or hook)",
    "target whitelist": "the model types admitted as an EAGLE-3 target before the model loads",
    "target architectures": "the target architectures the release registers",
    "drafter loader": "the drafter classes and the config keys and tensor names each loads",
    "drafter classes": "the EAGLE-3 drafter architectures the release registers",
    "drafter renames": "how the release renames a drafter's architecture or model type before loading it",
    "draft dtype": "the dtype the draft runs in, and where the release decides it",
    "final layer capture": "whether the target captures its final layer's hidden state for the drafter",
    "methods": "the speculative methods the release accepts: names, workers, promotions",
    "method packages": "the packages a method imports beyond the engine",
    "release validation": "the release's own validation of the speculative settings, replayed on a launch line",
    # the launch line
    "launch options": "the options a launch line may give (the release's argument parser, its speculative settings)",
    "launch flags": "the flags of the launch command compat writes (and the backend that speculates)",
    "method selection": "how a launch line selects the method, and what the release guesses when it does not",
    "draft attention": "how the draft takes its attention backend (its own, or the target's unless an option says)",
    "draft quantization": "how the draft takes its quantization (its own config, or the target's unless an option says)",
    "draft parallelism": "the rules on the draft's tensor parallelism (its own rules, or the target's size)",
    "speculative tree": "the rules on a tree of draft tokens (steps x topk); none for an engine drafting a chain",
    # other methods than EAGLE-3
    "speculators translation": "how the release translates a speculators-format drafter config, and what it carries",
    "block layer ids": "which target layers the release feeds a block drafter (DFlash, DSpark)",
    "method runners": "the model runners a method runs on, per platform",
    "method targets": "what admits a target for a block drafter or MTP heads (its interface, hook or MTP class)",
    "weights check": "whether the release's loader refuses a checkpoint with tensors it does not load",
}


def unknown_terms(terms: tuple[str, ...] | list[str]) -> list[str]:
    """The terms not in the vocabulary."""
    return [t for t in terms if t not in TERMS]
