"""Inside the peers venv: load each drafter directory with speculators' own loader and say what it holds.

argv: DIR... ; stdout (last line): {DIR: {"config_class", "model_class", "config": <speculators' parsed config,
model_dump()>, "layer": <transformer_layer_config.to_dict()>, "tensors": {name: [dtype, shape, sha256]}} or
{"error": "..."}}.
"""

import hashlib
import json
import sys

import torch
from speculators import SpeculatorModel, SpeculatorModelConfig


def digest(t: torch.Tensor) -> str:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return hashlib.sha256(t.numpy().tobytes()).hexdigest()


def load(path: str) -> dict:
    try:
        config = SpeculatorModelConfig.from_pretrained(path)  # validates: pydantic model of the speculators format
        model = SpeculatorModel.from_pretrained(path)
    except Exception as exc:  # the answer is the refusal, named
        return {"error": f"{type(exc).__name__}: {exc}"}
    dumped = json.loads(json.dumps(config.model_dump(exclude={"transformer_layer_config"}), default=str))
    layer = json.loads(json.dumps(config.transformer_layer_config.to_dict(), default=str))
    tensors = {k: [str(v.dtype).removeprefix("torch."), list(v.shape), digest(v)] for k, v in model.state_dict().items()}
    return {"config_class": type(config).__name__, "model_class": type(model).__name__, "config": dumped,
            "layer": layer, "tensors": tensors}


print(json.dumps({path: load(path) for path in sys.argv[1:]}))
