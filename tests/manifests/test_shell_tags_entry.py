"""The scan's reading of what surrounds a launch line (offline: no release is opened): image tags with four parts,
.post or rc; the image's entry point per release; `sh -c` scripts read as a shell reads them (pipes, redirections,
`&`, `$VAR` from the container's env, single quotes). The diagnosis of these lines on real releases is in
tests/doctor/test_upstream_method_cases.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat.manifests.images import read_image
from compat.manifests.model import Where
from compat.manifests.scan import scan
from compat.manifests.shell import expand, tokens


def read(tmp_path: Path, text: str):
    (tmp_path / "m.yaml").write_text(text)
    return scan([str(tmp_path / "m.yaml")])


@pytest.mark.parametrize("ref, version", [
    ("vllm/vllm-openai:v0.10.1.1", "0.10.1.1"),  # a four-part release (PyPI vllm 0.10.1.1)
    ("vllm/vllm-openai:v0.9.2.post1", "0.9.2.post1"),
    ("vllm/vllm-openai:v0.11.1rc1", "0.11.1rc1"),
    ("vllm/vllm-openai:v0.11.1-rc1", "0.11.1rc1"),  # the index spells it 0.11.1rc1: that release, not 0.11.1
    ("lmsysorg/sglang:v0.5.3rc0-cu126", "0.5.3rc0"),
    ("lmsysorg/sglang:v0.4.6.post4-cu124", "0.4.6.post4"),
    ("vllm/vllm-openai:latest", None),
])
def test_image_tags_name_the_release_as_the_index_spells_it(ref, version):
    assert read_image(ref, Where("m.yaml", 1)).version == version


@pytest.mark.parametrize("tag, entry", [
    ("v0.10.2", ["python3", "-m", "vllm.entrypoints.openai.api_server"]),  # docker/Dockerfile:535 in the 0.10.2 sdist
    ("v0.11.0", ["python3", "-m", "vllm.entrypoints.openai.api_server"]),  # :542 in 0.11.0
    ("v0.11.1", ["vllm", "serve"]),  # :500 in 0.11.1
    ("latest", ["vllm", "serve"]),  # no release told: the newest entry point
])
def test_args_only_containers_start_the_entry_point_of_their_release(tmp_path, tag, entry):
    found = read(tmp_path, f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: d}}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:{tag}
        args: ["--model", "/models/t"]
""")
    (serving,) = found.servings
    assert [w.text for w in serving.words] == [*entry, "--model", "/models/t"]


SCRIPT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.18.0
        env:
        - {name: MODEL_LOCATION, value: /models/dsv3}
        command: ["/bin/bash", "-c"]
        args:
        - |
          pip install x && export A=1
          exec vllm serve $MODEL_LOCATION --port ${PORT:-8000} \\
            --speculative-config '{"num_speculative_tokens": 1, "method": "deepseek_mtp"}' \\
            --kv-transfer-config '{"engine_id": "$MOONCAKE_ENGINE_ID"}' --served-model-name "$NAME" 2>&1 | tee /logs/vllm.log
          echo done
"""


def test_a_shell_script_gives_the_engine_its_words_not_the_shells(tmp_path):
    """volcano-sh/kthena#937's modelserving.yaml shape (and intel/llm-scaler#264's `2>&1 | tee`): the pipe, the
    redirection and the commands around the engine's are the shell's; $MODEL_LOCATION comes from the env,
    ${PORT:-8000} takes its default, the single-quoted "$MOONCAKE_ENGINE_ID" stays as written (the shell does not
    expand it), and $NAME, which the manifest never sets, is said."""
    (serving,) = read(tmp_path, SCRIPT).servings
    assert [w.text for w in serving.words] == [
        "vllm", "serve", "/models/dsv3", "--port", "8000", "--speculative-config",
        '{"num_speculative_tokens": 1, "method": "deepseek_mtp"}', "--kv-transfer-config",
        '{"engine_id": "$MOONCAKE_ENGINE_ID"}', "--served-model-name", "$NAME"]
    assert serving.words[0].where.line == 16 and serving.words[5].where.line == 17  # each word at its own line
    assert any("$NAME" in note and "read as written" in note for note in serving.unread)
    assert not any("MOONCAKE" in note for note in serving.unread)


def test_shell_tokens():
    found = [(t.kind, t.text) for t in tokens("a 2>&1 >/dev/null b &> log | c; d && e || f & g\nh")]
    assert found == [("word", "a"), ("redirection", "2>&1"), ("redirection", ">/dev/null"), ("word", "b"),
                     ("redirection", "&>log"), ("separator", "|"), ("word", "c"), ("separator", ";"), ("word", "d"),
                     ("separator", "&&"), ("word", "e"), ("separator", "||"), ("word", "f"), ("separator", "&"),
                     ("word", "g"), ("separator", "\n"), ("word", "h")]
    (quoted,) = tokens("'a $X' # a comment")
    assert quoted.text == "a $X" and not quoted.expansions
    (double,) = tokens('"a $X\\"b" ')
    assert double.text == 'a $X"b' and double.expansions == ["$X"] and expand(double, {"X": "1"}) == ('a 1"b', [])


def test_a_list_command_without_a_shell_is_arguments_word_for_word(tmp_path):
    """No shell runs `command: [vllm, serve, ...]`: a `|` there is an argument the engine gets (and refuses)."""
    (serving,) = read(tmp_path, """apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.18.0
        command: ["vllm", "serve", "/models/t", "2>&1", "|", "tee", "/log"]
""").servings
    assert [w.text for w in serving.words][-4:] == ["2>&1", "|", "tee", "/log"]
