"""Which model runner runs the drafter, per platform: the release's own selection, read from its source.

vLLM picks a worker per platform (`parallel_config.worker_cls = "vllm.v1.worker.cpu_worker.CPUWorker"` in
vllm/platforms/<platform>.py when it is "auto"); the worker builds its model runner, one of two lineages: the V1 runner
(`GPUModelRunner` of vllm/v1/worker/gpu_model_runner.py and its subclasses: CPU, XPU) and the V2 one (vllm/v1/worker/
gpu/model_runner.py, the only one from 0.34.0). Which one a worker builds is its switch (`if self.use_v2_model_runner:`,
set from the env variable VLLM_USE_V2_MODEL_RUNNER, default off, in 0.17 - 0.2x; from a VllmConfig property that
looks at the target and the method later). A runner may refuse speculative decoding outright (the CPU runner before
0.20: `assert self.speculative_config is None, "spec decode is not supported."`), and the V2 runner's
`init_speculator` runs only the methods its chain names (0.17 - 0.2x: `if speculative_config.use_eagle(): ...` then
`raise NotImplementedError`). Each runner's lineage says whose layer-id reader feeds the drafter (aux_layer_ids:
"v1", "v2").

    {"present": true, "platforms": {"cuda": {"worker": "vllm.v1.worker.gpu_worker.Worker", "location": "...",
       "runners": [{"class": "GPUModelRunner", "module": "...", "lineage": "v2", "when": "self.use_v2_model_runner",
                    "branch": "if", "location": "..."}, {... "lineage": "v1", "branch": "else"}],
       "switch": {"text": "self.use_v2_model_runner", "set_from": "envs.VLLM_USE_V2_MODEL_RUNNER", "env": ...}}},
     "runners": {"vllm.v1.worker.cpu_model_runner.CPUModelRunner": {"lineage": "v1", "refuses": {"message", "location"}}},
     "v2_speculators": {"methods": ["eagle", "eagle3", "mtp"], "raises": "NotImplementedError", "location": "..."}}
"""

from __future__ import annotations

import ast

from compat.probes import probe
from compat.probes._ast import class_fields, field_name
from compat.probes.vllm._common import literal_strings, module_file, speculative_config_class
from compat.probes.vllm._method_runners import method_predicates
from compat.core.tree import EngineTree, UnparseableFile

PLATFORMS = ("cuda", "rocm", "cpu", "tpu", "xpu")
LINEAGES = {"vllm/v1/worker/gpu_model_runner.py": "v1", "vllm/v1/worker/gpu/model_runner.py": "v2"}
V2_SPECULATORS = "vllm/v1/worker/gpu/spec_decode/__init__.py"
ENVS = "vllm/envs.py"


@probe("vllm", "model_runners", "Model runners per platform: the worker, its runner switch, what each refuses", order=88)
def model_runners(tree: EngineTree) -> dict:
    platforms: dict[str, dict] = {}
    runners: dict[str, dict] = {}
    for platform in PLATFORMS:
        relpath = f"vllm/platforms/{platform}.py"
        found = _worker_cls(tree, relpath) if tree.exists(relpath) else None
        if found is None:
            continue
        worker, node = found
        entry: dict = {"worker": worker, "location": tree.loc(relpath, node), "runners": [], "switch": None}
        home = module_file(tree, worker.rsplit(".", 1)[0])
        if home is None:
            entry["reason"] = f"{worker} is not in this release (a platform plugin's)"
        else:
            entry["runners"], entry["switch"] = _worker_runners(tree, home, worker.rsplit(".", 1)[1], runners)
        platforms[platform] = entry
    return {"present": bool(platforms), "platforms": platforms, "runners": runners, "v2_speculators": _v2_speculators(tree)}


def _worker_cls(tree: EngineTree, relpath: str) -> tuple[str, ast.Assign] | None:
    """The first `parallel_config.worker_cls = "vllm.v1...."` of the platform file (0.10 also names a V0 worker after)."""
    found = [n for n in ast.walk(tree.parse(relpath)) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]).endswith(
        "worker_cls") and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)]
    found.sort(key=lambda n: (not str(n.value.value).startswith("vllm.v1."), n.lineno))  # type: ignore[attr-defined]
    return (str(found[0].value.value), found[0]) if found else None  # type: ignore[attr-defined]


def _imports(module: ast.Module, relpath: str) -> dict[str, tuple[str, str]]:
    """Every `from X import Y [as Z]` of the file, at any depth: Z -> (X, Y)."""
    out = {}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module, alias.name)
    return out


def _worker_runners(tree: EngineTree, relpath: str, cls_name: str, runners: dict[str, dict]) -> tuple[list[dict], dict | None]:
    module = tree.parse(relpath)
    cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
    if cls is None:
        return [], None
    imports = _imports(module, relpath)
    parents = {child: parent for parent in ast.walk(cls) for child in ast.iter_child_nodes(parent)}
    out: list[dict] = []
    switch = None
    for name_node in ast.walk(cls):
        name = name_node.id if isinstance(name_node, ast.Name) else None
        if not name or "ModelRunner" not in name or name not in imports or not _built(name_node, parents):
            continue
        dotted, original = imports[name]
        home = module_file(tree, dotted)
        key = f"{dotted}.{original}"
        if key not in runners and home is not None:
            runners[key] = _runner(tree, home, original)
        when, branch = _condition(name_node, parents)
        if when and "v2_model_runner" in when:
            switch = _switch(tree, relpath, module, cls, when)
        out.append({"class": original, "module": dotted, "lineage": (runners.get(key) or {}).get("lineage"), "when": when,
                    "branch": branch, "location": tree.loc(relpath, name_node)})
    return list({(r["module"], r["class"], r["when"]): r for r in out}.values()), switch


def _built(node: ast.AST, parents: dict) -> bool:
    """The name is called, or picked by a conditional expression whose result is called (`X if c else Y`)."""
    parent = parents.get(node)
    return (isinstance(parent, ast.Call) and parent.func is node) or isinstance(parent, ast.IfExp)


def _condition(node: ast.AST, parents: dict) -> tuple[str | None, str | None]:
    """The test of the nearest `if` (or conditional expression) the node sits under, and which branch: "if" / "else"."""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp)):
            in_body = child in (parent.body if isinstance(parent, ast.If) else [parent.body])
            if child is not parent.test:
                return ast.unparse(parent.test), "if" if in_body else "else"
        child, parent = parent, parents.get(parent)
    return None, None


def _switch(tree: EngineTree, relpath: str, module: ast.Module, cls: ast.ClassDef, test: str) -> dict:
    """What `self.use_v2_model_runner` is set from: an env variable (its default, from vllm/envs.py) or a config
    property (whose logic looks at the target and the method: not decided here). A worker that inherits the attribute
    (XPUWorker(Worker)) has it set in its base's __init__."""
    attr = test.split(".")[-1].strip("() ")
    source = next((n for n in ast.walk(cls) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]).endswith(attr)), None)
    base = cls.bases[0] if cls.bases else None
    if source is None and isinstance(base, ast.Name):
        imported = _imports(module, relpath).get(base.id)
        home = module_file(tree, imported[0]) if imported else None
        parent = next((n for n in tree.parse(home).body if isinstance(n, ast.ClassDef) and imported
                       and n.name == imported[1]), None) if home else None
        if parent is not None and home is not None:
            relpath, cls = home, parent
            source = next((n for n in ast.walk(cls) if isinstance(n, ast.Assign)
                           and ast.unparse(n.targets[0]).endswith(attr)), None)
    out: dict = {"text": test, "set_from": ast.unparse(source.value) if source is not None else None,
                 "location": tree.loc(relpath, source) if source is not None else None, "env": None}
    if source is not None and ast.unparse(source.value).startswith("envs."):
        out["env"] = _env_default(tree, ast.unparse(source.value).split(".", 1)[1])
    return out


def _env_default(tree: EngineTree, name: str) -> dict | None:
    """`VLLM_USE_V2_MODEL_RUNNER: bool = False` in vllm/envs.py's annotations: its default when the variable is unset."""
    if not tree.exists(ENVS):
        return None
    for node in ast.walk(tree.parse(ENVS)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name \
                and isinstance(node.value, ast.Constant):
            return {"name": name, "default": node.value.value, "location": tree.loc(ENVS, node)}
    return None


def _runner(tree: EngineTree, relpath: str, name: str, depth: int = 0) -> dict:
    """A runner class: its lineage (which of the two base runners it descends from) and what it refuses."""
    try:
        module = tree.parse(relpath)
    except UnparseableFile:
        return {"lineage": None, "location": None, "refuses": None}
    cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if cls is None:
        return {"lineage": LINEAGES.get(relpath), "location": None, "refuses": None}
    out = {"lineage": LINEAGES.get(relpath), "location": tree.loc(relpath, cls), "refuses": _refusal(tree, relpath, cls)}
    base = cls.bases[0] if cls.bases else None
    if out["lineage"] is None and isinstance(base, ast.Name) and depth < 4:
        imported = _imports(module, relpath).get(base.id)
        home = module_file(tree, imported[0]) if imported else relpath
        if home is not None:
            inherited = _runner(tree, home, imported[1] if imported else base.id, depth + 1)
            out["lineage"] = inherited.get("lineage")
            out["refuses"] = out["refuses"] or inherited.get("refuses")
    return out


def _refusal(tree: EngineTree, relpath: str, cls: ast.ClassDef) -> dict | None:
    """`assert self.speculative_config is None, "spec decode is not supported."` (or a raise under `if
    self.speculative_config`) in the class's __init__."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    for node in ast.walk(init) if init is not None else []:
        if isinstance(node, ast.Assert) and "speculative_config" in ast.unparse(node.test) and "is None" in ast.unparse(node.test):
            message = node.msg.value if isinstance(node.msg, ast.Constant) else (ast.unparse(node.msg) if node.msg else "")
            return {"message": message, "raises": "AssertionError", "location": tree.loc(relpath, node)}
        if isinstance(node, ast.If) and "speculative_config" in ast.unparse(node.test) and "not " not in ast.unparse(node.test):
            raised = next((s for s in node.body if isinstance(s, ast.Raise) and s.exc is not None), None)
            if raised is not None and raised.exc is not None:
                exc = raised.exc
                args = exc.args if isinstance(exc, ast.Call) else []
                message = args[0].value if args and isinstance(args[0], ast.Constant) else ast.unparse(exc)
                return {"message": message, "raises": ast.unparse(exc).split("(")[0], "location": tree.loc(relpath, raised)}
    return None


def _v2_speculators(tree: EngineTree) -> dict | None:
    """The V2 runner's `init_speculator`: the methods its `if speculative_config.use_x():` chain builds, and the raise
    for the rest (None: no such chain; 0.34's builds the config class of every method)."""
    if not tree.exists(V2_SPECULATORS):
        return None
    func = next((n for n in tree.parse(V2_SPECULATORS).body if isinstance(n, ast.FunctionDef) and n.name == "init_speculator"), None)
    if func is None:
        return None
    tests, raised = _chain(func.body)
    if raised is None or raised.exc is None:
        return {"methods": None, "raises": None, "location": tree.loc(V2_SPECULATORS, func)}
    names = _method_names(tree)
    predicates = method_predicates(tree, names)
    methods: list[str] = []
    for test in tests:  # `if speculative_config.use_eagle():`, `elif speculative_config.method == "mtp":`
        for node in ast.walk(test):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                methods += predicates.get(node.func.attr, [])
            elif isinstance(node, ast.Constant) and node.value in names:
                methods.append(str(node.value))
    return {"methods": sorted(dict.fromkeys(methods)), "raises": ast.unparse(raised.exc).split("(")[0],
            "location": tree.loc(V2_SPECULATORS, raised)}


def _chain(body: list[ast.stmt]) -> tuple[list[ast.expr], ast.Raise | None]:
    """The tests of the function's `if` statements (an if/elif chain followed through its else) and the raise that
    ends it: after the ifs (0.17 - 0.22) or as the chain's last else (0.23 on)."""
    tests: list[ast.expr] = []
    for stmt in body:
        node: ast.stmt | None = stmt
        while isinstance(node, ast.If):
            tests.append(node.test)
            orelse = node.orelse
            node = orelse[0] if len(orelse) == 1 else None
            if len(orelse) == 1 and isinstance(orelse[0], ast.Raise):
                return tests, orelse[0]
        if isinstance(stmt, ast.Raise):
            return tests, stmt
    return tests, None


def _method_names(tree: EngineTree) -> list[str]:
    found = speculative_config_class(tree)
    if found is None:
        return []
    relpath, cls = found
    field = next((f for f in class_fields(cls) if field_name(f) == "method"), None)
    return literal_strings(tree, relpath, field.annotation) if field is not None else []
