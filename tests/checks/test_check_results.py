"""A check's answer is a Result with typed fields (what doctor's fixes act on); its JSON form is doctor's --json.

The JSON keys and their order are a stable interface: check, title, verdict, detail, fix, location, then what
the check saw (`evidence`), then the typed fields that are set.
"""

from check_inputs import HIDDEN, drafter, specforge_config, target, tensors

from compat.checks import FAIL, ConvertWith, LaterRelease, Result, get_check


def test_a_data_dump_id_list_asks_convert_for_the_first_three_ids(ctx):
    config = specforge_config(eagle_config=None, eagle_aux_hidden_state_layer_ids=[2, 30, 58, 60])
    names = {**tensors("layers.0."), "fc.weight": ("F32", (HIDDEN, 3 * HIDDEN))}
    result = get_check("aux-inputs")(ctx("vllm", "0.18.0", draft=drafter(config, names)))
    assert isinstance(result, Result) and result.verdict == FAIL and result.convert_with == ConvertWith([2, 30, 58])
    assert list(result.to_json()) == ["check", "title", "verdict", "detail", "fix", "location", "fc", "convert_with"]
    assert result.to_json()["convert_with"] == {"layer_ids": [2, 30, 58]}


def test_a_missing_architecture_names_the_release_that_has_it_or_says_none_does(ctx):
    for arrival, first, shown in (("0.15.0", "0.15.0", ">=0.15.0"), ("", None, None)):
        context = ctx("vllm", "0.13.0", report_changes={"target_architectures": {}},
                      tgt=target("kimi_k2", "KimiK25ForConditionalGeneration"))
        context.releases = lambda fact, key, arrival=arrival: arrival
        result = get_check("target-architecture")(context)
        assert result.release == LaterRelease(first) and result.release.specifier == shown
        assert list(result.to_json())[-1] == "release" and result.to_json()["release"] == shown


def test_ids_nothing_settles_need_the_users_input(ctx):
    d = drafter(specforge_config(eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 29, 57], "use_last_layernorm": True}))
    result = get_check("layer-ids")(ctx(draft=d))
    assert result.needs_input and result.evidence["branches"] == d.branches == d.ambiguous.readings
    assert list(result.to_json())[6:] == ["fed", "trained", "branches", "reads", "needs_input"]


def test_the_fixes_fields_come_last_and_only_when_set():
    result = Result(FAIL, "why", "here.py:1", evidence={"seen": 1})
    assert result.to_json() == {"check": "", "title": "", "verdict": "fail", "detail": "why", "fix": None,
                                "location": "here.py:1", "seen": 1}
    result.convert_refused = "the conversion refused"
    assert list(result.to_json())[-1] == "convert_refused"
