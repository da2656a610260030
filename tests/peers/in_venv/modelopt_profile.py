"""Inside the peers venv: nvidia-modelopt's own code on a speculation_profile.json compat wrote.

    modelopt_profile.py PROFILE [SPECDEC_BENCH_DIR]

- the installed wheel: its version, and its profile loader (`hf_spec_export.read_speculation_profile`) and writer
  (`SpeculativeDecodingExporter.write_speculation_profile`) when it has them (the repository has them; a release may
  not yet): the loaded profile, and the one the writer put beside a checkpoint;
- SPECDEC_BENCH_DIR (ModelOpt's examples/specdec_bench at a pinned commit, fetched by the test, never copied into
  compat): its producer `speculation_profile.build_profile`, fed the same acceptance as ModelOpt's own benchmark
  reports it (`Joint_Acceptance_Rate` keyed by acceptance length, the per-step histogram, `Average_AL`): the profile
  ModelOpt would write for the same measurement.
stdout (last line): JSON.
"""

import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path


def wheel(profile_path: str) -> dict:
    from modelopt.torch.export.plugins import hf_spec_export

    out = {"version": version("nvidia-modelopt"), "loader": None, "writer": None}
    reader = getattr(hf_spec_export, "read_speculation_profile", None)
    if reader is not None:
        out["loader"] = reader(profile_path)
    exporter = getattr(hf_spec_export, "SpeculativeDecodingExporter", None)
    if exporter is not None and hasattr(exporter, "write_speculation_profile"):
        class Exporter(exporter):
            def export(self, export_dir, dtype=None):
                raise NotImplementedError

        with tempfile.TemporaryDirectory() as tmp:
            Exporter(model=object()).write_speculation_profile(Path(tmp), Path(profile_path))
            out["writer"] = json.loads((Path(tmp) / "speculation_profile.json").read_text())
    return out


def producer(profile_path: str, source: str) -> dict:
    sys.path.insert(0, source)
    from specdec_bench.speculation_profile import build_profile  # ModelOpt's own producer

    ours = json.loads(Path(profile_path).read_text())
    hist = {int(k): v for k, v in ours["acceptance_length_histogram"].items()}
    steps = sum(hist.values())
    k = ours["num_speculative_tokens"]
    joint = {length: sum(v for L, v in hist.items() if L >= length) / steps for length in range(1, k + 2)}
    acceptance_out = {"Joint_Acceptance_Rate": joint, "Acceptance_Length_Histogram": hist,
                      "Average_AL": sum(L * v for L, v in hist.items()) / steps}
    return build_profile(acceptance_out, k, method=ours["method"], draft_checkpoint=ours["draft_checkpoint"],
                         target_model=ours["target_model"], measurement_conditions=ours["measurement_conditions"])


def main(argv):
    answer = {"wheel": wheel(argv[1])}
    if len(argv) > 2:
        answer["producer"] = producer(argv[1], argv[2])
    print(json.dumps(answer))


if __name__ == "__main__":
    main(sys.argv)
