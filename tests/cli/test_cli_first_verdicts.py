"""Issue 40, point 4: verdicts that misled a newcomer, on compat's own samples and real releases (pinned, network).

- A plain draft model given without --method was judged as EAGLE-3 ("does not work", no hint of --method
  draft_model): a whole causal LM (its own embedding and decoder layers, no head of a target's hidden states) is
  now known for a draft model.
- `compat samples` said "output-of ids" of the seed case's drafter and doctor then asked which convention: the
  samples now say what doctor can know (nothing in that drafter says it, so doctor asks).
- `--method eagle4` with no launch line said "your line, changed"."""

from __future__ import annotations

import pytest

from cli_helpers import compat

pytestmark = pytest.mark.network  # the releases' source, fetched once into the user cache


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    where = tmp_path_factory.mktemp("samples")
    run = compat("samples", where)
    assert run.code == 0, run.err
    return where, run.out


def test_a_plain_draft_model_is_checked_as_one_without_method(samples, pinned_release):
    where, _ = samples
    pinned_release("vllm", "0.32.0")
    run = compat("doctor", "Llama-3.1-8B-Instruct", "Llama-3.2-1B-Instruct", "--engine", "vllm==0.32.0", "--json", cwd=where)
    doc = run.json()
    method = doc["method"]
    assert (method["family"], method["launched"], method["from"]) == ("draft_model", None, "the drafter"), method
    assert doc["verdict"] != "does not work" and doc["launch"]["speculative_config"]["method"] == "draft_model"
    eagle = compat("doctor", "Llama-3.1-8B-Instruct", "Llama-3.2-1B-Instruct", "--engine", "vllm==0.32.0", "--method",
                   "eagle3", "--json", cwd=where).json()  # the control: said to be EAGLE-3, it is told it is not one
    drafter = next(c for c in eagle["checks"] if c["check"] == "method-drafter")
    assert drafter["verdict"] == "fail" and "draft model" in drafter["detail"]


def test_the_samples_say_what_doctor_can_know_of_the_seed_drafter(samples, pinned_release):
    where, listing = samples
    line = next(row for row in listing.splitlines() if row.strip().startswith("kimi-k25-eagle3-ft "))
    assert "nothing in it says the convention: doctor asks" in line
    pinned_release("vllm", "0.16.0")
    run = compat("doctor", "Kimi-K2.5", "kimi-k25-eagle3-ft", "--engine", "vllm==0.16.0", "-q", cwd=where)
    assert "verdict: depends on how the drafter was trained (say --layer-ids-convention)" in run.out  # as said


def test_a_method_fixed_without_a_line_is_not_called_your_line(samples, pinned_release):
    where, _ = samples
    pinned_release("vllm", "0.34.0")
    run = compat("doctor", "Kimi-K2-Instruct", "kimi-k2-eagle3", "--engine", "vllm==0.34.0", "--method", "eagle4", "-q",
                 cwd=where)
    assert "your line" not in run.out, run.out
    assert "verdict: works with the launch command as doctor prints it (not as your options asked)" in run.out
    line = compat("doctor", "--engine", "vllm==0.34.0", "-q", "--launch", "vllm serve Kimi-K2-Instruct --trust-remote-code "
                  "--speculative-config '{\"method\": \"eagle4\", \"model\": \"kimi-k2-eagle3\"}'", cwd=where)
    assert "verdict: works with the launch line as doctor prints it (your line, changed)" in line.out, line.out + line.err
