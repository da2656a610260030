"""known-issues: the curated list, matched on engine, release and target names."""


def test_matching_issues_warn_with_links(ctx, run):
    result = run("known-issues", ctx("vllm", "0.11.0"))
    assert result["verdict"] == "warn" and "https://" in result["detail"]
    assert {i["id"] for i in result["issues"]} >= {"vllm-eagle3-whitelist-kimi"}


def test_no_issue_passes(ctx, run):
    from check_inputs import target

    result = run("known-issues", ctx("vllm", "0.18.0", tgt=target("llama", "LlamaForCausalLM")))
    assert result["verdict"] == "pass" and result["issues"] == []
