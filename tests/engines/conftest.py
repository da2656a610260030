"""What the engine-unit tests share: a folder on compat.engines' path, as a plugin adds one."""

import sys

import pytest

from compat import engines


@pytest.fixture
def extra_folder(tmp_path):
    """A folder on compat.engines' path, as a plugin adds one; removed (with the modules read from it) after the test."""
    folder = tmp_path / "more_engines"
    folder.mkdir()
    engines.__path__.append(str(folder))
    yield folder
    engines.__path__.remove(str(folder))
    for name in [m for m in sys.modules if m.startswith("compat.engines.") and
                 m.rpartition(".")[2] in {p.stem for p in folder.glob("*.py")}]:
        del sys.modules[name]
