"""Hostile archives (archives.py): nothing outside the destination, no links."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from fake_index import Index, make_sdist, make_wheel, package_files

from compat.sources.released import fetch_release


# -- hostile archives -------------------------------------------------------------------------


def _link(name: str, target: str, kind=tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def test_sdist_members_outside_the_tree_and_links_are_skipped(tmp_path, cache):
    index = Index(tmp_path / "index")
    hostile = [
        ("../../vllm/evil.py", b"EVIL\n"),
        ("/tmp/vllm/evil_abs.py", b"EVIL\n"),
        ("vllm-0.1.0/vllm/../../../vllm/evil_dots.py", b"EVIL\n"),
        _link("vllm-0.1.0/vllm/linked.py", "/etc/passwd"),
        _link("vllm-0.1.0/vllm/hard.py", "vllm-0.1.0/vllm/__init__.py", tarfile.LNKTYPE),
        _link("vllm-0.1.0/vllm/escape", "../../.."),
        ("vllm-0.1.0/vllm/escape/through_link.py", b"EVIL\n"),
    ]
    index.publish("vllm", "vllm-0.1.0.tar.gz", make_sdist("vllm", "0.1.0", extra=hostile))
    tree = fetch_release("vllm", "==0.1.0", cache_dir=cache, index_url=index.file_url, progress=False)
    on_disk = {p.relative_to(cache).as_posix() for p in cache.rglob("*.py")}
    assert not any("evil" in p or "linked" in p or "hard" in p for p in on_disk)
    assert not any(p.is_symlink() for p in cache.rglob("*"))
    assert not (tmp_path / "vllm").exists() and not Path("/tmp/vllm/evil_abs.py").exists()
    # a regular file below a skipped symlink's name lands in a plain folder inside the tree
    assert (tree.root / "vllm" / "escape" / "through_link.py").resolve().is_relative_to(tree.root)
    assert tree.exists("vllm/config/speculative.py")


def test_wheel_members_outside_the_tree_and_symlinks_are_skipped(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    link = zipfile.ZipInfo("vllm/linked.py")
    link.external_attr = (0o120777 << 16)
    buffer = io.BytesIO(make_wheel("vllm", "0.2.0", extra={"../vllm/evil.py": b"EVIL", "vllm/../../evil2.py": b"EVIL", "/abs/vllm/x.py": b"EVIL"}))
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(link, "/etc/passwd")
    index.publish("vllm", "vllm-0.2.0-py3-none-any.whl", buffer.getvalue())
    server = server_factory(index)
    tree = fetch_release("vllm", "==0.2.0", cache_dir=cache, index_url=server.url, progress=False)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.2.0"))
    assert not any("evil" in p.name for p in tmp_path.rglob("*.py") if "index" not in p.parts)
    assert not (tree.root / "vllm" / "linked.py").exists()
