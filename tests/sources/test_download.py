"""Building a release from its artifact (download.py): sdist first, wheels through HTTP ranges (network.RangedFile)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

from fake_index import BLOB, Index, filler_modules, make_sdist, make_wheel, package_files

from compat.sources import ranged
from compat.sources.released import fetch_release


# -- artifacts --------------------------------------------------------------------------------


def test_sdist_is_preferred_over_a_wheel_and_only_package_py_files_are_kept(index, server_factory, cache):
    server = server_factory(index)
    tree = fetch_release("vllm", "==0.10.0", cache_dir=cache, index_url=server.url, progress=False)
    assert tree.source.detail["artifact"] == "vllm-0.10.0.tar.gz"
    assert tree.source.detail["verified"] == "sha256"
    assert not server.requests_for("vllm-0.10.0-cp38-abi3-manylinux1_x86_64.whl")
    written = sorted(p.relative_to(tree.root).as_posix() for p in tree.root.rglob("*") if p.is_file())
    assert written == ["manifest.json", "release.json", *sorted(package_files("vllm", "0.10.0"))]  # no setup.py, README, ...
    record = json.loads((tree.root / "release.json").read_text())
    assert record["version"] == "0.10.0" and record["artifact"] == "vllm-0.10.0.tar.gz"
    manifest = (tree.root / "manifest.json").read_bytes()
    assert json.loads(manifest)["files"] == {name: len(data) for name, data in package_files("vllm", "0.10.0").items()}
    assert record["manifest"] == {"files": 3, "bytes": sum(map(len, package_files("vllm", "0.10.0").values())),
                                  "sha256": hashlib.sha256(manifest).hexdigest()}
    assert record["sha256"] == hashlib.sha256((index.root / "files" / "vllm-0.10.0.tar.gz").read_bytes()).hexdigest()
    assert record["url"].endswith("/files/vllm-0.10.0.tar.gz") and record["fetched_at"]


def test_sdist_with_the_package_under_python_takes_the_shallowest(tmp_path, cache):
    index = Index(tmp_path / "index")
    decoy = [("sglang-0.5.0/3rdparty/vendored/sglang/__init__.py", b"DECOY = 1\n"),
             ("sglang-0.5.0/3rdparty/vendored/sglang/decoy.py", b"DECOY = 1\n")]
    index.publish("sglang", "sglang-0.5.0.tar.gz", make_sdist("sglang", "0.5.0", top="sglang-0.5.0/python", extra=decoy))
    tree = fetch_release("sglang", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.engine == "sglang" and tree.version == "0.5.0"
    assert sorted(tree.files()) == sorted(package_files("sglang", "0.5.0"))
    assert b"DECOY" not in tree.read_bytes("sglang/__init__.py")


def test_wheel_only_release_is_read_with_range_requests(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    wheel = make_wheel("vllm", "0.15.0", modules=100)
    index.publish("vllm", "vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl", wheel)
    server = server_factory(index, ranges=True)
    tree = fetch_release("vllm", "==0.15.0", cache_dir=cache, index_url=server.url, progress=False)
    expected = {**package_files("vllm", "0.15.0"), **filler_modules("vllm", 100)}
    assert sorted(tree.files()) == sorted(expected)
    assert tree.read_bytes("vllm/config/speculative.py") == expected["vllm/config/speculative.py"]
    assert not tree.exists("vllm/_C.abi3.so")
    requests = server.requests_for("vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl")
    assert requests and all(r["status"] == 206 and r["range"] for r in requests)
    served = sum(r["sent"] for r in requests)
    assert served <= len(wheel) - BLOB + ranged.TAIL_BYTES  # all but the 4 MB extension, give or take the first read
    assert tree.source.detail["downloaded_bytes"] == served
    assert "ranged read" in tree.source.detail["verified"]
    # the tail, then the 100+ modules in front of the extension coalesced into one or two requests
    assert tree.source.detail["range_requests"] == len(requests) <= 4


def test_wheel_only_release_without_range_support_is_downloaded_whole_and_verified(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    wheel = make_wheel("vllm", "0.15.0")
    index.publish("vllm", "vllm-0.15.0-cp38-abi3-manylinux_2_31_x86_64.whl", wheel)
    server = server_factory(index, ranges=False)
    tree = fetch_release("vllm", "==0.15.0", cache_dir=cache, index_url=server.url, progress=False)
    assert sorted(tree.files()) == sorted(package_files("vllm", "0.15.0"))
    assert tree.source.detail["downloaded_bytes"] == len(wheel)
    assert tree.source.detail["verified"] == "sha256"
    assert not list((cache / "releases" / "vllm" / "0.15.0").glob("*.part"))


def test_wheel_whose_size_differs_from_the_index_is_downloaded_whole_and_verified(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    wheel = make_wheel("vllm", "0.15.0")
    index.publish("vllm", "vllm-0.15.0-py3-none-any.whl", wheel, size=len(wheel) + 10)
    server = server_factory(index, ranges=True)
    tree = fetch_release("vllm", "==0.15.0", cache_dir=cache, index_url=server.url, progress=False)
    assert tree.source.detail["verified"] == "sha256" and tree.source.detail["downloaded_bytes"] == len(wheel)
    assert server.requests_for("vllm-0.15.0-py3-none-any.whl")[-1]["range"] is None


def test_smallest_wheel_is_chosen(tmp_path, server_factory, cache):
    index = Index(tmp_path / "index")
    index.publish("vllm", "vllm-0.15.1-cp38-abi3-manylinux_2_31_x86_64.whl", make_wheel("vllm", "0.15.1"))
    index.publish("vllm", "vllm-0.15.1-cp38-abi3-manylinux_2_31_aarch64.whl", _small_wheel("vllm", "0.15.1"))
    tree = fetch_release("vllm", "latest", cache_dir=cache, index_url=index.file_url, progress=False)
    assert tree.source.detail["artifact"] == "vllm-0.15.1-cp38-abi3-manylinux_2_31_aarch64.whl"


def _small_wheel(engine: str, version: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in package_files(engine, version).items():
            archive.writestr(name, data)
    return buffer.getvalue()
