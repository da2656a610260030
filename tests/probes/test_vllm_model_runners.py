"""The vLLM `model_runners` probe on small trees in the shapes the releases had: the platform's worker, the worker's
V1/V2 switch (an env variable with its default in envs.py, 0.17 - 0.2x), a runner that refuses speculative decoding (the
CPU runner's assert before 0.20), the V2 runner's init_speculator chain; real releases: tests/checks/method_facts/
(captured by tests/checks/capture_method_facts.py, compared with the probe by test_captured_method_facts.py)."""

from compat.probes.vllm.model_runners import model_runners
from probe_trees import line, write_tree

CUDA = '''
class CudaPlatform:
    def check_and_update_config(cls, vllm_config):
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = "vllm.v1.worker.gpu_worker.Worker"  # marker: worker
'''
CPU = '''
class CpuPlatform:
    def check_and_update_config(cls, vllm_config):
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = "vllm.v1.worker.cpu_worker.CPUWorker"  # marker: worker
'''
GPU_WORKER = '''
from vllm import envs


class Worker:
    def __init__(self, vllm_config):
        self.use_v2_model_runner = envs.VLLM_USE_V2_MODEL_RUNNER  # marker: switch

    def init_device(self):
        if self.use_v2_model_runner:
            from vllm.v1.worker.gpu.model_runner import GPUModelRunner as GPUModelRunnerV2

            self.model_runner = GPUModelRunnerV2(self.vllm_config, self.device)  # marker: v2
        else:
            from vllm.v1.worker.gpu_model_runner import GPUModelRunner as GPUModelRunnerV1

            self.model_runner = GPUModelRunnerV1(self.vllm_config, self.device)  # marker: v1
'''
CPU_WORKER = '''
from vllm.v1.worker.cpu_model_runner import CPUModelRunner
from vllm.v1.worker.gpu_worker import Worker


class CPUWorker(Worker):
    def init_device(self):
        self.model_runner = CPUModelRunner(self.vllm_config, self.device)  # marker: cpu
'''
CPU_RUNNER = '''
from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class CPUModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        assert self.speculative_config is None, "spec decode is not supported."  # marker: refuses
'''
ENVS = '''
if TYPE_CHECKING:
    VLLM_USE_V2_MODEL_RUNNER: bool = False  # marker: default
'''
SPECULATIVE = '''
from typing import Literal

SpeculativeMethod = Literal["ngram", "eagle", "eagle3", "draft_model", "mtp"]


class SpeculativeConfig:
    method: SpeculativeMethod | None = None

    def use_eagle(self) -> bool:
        return self.method in ("eagle", "eagle3", "mtp")
'''
V2_SPECULATORS = '''
def init_speculator(vllm_config, device):
    speculative_config = vllm_config.speculative_config
    if speculative_config.use_eagle():
        from vllm.v1.worker.gpu.spec_decode.eagle.speculator import EagleSpeculator

        return EagleSpeculator(vllm_config, device)
    raise NotImplementedError(f"{speculative_config.method} is not supported yet.")  # marker: raise
'''


def _tree(tmp_path):
    return write_tree(tmp_path, "vllm", {
        "vllm/platforms/cuda.py": CUDA, "vllm/platforms/cpu.py": CPU, "vllm/v1/worker/gpu_worker.py": GPU_WORKER,
        "vllm/v1/worker/cpu_worker.py": CPU_WORKER, "vllm/v1/worker/cpu_model_runner.py": CPU_RUNNER,
        "vllm/v1/worker/gpu_model_runner.py": "class GPUModelRunner:\n    pass\n",
        "vllm/v1/worker/gpu/model_runner.py": "class GPUModelRunner:\n    pass\n", "vllm/envs.py": ENVS,
        "vllm/config/speculative.py": SPECULATIVE, "vllm/v1/worker/gpu/spec_decode/__init__.py": V2_SPECULATORS,
    }, strip_first_newline=True)


def test_each_platforms_worker_and_the_runners_it_builds(tmp_path):
    fact = model_runners(_tree(tmp_path))
    cuda, cpu = fact["platforms"]["cuda"], fact["platforms"]["cpu"]
    assert cuda["worker"] == "vllm.v1.worker.gpu_worker.Worker"
    assert cuda["location"] == f"vllm/platforms/cuda.py:{line(CUDA, 'marker: worker')}"
    assert [(r["lineage"], r["branch"], r["location"]) for r in cuda["runners"]] == [
        ("v2", "if", f"vllm/v1/worker/gpu_worker.py:{line(GPU_WORKER, 'marker: v2')}"),
        ("v1", "else", f"vllm/v1/worker/gpu_worker.py:{line(GPU_WORKER, 'marker: v1')}")]
    assert cuda["switch"]["set_from"] == "envs.VLLM_USE_V2_MODEL_RUNNER"
    assert cuda["switch"]["env"] == {"name": "VLLM_USE_V2_MODEL_RUNNER", "default": False,
                                     "location": f"vllm/envs.py:{line(ENVS, 'marker: default')}"}
    assert [(r["class"], r["lineage"], r["when"]) for r in cpu["runners"]] == [("CPUModelRunner", "v1", None)]


def test_a_runner_that_refuses_speculative_decoding_and_its_lineage(tmp_path):
    runner = model_runners(_tree(tmp_path))["runners"]["vllm.v1.worker.cpu_model_runner.CPUModelRunner"]
    assert runner["lineage"] == "v1"  # a subclass of the V1 GPUModelRunner: the V1 layer-id reader feeds it
    assert runner["refuses"] == {"message": "spec decode is not supported.", "raises": "AssertionError",
                                 "location": f"vllm/v1/worker/cpu_model_runner.py:{line(CPU_RUNNER, 'marker: refuses')}"}


def test_the_v2_runner_builds_only_the_methods_its_chain_names(tmp_path):
    v2 = model_runners(_tree(tmp_path))["v2_speculators"]
    assert v2 == {"methods": ["eagle", "eagle3", "mtp"], "raises": "NotImplementedError",
                  "location": f"vllm/v1/worker/gpu/spec_decode/__init__.py:{line(V2_SPECULATORS, 'marker: raise')}"}


V2_CHAIN_0230 = '''
def init_speculator(vllm_config, device):
    speculative_config = vllm_config.speculative_config
    if speculative_config.method == "mtp":
        return MTPSpeculator(vllm_config, device)
    elif speculative_config.use_eagle():
        return EagleSpeculator(vllm_config, device)
    else:
        raise NotImplementedError(f"{speculative_config.method} is not supported yet.")  # marker: raise
'''


def test_the_v2_chain_ending_in_an_else_0_23(tmp_path):
    """0.23.0 on: `if ... elif ... else: raise NotImplementedError` (gpu/spec_decode/__init__.py:28 in 0.23.0)."""
    tree = _tree(tmp_path)
    (tmp_path / "vllm/v1/worker/gpu/spec_decode/__init__.py").write_text(V2_CHAIN_0230.lstrip("\n"))
    from compat.sources import open_path

    v2 = model_runners(open_path(tmp_path))["v2_speculators"]
    assert tree is not None and v2["methods"] == ["eagle", "eagle3", "mtp"]
    assert v2["location"] == f"vllm/v1/worker/gpu/spec_decode/__init__.py:{line(V2_CHAIN_0230, 'marker: raise')}"
