"""Bad input gets a clear error and leaves nothing behind; SRC is never touched; DST is all or nothing."""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from pathlib import Path

import numpy as np
import pytest

import compat.safetensors_stream as stream
from compat.cli import main as compat_main
from compat.safetensors_stream import hash_tensor, read_header
from ckpt_builders import DRAFT_VOCAB, TRAINED_ON, VOCAB, canonical_tensors, eagle_config, write_drafter, write_target


def run(*args) -> int:
    return compat_main(["convert", "ckpt", *(str(a) for a in args)])


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if "compat-" in p.name)


def tree_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        stat = path.stat()
        digest.update(f"{path.relative_to(directory)} {stat.st_mode} {stat.st_mtime_ns}".encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def edit_header(path: Path, edit) -> None:
    """Rewrite the JSON header of a safetensors file in place, keeping its data bytes."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    raw = edit(header)
    raw = raw if isinstance(raw, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + blob[8 + n:])


def assert_refused(capsys, tmp_path, args, code: int, *needles: str) -> str:
    dst = tmp_path / "out"
    assert run(args[0], dst, *args[1:]) == code
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err, err
    assert not dst.exists() and leftovers(tmp_path) == []
    return err


# ---------------------------------------------------------------------------------------------
# bad inputs, each refused with a clear error and no output left behind


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _header_beyond(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[:8] = struct.pack("<Q", len(data) * 4)
    path.write_bytes(bytes(data))


def _not_json(path: Path) -> None:
    edit_header(path, lambda h: b"{" + b"x" * 40)


def _overlap(path: Path) -> None:
    def edit(h):
        names = sorted((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][0])
        a, b = h[names[0]], h[names[1]]
        b["data_offsets"] = [a["data_offsets"][0], a["data_offsets"][0] + (b["data_offsets"][1] - b["data_offsets"][0])]

    edit_header(path, edit)


def _out_of_range(path: Path) -> None:
    def edit(h):
        t = h["norm.weight"]
        t["data_offsets"] = [t["data_offsets"][0] + 10**9, t["data_offsets"][1] + 10**9]

    edit_header(path, edit)


def _duplicate(path: Path) -> None:
    def edit(h):
        entry = json.dumps(h["norm.weight"])
        return json.dumps(h).encode()[:-1] + f', "norm.weight": {entry}}}'.encode()

    edit_header(path, edit)


def _unknown_dtype(path: Path) -> None:
    edit_header(path, lambda h: h["norm.weight"].update(dtype="Q4_K"))


CORRUPTIONS = {
    "truncated file": (_truncate, "out of range"),
    "header length beyond the file": (_header_beyond, "beyond the end of the file"),
    "header not JSON": (_not_json, "not valid JSON"),
    "overlapping offsets": (_overlap, "overlaps"),
    "out-of-range offsets": (_out_of_range, "out of range"),
    "duplicate names": (_duplicate, "appears twice"),
    "unknown dtype": (_unknown_dtype, "unknown dtype 'Q4_K'"),
}


@pytest.mark.parametrize("case", list(CORRUPTIONS))
def test_corrupt_safetensors_refused(tmp_path, capsys, drafter, case):
    corrupt, needle = CORRUPTIONS[case]
    src = drafter("eagle")
    corrupt(src / "model.safetensors")
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, needle, "model.safetensors")


@pytest.mark.parametrize("missing", ["fc.weight", "lm_head.weight", "norm.weight"])
def test_missing_required_tensor_refused(tmp_path, capsys, missing):
    tensors = canonical_tensors()
    del tensors[missing]
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, f"no {missing}", "randomly initialised")


def test_missing_layer_tensor_refused(tmp_path, capsys):
    tensors = canonical_tensors()
    del tensors["layers.0.self_attn.q_proj.weight"]
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    assert_refused(capsys, tmp_path, [src, "--to", "sglang"], 4, "layers.0.self_attn.q_proj.weight")


def test_unknown_tensor_refused(tmp_path, capsys):
    tensors = canonical_tensors()
    tensors["optimizer.exp_avg"] = np.zeros(3, np.float32)
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, "optimizer.exp_avg", "skip them silently")


def _inconsistent_t2d(t):
    mask = t["t2d"].copy()
    on, off = np.flatnonzero(mask)[5], np.flatnonzero(~mask)[0]
    mask[on], mask[off] = False, True  # same count, different set
    t["t2d"] = mask


def _negative_d2t(t):
    t["d2t"] = t["d2t"].copy()
    t["d2t"][3] = -1


def _absolute_d2t(t):
    t["d2t"] = np.flatnonzero(t["t2d"]).astype(np.int64)  # absolute ids, the classic mistake
    del t["t2d"]


def _t2d_count(t):
    t["t2d"] = t["t2d"].copy()
    t["t2d"][np.flatnonzero(~t["t2d"])[0]] = True


VOCAB_CASES = {
    "d2t and t2d disagree": (_inconsistent_t2d, "d2t and t2d disagree"),
    "negative offset": (_negative_d2t, "is negative"),
    "absolute ids": (_absolute_d2t, "looks like absolute target ids"),
    "t2d count": (_t2d_count, f"marks {DRAFT_VOCAB + 1} target tokens"),
}


@pytest.mark.parametrize("case", list(VOCAB_CASES))
def test_inconsistent_vocab_maps_refused_with_the_convention(tmp_path, capsys, case):
    damage, needle = VOCAB_CASES[case]
    tensors = canonical_tensors()
    damage(tensors)
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    err = assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, needle)
    if case != "t2d count":
        assert "target_id = draft_id + d2t[draft_id]" in err


def test_reduced_vocab_without_maps_refused(tmp_path, capsys):
    tensors = canonical_tensors()
    del tensors["d2t"], tensors["t2d"]
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    assert_refused(capsys, tmp_path, [src, "--to", "sglang"], 4, "neither d2t nor t2d")


def test_lm_head_rows_must_equal_draft_vocab(tmp_path, capsys):
    config = eagle_config()
    config["draft_vocab_size"] = DRAFT_VOCAB * 2
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, f"lm_head.weight has {DRAFT_VOCAB} rows")


@pytest.mark.parametrize("derive", ["t2d", "d2t"])
def test_missing_map_derived_from_the_other(tmp_path, derive):
    tensors = canonical_tensors()
    expected = tensors[derive].tobytes()
    del tensors[derive]
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors)
    assert run(src, tmp_path / "out", "--to", "vllm") == 0
    from safetensors.numpy import load_file

    assert load_file(str(tmp_path / "out" / "model.safetensors"))[derive].tobytes() == expected


class NotATensor:
    pass


@pytest.mark.parametrize("extra", ["object", "int"])
def test_pickle_with_more_than_tensors_refused(tmp_path, capsys, extra, torch):
    src = tmp_path / "src"
    src.mkdir()
    state = {k: torch.from_numpy(v.copy()) for k, v in canonical_tensors().items()}
    state["extra"] = NotATensor() if extra == "object" else 7
    torch.save(state, src / "pytorch_model.bin")
    (src / "config.json").write_text(json.dumps(eagle_config()))
    err = assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, "pytorch_model.bin")
    assert ("more than plain tensors" in err) if extra == "object" else ("not only tensors" in err)


def test_truncated_pickle_refused(tmp_path, capsys, torch):
    src = tmp_path / "src"
    src.mkdir()
    torch.save({k: torch.from_numpy(v.copy()) for k, v in canonical_tensors().items()}, src / "pytorch_model.bin")
    data = (src / "pytorch_model.bin").read_bytes()
    (src / "pytorch_model.bin").write_bytes(data[: len(data) // 3])
    (src / "config.json").write_text(json.dumps(eagle_config()))
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, "truncated or corrupt")


# ---------------------------------------------------------------------------------------------
# target checks


@pytest.mark.parametrize("change, needle", [
    (dict(hidden=128), "hidden_size is 128"),
    (dict(vocab=512), "the target's is 512"),
    (dict(layers=5), "outside the target's 5 layers"),
])
def test_target_mismatch_refused(tmp_path, capsys, drafter, change, needle):
    target = write_target(tmp_path / "tgt", **change)
    assert_refused(capsys, tmp_path, [drafter("eagle"), "--to", "vllm", "--target", target], 4, needle, "--target")


def test_target_as_config_json_and_default_ids(tmp_path, drafter):
    config = eagle_config()
    config["architectures"] = ["LlamaForCausalLM"]  # SafeAILab: no ids, trained on the default layers
    del config["eagle_config"]
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    target = write_target(tmp_path / "tgt", layers=32)
    assert run(src, tmp_path / "out", "--to", "vllm", "--target", target / "config.json") == 0
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert written["eagle_aux_hidden_state_layer_ids"] == [2, 16, 29]
    assert run(src, tmp_path / "plain", "--to", "vllm") == 0
    assert "eagle_aux_hidden_state_layer_ids" not in json.loads((tmp_path / "plain" / "config.json").read_text())


# ---------------------------------------------------------------------------------------------
# layer-id conventions


def test_ambiguous_convention_requires_the_flag(tmp_path, capsys):
    config = eagle_config()
    config["eagle_config"]["use_mtp_layernorm"] = False  # a ModelOpt export
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    err = assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, "--layer-ids-convention", "capture-before")
    assert "ModelOpt" in err
    assert run(src, tmp_path / "a", "--to", "vllm", "--layer-ids-convention", "output-of") == 0
    assert json.loads((tmp_path / "a" / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == TRAINED_ON
    assert run(src, tmp_path / "b", "--to", "vllm", "--layer-ids-convention", "capture-before") == 0
    assert json.loads((tmp_path / "b" / "config.json").read_text())["eagle_aux_hidden_state_layer_ids"] == [i - 1 for i in TRAINED_ON]


def test_equal_top_level_and_nested_ids_are_ambiguous(tmp_path, capsys):
    config = eagle_config()
    config["eagle_aux_hidden_state_layer_ids"] = config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    src = write_drafter(tmp_path / "src", "eagle", config=config)
    assert_refused(capsys, tmp_path, [src, "--to", "sglang"], 4, "TorchSpec --vllm")


def test_layer_ids_flag_overrides(tmp_path, drafter, llama_target):
    out = tmp_path / "out"
    assert run(drafter("eagle"), out, "--to", "sglang", "--layer-ids", "2,4", "6", "--layer-ids-convention", "output-of",
               "--target", llama_target) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 4, 6]
    record = json.loads((out / "compat_convert.json").read_text())
    assert record["layer_ids"]["capture_before"] == [3, 5, 7] and "--layer-ids" in record["layer_ids"]["origin"]


# ---------------------------------------------------------------------------------------------
# safety: dry run, DST, SRC, crashes, verification


def test_dry_run_writes_nothing_and_prints_the_plan(tmp_path, capsys, drafter):
    src = drafter("eagle")
    assert run(src, tmp_path / "out", "--to", "vllm", "--dry-run") == 0
    out = capsys.readouterr().out
    assert "midlayer.self_attn.q_proj.weight -> layers.0.self_attn.q_proj.weight" in out
    assert "eagle_aux_hidden_state_layer_ids" in out and "dry run" in out
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []
    assert run(src, tmp_path / "out", "--to", "vllm", "--dry-run", "--json") == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["layer_ids"]["capture_before"] == TRAINED_ON
    assert {"source": "midlayer.mlp.up_proj.weight", "dest": "layers.0.mlp.up_proj.weight"}.items() <= \
        next(t for t in plan["tensors"] if t["canonical"] == "layers.0.mlp.up_proj.weight").items()
    assert not (tmp_path / "out").exists()


def test_dst_exists_refused_without_force(tmp_path, capsys, drafter):
    src = drafter("eagle")
    dst = tmp_path / "out"
    dst.mkdir()
    (dst / "keep.txt").write_text("mine")
    assert run(src, dst, "--to", "vllm") == 4
    assert "already exists" in capsys.readouterr().err and (dst / "keep.txt").read_text() == "mine"
    assert run(src, dst, "--to", "vllm", "--force") == 0
    assert not (dst / "keep.txt").exists() and (dst / "model.safetensors").is_file()
    assert leftovers(tmp_path) == []


def test_src_untouched(tmp_path, drafter, llama_target):
    src = drafter("eagle")
    (src / "tokenizer.json").write_text("{}")
    before = tree_digest(src)
    for to in ("vllm", "sglang", "speculators", "eagle"):
        assert run(src, tmp_path / f"out-{to}", "--to", to, "--target", llama_target, "--dtype", "bfloat16") == 0
    assert tree_digest(src) == before
    assert (tmp_path / "out-vllm" / "tokenizer.json").read_text() == "{}"


def test_dst_inside_src_refused(tmp_path, capsys, drafter):
    src = drafter("eagle")
    assert run(src, src / "sub", "--to", "vllm") == 2
    assert "overlaps SRC" in capsys.readouterr().err


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_crash_mid_copy_leaves_no_dst(tmp_path, drafter, monkeypatch, error):
    src = drafter("eagle")
    calls = {"n": 0}
    real = stream._copy_range

    def flaky(source, out, on_bytes):
        calls["n"] += 1
        if calls["n"] == 3:
            raise error
        real(source, out, on_bytes)

    monkeypatch.setattr(stream, "_copy_range", flaky)
    if isinstance(error, KeyboardInterrupt):  # the CLI says "interrupted" and exits 130
        assert run(src, tmp_path / "out", "--to", "vllm") == 130
    else:
        with pytest.raises(type(error), match=f"^{re.escape(str(error))}$"):  # the error itself, not another
            run(src, tmp_path / "out", "--to", "vllm")
    assert calls["n"] == 3
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_crash_with_force_keeps_the_old_dst(tmp_path, capsys, drafter, monkeypatch):
    src = drafter("eagle")
    dst = tmp_path / "out"
    assert run(src, dst, "--to", "vllm") == 0
    before = tree_digest(dst)

    def full_disk(source, out, on_bytes):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(stream, "_copy_range", full_disk)
    capsys.readouterr()
    assert run(src, dst, "--to", "eagle", "--force") == 4  # an OSError is a refusal: one line and a fix, no traceback
    err = capsys.readouterr().err
    assert f"{dst / 'model.safetensors'}: No space left on device [ENOSPC] while writing model.safetensors" in err
    assert "fix: free space" in err and "Traceback" not in err
    assert tree_digest(dst) == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("checksum", ["none", "crc32", "sha256"])
@pytest.mark.parametrize("kernel_copy", [True, False])
def test_flipped_byte_fails_verification_and_writes_nothing(tmp_path, capsys, drafter, monkeypatch, checksum, kernel_copy):
    src = drafter("eagle")
    real = stream._copy_range
    if not kernel_copy:
        monkeypatch.setattr(stream.os, "copy_file_range", no_copy_file_range)
    monkeypatch.setattr(stream, "COPY_RANGE_BYTES", 1000)  # fc.weight lands in several pieces, each verified on its own

    def corrupting(source, out, on_bytes):  # the disk flips a bit in fc.weight's last piece as it is written
        def flip_then_report(n):
            if "fc.weight" in source.label and out.tell() == end:
                position = out.tell() - 7
                byte = os.pread(reader, 1, position)
                os.pwrite(out.fileno(), bytes([byte[0] ^ 1]), position)
            on_bytes(n)

        end = out.tell() + source.nbytes
        reader = os.open(out.name, os.O_RDONLY)
        try:
            real(source, out, flip_then_report)
        finally:
            os.close(reader)

    monkeypatch.setattr(stream, "_copy_range", corrupting)
    assert run(src, tmp_path / "out", "--to", "vllm", "--checksum", checksum) == 1
    err = capsys.readouterr().err
    nbytes = read_header(src / "model.safetensors").tensors["fc.weight"].nbytes
    assert f"fc.weight: byte {nbytes - 7} of {nbytes} read back from the output is 0x" in err and "verification" in err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def no_copy_file_range(*args, **kwargs):
    raise OSError(18, "Invalid cross-device link")


def test_userspace_fallback_when_the_kernel_cannot_copy(tmp_path, drafter, monkeypatch):
    monkeypatch.setattr(stream.os, "copy_file_range", no_copy_file_range)
    src = drafter("eagle")
    assert run(src, tmp_path / "out", "--to", "vllm") == 0
    from safetensors.numpy import load_file

    a, b = load_file(str(src / "model.safetensors")), load_file(str(tmp_path / "out" / "model.safetensors"))
    assert {k.replace("midlayer.", "layers.0."): v.tobytes() for k, v in a.items()} == {k: v.tobytes() for k, v in b.items()}


def test_json_result(tmp_path, capsys, drafter):
    assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["schema"] == "compat.convert/1" and result["result"]["verified"]
    assert result["result"]["tensors"]["fc.weight"]["checksum"] is None  # verified byte for byte; no checksum asked for
    assert run(drafter("eagle"), tmp_path / "sums", "--to", "vllm", "--json", "--checksum", "crc32") == 0
    result = json.loads(capsys.readouterr().out)
    expected = hash_tensor(read_header(tmp_path / "sums" / "model.safetensors").tensors["fc.weight"], "crc32")
    assert result["result"]["tensors"]["fc.weight"]["checksum"] == expected
    record = json.loads((tmp_path / "sums" / "compat_convert.json").read_text())
    assert record["checksum"] == "crc32" and record["tensors"]["fc.weight"]["checksum"] == expected
    assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm", "--json") == 4
    failure = json.loads(capsys.readouterr().out)
    assert failure == {"schema": "compat.error/1", "error": failure["error"], "fix": failure["fix"], "exit_code": 4}
    assert "already exists" in failure["error"] and "--force" in failure["fix"]


def test_usage_errors_exit_2(tmp_path, drafter, capsys):
    src = drafter("eagle")
    assert compat_main(["convert", "ckpt", str(src), str(tmp_path / "o"), "--to", "nowhere"]) == 2  # argparse's usage error
    assert run(src, tmp_path / "o", "--to", "vllm", "--engine-version", "latest") == 2
    assert run(src, tmp_path / "o", "--to", "vllm", "--max-shard-size", "huge") == 2
    assert "--max-shard-size" in capsys.readouterr().err


def test_model_prefix_stripped_and_layer_count_fixed(tmp_path, drafter):
    tensors = {("model." + k if k != "lm_head.weight" else k): v for k, v in canonical_tensors().items()}
    config = eagle_config()
    config["num_hidden_layers"] = 28  # copied from the target by some templates
    src = write_drafter(tmp_path / "src", "vllm", tensors=tensors, config=config)
    # names are already prefixed; the writer maps layers.0 -> layers.0 (vllm), so they stay model.layers.0...
    assert run(src, tmp_path / "out", "--to", "vllm", "--from", "eagle") == 0
    from safetensors.numpy import load_file

    names = set(load_file(str(tmp_path / "out" / "model.safetensors")))
    assert "layers.0.self_attn.q_proj.weight" in names and not any(n.startswith("model.") for n in names)
    assert json.loads((tmp_path / "out" / "config.json").read_text())["num_hidden_layers"] == 1


def test_full_vocab_drafter_drops_d2t_for_vllm(tmp_path, llama_target):
    tensors = canonical_tensors()
    tensors["lm_head.weight"] = np.zeros((VOCAB, 64), np.float16)
    tensors["d2t"] = np.zeros(VOCAB, np.int64)
    tensors["t2d"] = np.ones(VOCAB, bool)
    config = eagle_config()
    config["draft_vocab_size"] = VOCAB
    src = write_drafter(tmp_path / "src", "eagle", tensors=tensors, config=config)
    assert run(src, tmp_path / "v", "--to", "vllm") == 0
    assert run(src, tmp_path / "s", "--to", "sglang", "--target", llama_target) == 0
    from safetensors.numpy import load_file

    assert "d2t" not in load_file(str(tmp_path / "v" / "model.safetensors"))
    assert "d2t" in load_file(str(tmp_path / "s" / "model.safetensors"))


def test_progress_bar_on_a_terminal_goes_to_stderr(tmp_path, capsys, drafter, monkeypatch):
    from rich.console import Console

    monkeypatch.setattr(Console, "is_terminal", property(lambda self: True))
    assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm") == 0
    captured = capsys.readouterr()
    assert "copying tensors" in captured.err and "copying tensors" not in captured.out


def test_output_directory_mode_follows_umask(tmp_path, drafter):
    old = os.umask(0o022)
    try:
        assert run(drafter("eagle"), tmp_path / "out", "--to", "vllm") == 0
    finally:
        os.umask(old)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o755


def _sharded_source(tmp_path, drafter) -> Path:
    sharded = tmp_path / "sharded"
    assert run(drafter("eagle"), sharded, "--to", "eagle", "--max-shard-size", "40KB") == 0
    return sharded


def test_sharded_source_missing_shard_refused(tmp_path, capsys, drafter):
    src = _sharded_source(tmp_path, drafter)
    next(iter(sorted(src.glob("model-*.safetensors")))).unlink()
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, "which is missing")


def test_sharded_source_index_disagreeing_with_shards_refused(tmp_path, capsys, drafter):
    src = _sharded_source(tmp_path, drafter)
    index = json.loads((src / "model.safetensors.index.json").read_text())
    files = sorted(set(index["weight_map"].values()))
    moved = next(name for name, file in index["weight_map"].items() if file == files[0])
    index["weight_map"][moved] = files[1]
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    assert_refused(capsys, tmp_path, [src, "--to", "vllm"], 4, f"tensor {moved!r}", "model.safetensors.index.json")


def test_legacy_pickle_format_loads_without_mmap(tmp_path, torch):
    src = tmp_path / "src"
    src.mkdir()
    state = {(k.replace("layers.0.", "midlayer.")): torch.from_numpy(v.copy()) for k, v in canonical_tensors().items()}
    torch.save(state, src / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    (src / "config.json").write_text(json.dumps(eagle_config()))
    assert run(src, tmp_path / "out", "--to", "vllm") == 0
    from safetensors.numpy import load_file

    out = load_file(str(tmp_path / "out" / "model.safetensors"))
    assert out["fc.weight"].tobytes() == state["fc.weight"].numpy().tobytes()
