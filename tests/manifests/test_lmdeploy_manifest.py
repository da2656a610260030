"""doctor --manifest on LMDeploy serving containers: the release from the image tag (openmmlab/lmdeploy:v0.18.0, as its
docker workflow pushes it), the line from `command`/`args` (the image has no ENTRYPOINT: docker/Dockerfile), and the
target the line serves, its positional MODEL, also when options come first (which word it is, the release's parser
says: the cli_arguments fact). Network: LMDeploy 0.18.0's released source, pinned. LMDeploy needs CUDA: nothing runs.

The shape is LMDeploy's own Kubernetes example (docs/en/llm/api_server.md's `lmdeploy serve api_server` in a container
command) with the speculative flags of InternLM/lmdeploy#3945.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from doctor_models import specforge_drafter, tiny_llama_target

pytestmark = pytest.mark.network

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers:
      - name: lmdeploy
        image: openmmlab/lmdeploy:v0.18.0
        command: ["lmdeploy", "serve", "api_server"]
        args: {args}
"""
SPEC = ["--speculative-algorithm", "eagle3", "--speculative-draft-model", "/models/drafter"]


def scan(tmp_path, models, args: list[str]) -> dict:
    (tmp_path / "deploy.yaml").write_text(DEPLOYMENT.format(name="llama-eagle3", args=json.dumps(args)))
    done = subprocess.run([sys.executable, "-m", "compat", "doctor", "--manifest", str(tmp_path / "deploy.yaml"),
                           "--model-root", f"/models={models}", "--layer-ids-convention", "output-of", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    tiny_llama_target(root / "target")
    specforge_drafter(root / "drafter", layer_ids=(1, 3, 4), architecture="LlamaForCausalLM")
    return root


@pytest.mark.parametrize("args", [
    ["/models/target", "--backend", "pytorch", *SPEC],
    ["--backend", "pytorch", "/models/target", *SPEC],  # the model after an option and its value
], ids=["model first", "options first"])
def test_the_target_is_checked_wherever_the_line_puts_it(tmp_path, models, args):
    found = scan(tmp_path, models, args)
    serving = found["servings"][0]
    assert serving["engine"] == "lmdeploy" and serving["version"] == "0.18.0"
    assert serving["target"] == "/models/target" and serving["models"]["target"] == str(models / "target")
    # release-validation passes: it walks the release's own builder (lmdeploy/cli/utils.py:91 get_speculative_config)
    # and SpeculativeConfig.__post_init__ (lmdeploy/messages.py:877) with the line's values. The draft's settings are
    # "cannot tell": compat/engines/lmdeploy.py's FACTS leaves their terms out (the draft takes the target's engine
    # config, which no check models yet), so the honest verdict is "cannot tell", never "works as is"
    assert serving["verdict"].startswith("cannot tell: some checks read facts"), serving
    unread = sorted(f["check"] for f in serving["findings"] if f["verdict"] != "pass")
    assert unread == ["draft-attention-backend", "draft-quantization", "draft-tensor-parallel"], serving
    assert all(f["detail"].startswith("cannot tell: this check reads") for f in serving["findings"] if f["verdict"] != "pass")
    validation = next(f for f in serving["findings"] if f["check"] == "release-validation")
    assert "the release's validation lets the line through" in validation["detail"], validation


def test_a_block_size_the_release_refuses_is_a_fail_with_its_fix(tmp_path, models):
    """lmdeploy/messages.py:880-881 (0.18.0): `dflash_block_size is supported only when method="dflash".`: the
    deployment's eagle3 line with the DFlash-only option is refused at start-up; the fix removes the option."""
    found = scan(tmp_path, models, ["/models/target", "--backend", "pytorch", *SPEC, "--speculative-dflash-block-size", "8"])
    serving = found["servings"][0]
    validation = next(f for f in serving["findings"] if f["check"] == "release-validation")
    assert validation["verdict"] == "fail" and validation["engine_location"] == "lmdeploy/messages.py:881", validation
    assert 'dflash_block_size is supported only when method="dflash".' in validation["detail"]
    assert serving["verdict"] == "works with the launch line as doctor prints it (your line, changed)", serving["verdict"]
    assert "speculative_dflash_block_size removed" in validation["fix"]["text"], validation["fix"]


def test_the_default_backend_is_reported_at_the_line(tmp_path, models):
    found = scan(tmp_path, models, ["/models/target", *SPEC])  # no --backend: TurboMind, which drops the drafter
    serving = found["servings"][0]
    backend = [f for f in serving["findings"] if f["check"] == "speculative-backend"]
    assert backend and backend[0]["verdict"] == "fail" and serving["target"] == "/models/target"
