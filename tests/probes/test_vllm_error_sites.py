"""The `error_sites` probe: every message form becomes a pattern that matches what Python renders, at the right line.

The tree's own code is run to render each message (the raise, the logger call), so the patterns are checked
against real messages, not against strings written here.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
import traceback

import pytest

from compat.probes.vllm.error_sites import error_sites
from probe_trees import write_tree

RUNNER = '''
import logging
logger = logging.getLogger("fake.vllm")


def whitelist(model_type, supported):
    raise ValueError(
        f"Eagle3 is only supported for {supported} models. "  # noqa
        f"Got {model_type=}"
    )


def interface():
    raise RuntimeError("Model does not support EAGLE3 interface but "
                       "aux_hidden_state_outputs was requested")


def held_in_a_variable(n):
    msg = "Cannot find any model weights with `%s`" % n
    raise RuntimeError(msg)


def formatted(width, ids):
    raise AssertionError("fc width {} does not match {} layer ids".format(width, len(ids)))


def asserted(x):
    assert x > 0, f"num_speculative_tokens must be positive, got {x:d}"


def logged(rate, per):
    logger.warning("Draft acceptance rate: %.1f%%, per position: %s", rate, per)


def built(length):
    msg = "Decode batch. "
    msg += f"accept len: {length:.2f}, "
    logger.info(msg)


def stats(log_fn, length):
    log_fn("SpecDecoding metrics: Mean acceptance length: %.2f, Accepted: %d tokens", length, 7)
'''
CALLS = {  # function -> arguments; what it raises or logs is the message under test
    "whitelist": ("kimi_k2", ["llama", "qwen"]),
    "interface": (),
    "held_in_a_variable": ("*.safetensors",),
    "formatted": (384, [1, 2]),
    "asserted": (-1,),
    "logged": (3.25, "0.5, 0.25"),
    "built": (1.5,),
    "stats": (None, 1.25),
}


@pytest.fixture()
def tree(tmp_path):
    return write_tree(tmp_path, "vllm", {"vllm/v1/spec_decode/fake.py": RUNNER, "vllm/v1/spec_decode/__init__.py": ""})


def _rendered(tmp_path, name: str, args: tuple) -> tuple[str, int]:
    """The message the function renders and the line it comes from (the traceback's, or the log record's)."""
    spec = importlib.util.spec_from_file_location("fake_runner", tmp_path / "vllm/v1/spec_decode/fake.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    module.logger.addHandler(handler)
    module.logger.setLevel(logging.DEBUG)
    if name == "stats":
        args = (module.logger.info, *args[1:])
    try:
        getattr(module, name)(*args)
    except Exception as err:  # noqa: BLE001 - the message under test
        frame = traceback.extract_tb(sys.exc_info()[2])[-1]
        return str(err), frame.lineno
    assert records, f"{name} neither raised nor logged"
    return records[-1].getMessage(), records[-1].lineno


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_message_form_matches_what_python_renders_at_its_line(tmp_path, tree, name):
    value = error_sites(tree)
    assert value["present"] is True and value["files"] == ["vllm/v1/spec_decode/fake.py", "vllm/v1/spec_decode/__init__.py"] \
        or set(value["files"]) == {"vllm/v1/spec_decode/fake.py", "vllm/v1/spec_decode/__init__.py"}
    message, line = _rendered(tmp_path, name, CALLS[name])
    fitting = [s for s in value["sites"] if s["pattern"] and re.search(s["pattern"], message)]
    assert fitting, f"no site pattern matches {message!r}: {[s['pattern'] for s in value['sites']]}"
    site = fitting[0]
    first, last = int(site["location"].rpartition(":")[2]), site["end_line"]
    assert first <= line <= last or name == "built", (site, line)  # a built message is found at its piece
    assert site["function"] == name


def test_kinds_levels_and_numbers(tree):
    sites = {s["function"]: s for s in error_sites(tree)["sites"]}
    assert sites["whitelist"]["kind"] == "raise" and sites["whitelist"]["exception"] == "ValueError"
    assert sites["whitelist"]["template"] == "Eagle3 is only supported for {} models. Got model_type={}"
    assert sites["asserted"]["kind"] == "assert" and sites["asserted"]["exception"] == "AssertionError"
    assert sites["logged"]["kind"] == "log" and sites["logged"]["level"] == "warning"
    pieces = [s["template"] for s in error_sites(tree)["sites"] if s["function"] == "built" and s["level"] == "info"]
    assert pieces == ["accept len: {}, ", "Decode batch. "]  # the piece, and the logger call (its first assignment)
    # a %d / %.2f hole only matches a number
    assert not re.search(sites["stats"]["pattern"], "SpecDecoding metrics: Mean acceptance length: x, Accepted: y tokens")


def test_a_message_with_nothing_to_recognise_has_no_pattern(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/v1/spec_decode/bare.py": "def f(x):\n    raise ValueError(f'{x}')\n"})
    (site,) = error_sites(tree)["sites"]
    assert site["pattern"] is None and site["location"] == "vllm/v1/spec_decode/bare.py:2"


def test_a_tree_without_the_files(tmp_path):
    tree = write_tree(tmp_path, "vllm", {"vllm/other.py": "x = 1\n"})
    assert error_sites(tree)["present"] is False
