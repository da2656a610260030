"""issue 11: hostile pickles, tensors that claim more memory than their file, links and special files,
failing disks and signals. Each is refused with one line naming the file and a fix (or cleaned up),
with no traceback and nothing left behind; SRC is never changed."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from compat.cli import main as compat_main
from ckpt_builders import canonical_tensors, eagle_config, write_drafter

CLI = [sys.executable, "-c", "import sys; from compat.cli import main; sys.exit(main(sys.argv[1:]))", "convert", "ckpt"]


def run(*args) -> int:
    return compat_main(["convert", "ckpt", *(str(a) for a in args)])


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if "compat-" in p.name)


def bin_source(torch, tmp_path: Path, state: dict, **save) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    torch.save(state, src / "pytorch_model.bin", **save)
    (src / "config.json").write_text(json.dumps(eagle_config()))
    return src


def drafter_state(torch) -> dict:
    return {(k.replace("layers.0.", "midlayer.")): torch.from_numpy(v.copy()) for k, v in canonical_tensors().items()}


def refused(capsys, tmp_path, src, *needles, code=4) -> str:
    assert run(src, tmp_path / "out", "--to", "vllm") == code
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err, err
    assert "Traceback" not in err and not (tmp_path / "out").exists() and leftovers(tmp_path) == []
    return err


# ---------------------------------------------------------------------------------------------
# tensors that claim more than their bytes


@pytest.mark.parametrize("tensor, needle", [
    (lambda torch: torch.zeros(1).expand(786432, 1024), "overlapping or zero strides"),  # 151 KB on disk, 3 GB materialised
    (lambda torch: torch.zeros(1).expand(1 << 20, 1 << 20), "overlapping or zero strides"),  # 4 TB
    (lambda torch: torch.zeros(16).as_strided((4, 4), (1, 1)), "overlapping or zero strides"),
])
def test_tensors_addressing_more_than_their_storage_are_refused_before_loading(tmp_path, capsys, tensor, needle, torch):
    state = drafter_state(torch)
    state["fc.weight"] = tensor(torch)
    err = refused(capsys, tmp_path, bin_source(torch, tmp_path, state), "pytorch_model.bin", "'fc.weight'", needle)
    assert "fix:" in err


def _rewrite_zip(path: Path, edit) -> None:
    entries = [(info, zipfile.ZipFile(path).read(info.filename)) for info in zipfile.ZipFile(path).infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
        for info, data in entries:
            data = edit(info.filename, data)
            if data is not None:
                out.writestr(info, data)


def test_storage_record_shorter_than_claimed_is_refused(tmp_path, capsys, torch):
    src = bin_source(torch, tmp_path, drafter_state(torch))
    _rewrite_zip(src / "pytorch_model.bin", lambda name, data: data[: len(data) // 2] if name.endswith("/data/1") else data)
    refused(capsys, tmp_path, src, "claims", "the file holds")


def test_zip_bomb_pickle_is_refused(tmp_path, capsys, torch):
    src = bin_source(torch, tmp_path, drafter_state(torch))
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00" + b"N" * (80 << 20))  # 80 MiB that deflates to ~80 KB
    (src / "pytorch_model.bin").write_bytes(bomb.getvalue())
    refused(capsys, tmp_path, src, "over 16 MiB")


def test_contiguous_and_transposed_tensors_still_convert(tmp_path, torch):
    state = drafter_state(torch)
    state["fc.weight"] = state["fc.weight"].t().contiguous().t()  # a transposed view: dense, not contiguous
    src = bin_source(torch, tmp_path, state)
    assert run(src, tmp_path / "out", "--to", "vllm") == 0
    from safetensors.torch import load_file

    assert torch.equal(load_file(str(tmp_path / "out" / "model.safetensors"))["fc.weight"], state["fc.weight"])


# ---------------------------------------------------------------------------------------------
# hostile pickles: the refusal names the global, and nothing runs


class CallsSystem:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class CallsExec:
    def __reduce__(self):
        return (exec, ("open('/tmp/compat-pwned', 'w')",))


class CallsPopen:
    def __reduce__(self):
        return (subprocess.Popen, (["true"],))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("payload, name", [
    (lambda m: CallsSystem(m), f"{os.system.__module__}.system"),
    (lambda m: CallsExec(), "builtins.exec"),
    (lambda m: CallsPopen(), "subprocess.Popen"),
])
def test_hostile_pickle_refused_naming_the_global(tmp_path, capsys, payload, name, legacy, torch):
    marker = tmp_path / "pwned"
    state = drafter_state(torch)
    state["extra"] = payload(marker)
    src = bin_source(torch, tmp_path, state, **({"_use_new_zipfile_serialization": False} if legacy else {}))
    refused(capsys, tmp_path, src, "more than plain tensors", f"calls {name}")
    assert not marker.exists()


def test_a_bare_global_is_named(tmp_path, capsys, torch):
    state = drafter_state(torch)
    state["extra"] = os.system
    refused(capsys, tmp_path, bin_source(torch, tmp_path, state), f"a reference to {os.system.__module__}.system", "not only tensors")


# ---------------------------------------------------------------------------------------------
# links and special files


def test_config_linked_to_dev_zero_or_a_fifo_is_refused_at_once(tmp_path):
    for kind in ("zero", "fifo"):
        src = write_drafter(tmp_path / kind, "eagle")
        (src / "config.json").unlink()
        if kind == "zero":
            (src / "config.json").symlink_to("/dev/zero")
        else:
            os.mkfifo(src / "config.json")
        proc = subprocess.run([*CLI, str(src), str(tmp_path / f"out-{kind}"), "--to", "vllm"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 4 and "Traceback" not in proc.stderr, proc.stderr
        assert ("outside" in proc.stderr) if kind == "zero" else ("is a FIFO, not a regular file" in proc.stderr)


def test_weights_linked_out_of_src_are_refused(tmp_path, capsys):
    elsewhere = write_drafter(tmp_path / "elsewhere", "eagle")
    src = write_drafter(tmp_path / "src", "eagle")
    (src / "model.safetensors").unlink()
    (src / "model.safetensors").symlink_to(elsewhere / "model.safetensors")
    refused(capsys, tmp_path, src, "model.safetensors: a link to", "outside")


def test_a_tokenizer_linked_to_a_secret_is_not_copied(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    src = write_drafter(tmp_path / "src", "eagle")
    (src / "tokenizer.json").symlink_to(secret)
    (src / "generation_config.json").write_text("{}")
    os.mkfifo(src / "special_tokens_map.json")
    assert run(src, tmp_path / "out", "--to", "vllm") == 0
    out = capsys.readouterr().out
    assert "tokenizer.json: a link to" in out and "outside SRC: not copied" in out
    assert "special_tokens_map.json: not a regular file: not copied" in out
    assert not (tmp_path / "out" / "tokenizer.json").exists() and (tmp_path / "out" / "generation_config.json").is_file()
    assert not any("hunter2" in p.read_text(errors="replace") for p in (tmp_path / "out").iterdir())


def test_a_huggingface_cache_snapshot_converts(tmp_path):
    """Snapshot files are links into the repository's blobs/: inside the input, so they are read and copied."""
    built = write_drafter(tmp_path / "built", "eagle")
    (built / "tokenizer.json").write_text('{"version": "1.0"}')
    repo = tmp_path / "hub" / "models--org--drafter"
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    for i, path in enumerate(sorted(built.iterdir())):
        os.rename(path, repo / "blobs" / f"blob{i}")
        (snapshot / path.name).symlink_to(f"../../blobs/blob{i}")
    assert run(snapshot, tmp_path / "out", "--to", "vllm") == 0
    assert (tmp_path / "out" / "tokenizer.json").read_text() == '{"version": "1.0"}'
    assert not (tmp_path / "out" / "tokenizer.json").is_symlink()


# ---------------------------------------------------------------------------------------------
# failing disks: one line, the file, a fix, exit 4, nothing left


def test_file_size_limit_efbig_is_one_line(tmp_path):
    src = write_drafter(tmp_path / "src", "eagle")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))

    proc = subprocess.run([*CLI, str(src), str(tmp_path / "out"), "--to", "vllm"], capture_output=True, text=True,
                          preexec_fn=limit, timeout=120)
    assert proc.returncode == 4, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{tmp_path / 'out' / 'model.safetensors'}: File too large [EFBIG] while writing model.safetensors" in lines[0]
    assert lines[1].strip().startswith("fix: a file size limit was reached")
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_permission_denied_names_dst(tmp_path, capsys, drafter, monkeypatch):
    import compat.convert.staging as staging

    src = drafter("eagle")

    def denied(path, mode=0o777):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(staging.os, "mkdir", denied)
    err = refused(capsys, tmp_path, src, "Permission denied [EACCES] while creating the temporary directory",
                  "fix: check the permissions")
    assert str(tmp_path) in err


# ---------------------------------------------------------------------------------------------
# signals


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_mid_copy_cleans_up_like_ctrl_c(tmp_path, capsys, drafter, monkeypatch, signum):
    import compat.safetensors_stream as stream

    src, calls, real = drafter("eagle"), {"n": 0}, stream._copy_range
    before = signal.getsignal(signum)  # another test of this process may have set one (Ray sets SIGTERM's)

    def interrupted(source, out, on_bytes):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signum)
        real(source, out, on_bytes)

    monkeypatch.setattr(stream, "_copy_range", interrupted)
    assert run(src, tmp_path / "out", "--to", "vllm") == 130
    assert "interrupted" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []
    assert signal.getsignal(signum) == before  # the handler restored


def test_a_signal_during_the_swap_waits_for_it(tmp_path, drafter, monkeypatch):
    import compat.convert.writer as execute

    real = execute.commit

    def commit_while_signalled(tmp, dst, force):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(tmp, dst, force)

    monkeypatch.setattr(execute, "commit", commit_while_signalled)
    assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm") == 0
    assert (tmp_path / "out" / "model.safetensors").is_file() and leftovers(tmp_path) == []


def test_no_numpy_and_no_torch_needed_for_safetensors(tmp_path):
    """A plain `pip install .` (issue 9 item 8): convert a reduced-vocab drafter, deriving t2d, without either."""
    from ckpt_builders import write_target

    tensors = canonical_tensors()
    del tensors["t2d"]
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    target = write_target(tmp_path / "tgt")
    code = ("import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None\n"
            "from compat.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", code, "convert", "ckpt", str(src), str(tmp_path / "out"), "--to", "sglang",
                           "--target", str(target)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "t2d: derived from d2t" in proc.stdout
