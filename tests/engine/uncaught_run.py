"""Start the real vLLM engine once, as a user's script does, and let its exception go uncaught: what the process
prints is what a user has (torch.distributed's excepthook writes `[rank0]: ` before each line once the worker set up
its process group). Run BY the engine venv's python:

    <venv>/bin/python uncaught_run.py MODEL '<speculative config json>' [EXECUTOR]
"""

from __future__ import annotations

import json
import os
import sys

for name, value in {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "HF_HUB_OFFLINE": "1",
                    "TRANSFORMERS_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}.items():
    os.environ.setdefault(name, value)

from vllm import LLM  # noqa: E402  (after the environment)

LLM(model=sys.argv[1], speculative_config=json.loads(sys.argv[2]), enforce_eager=True, max_model_len=256,
    skip_tokenizer_init=True, dtype="float32", max_num_seqs=1,
    distributed_executor_backend=sys.argv[3] if len(sys.argv) > 3 else "uni")
print("ENGINE STARTED")
