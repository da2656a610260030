"""Hostile YAML stays in bounded time and memory, and runs nothing: an alias bomb (billion laughs) is reported at
its document once its walk passes the node budget, a recursive anchor likewise, a huge file is refused unread, deep
nesting is a parse problem, and a `!!python/object/apply` tag is a tag on a node (nothing is constructed). The
other documents of the same run are still read. (Times and memory are measured by bench/bench_manifests.py.)"""

from __future__ import annotations

from pathlib import Path

from compat.manifests import nodes
from compat.manifests.scan import scan

BOMB = """applications:
- name: app
  import_path: ray.serve.llm:build_openai_app
  args:
    llm_configs:
    - model_loading_config: {model_source: /models/t}
      engine_kwargs:
        a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
        i: [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
"""

GOOD = """apiVersion: apps/v1
kind: Deployment
metadata: {name: ok}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: [/models/t]
"""


def test_an_alias_bomb_is_a_problem_and_the_next_document_is_read(tmp_path: Path):
    (tmp_path / "bomb.yaml").write_text(BOMB + "---\n" + GOOD)
    found = scan([str(tmp_path)])
    assert [p.kind for p in found.problems] == ["budget"]
    assert found.problems[0].where.line == 1 and "alias" in found.problems[0].message
    assert [s.resource for s in found.servings] == ["Deployment/ok"]


def test_a_recursive_anchor_is_bounded(tmp_path: Path):
    (tmp_path / "loop.yaml").write_text(BOMB.split("      engine_kwargs:")[0] + "      engine_kwargs: &k\n        self: *k\n")
    found = scan([str(tmp_path)])
    assert [p.kind for p in found.problems] == ["budget"]


def test_a_huge_file_is_refused_unread(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(nodes, "MAX_BYTES", 1000)
    (tmp_path / "huge.yaml").write_text(GOOD + "#" * 2000 + "\n")
    found = scan([str(tmp_path)])
    assert [p.kind for p in found.problems] == ["too-large"] and not found.servings


def test_deep_nesting_is_a_parse_problem(tmp_path: Path):
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    found = scan([str(tmp_path)])
    assert [p.kind for p in found.problems] == ["parse"]


def test_python_tags_construct_nothing(tmp_path: Path):
    marker = tmp_path / "ran"
    (tmp_path / "tag.yaml").write_text(GOOD.replace("metadata: {name: ok}",
                                                    f"metadata: {{name: ok, x: !!python/object/apply:os.system ['touch {marker}']}}"))
    found = scan([str(tmp_path)])
    assert not marker.exists() and [s.resource for s in found.servings] == ["Deployment/ok"]
