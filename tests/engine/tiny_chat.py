"""Give a tiny oracle target (tests/engine/tiny_models.py) a real tokenizer and chat template, so
`vllm serve` can serve it through /v1/chat/completions.

Run BY the engine venv's python (it has `tokenizers` and `transformers`; nothing is downloaded):

    <venv>/bin/python tiny_chat.py TARGET_DIR CORPUS.jsonl

- A byte-level BPE is trained on the chat prompts of CORPUS (compat's built-in set) to exactly the
  target's vocabulary size (512): every id the target can generate decodes, every prompt encodes.
- The chat template wraps turns in special tokens and ends the generation prompt with
  `<|assistant|>`. The target is a permutation bigram that stays inside the drafter's draft vocabulary
  only when it starts there, so the ids are permuted to put `<|assistant|>` on a draft-vocabulary id:
  every reply is then a walk the oracle drafter can predict.
- max_position_embeddings is raised so that multi-turn prompts and replies fit (the tiny target does
  not depend on position).
Prints one JSON line: the tokenizer's special ids and vocabulary size.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

SPECIALS = ["<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
MAX_POSITIONS = 4096


def corpus(path: Path) -> list[str]:
    texts = []
    for line in path.read_text().splitlines():
        if line.strip():
            texts += [m["content"] for m in json.loads(line)["messages"]]
    return texts


def train(texts: list[str], vocab_size: int) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def swap_ids(tokenizer: Tokenizer, a: int, b: int) -> Tokenizer:
    """The same tokenizer with ids a and b exchanged (vocabulary and special tokens)."""
    data = json.loads(tokenizer.to_str())
    vocab = data["model"]["vocab"]
    by_id = {i: t for t, i in vocab.items()}
    vocab[by_id[a]], vocab[by_id[b]] = b, a
    for added in data["added_tokens"]:
        if added["id"] in (a, b):
            added["id"] = b if added["id"] == a else a
    return Tokenizer.from_str(json.dumps(data))


def main(target: Path, corpus_path: Path) -> dict:
    manifest = json.loads((target / "compat-oracle.json").read_text())
    config = json.loads((target / "config.json").read_text())
    tokenizer = train(corpus(corpus_path), config["vocab_size"])
    assert tokenizer.get_vocab_size() == config["vocab_size"], tokenizer.get_vocab_size()
    assistant = tokenizer.token_to_id("<|assistant|>")
    draft_vocab = set(manifest["draft_vocab"])
    if assistant not in draft_vocab:
        tokenizer = swap_ids(tokenizer, assistant, min(draft_vocab - set(range(len(SPECIALS)))))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                   additional_special_tokens=SPECIALS[2:])
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = MAX_POSITIONS
    fast.save_pretrained(str(target))
    config["max_position_embeddings"] = MAX_POSITIONS
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    ids = {t: fast.convert_tokens_to_ids(t) for t in SPECIALS}
    assert ids["<s>"] == config["bos_token_id"] and ids["</s>"] == config["eos_token_id"], ids
    assert ids["<|assistant|>"] in draft_vocab
    return {"special_ids": ids, "vocab_size": len(fast), "max_positions": MAX_POSITIONS}


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), Path(sys.argv[2]))))
