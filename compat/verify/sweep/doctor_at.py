"""`compat doctor`'s verdict at measure time, for the profile: the server's launch line (as far as the server tells
it) diagnosed against the release it runs, when its target and drafter are readable here. A deployment measured
from another machine gets the command to run where they are, never a guessed verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compat.core.errors import CompatError


def doctor_verdict(doc: dict, *, cache_dir: str | None = None, offline: bool = False) -> dict[str, Any]:
    from compat.verify.server.summary import double_quoted

    server = doc["server"]
    from compat.release_ref import ReleaseRef

    ref = (ReleaseRef.released(server["engine"], server["version"]) if server.get("version")
           else ReleaseRef.installed(server["engine"], None))
    release = ref.spec()
    command = f"compat doctor {' '.join(ref.args('doctor'))} --launch {double_quoted(doc['launch'])}"
    out: dict[str, Any] = {"ran": False, "release": release, "command": command}
    target, drafter = server.get("model"), server.get("draft_model")
    missing = [f"{what} {path}" for what, path in (("target", target), ("drafter", drafter))
               if not path or not Path(path).is_dir()]
    if missing:
        out["why"] = ("not readable here: " + ", ".join(m if " None" not in m else m.replace(" None", " (not reported)")
                                                        for m in missing) + "; run the command where they are")
        return out
    try:
        from compat.doctor import DEFAULT_TOPK, FAIL, WARN, Options, diagnose, read_drafter, read_target
        from compat.launch_line import read_line
        from compat.sources import open_tree

        tree = open_tree(release, cache_dir=cache_dir, offline=offline, progress=False)
        target_read = read_target(target)
        diagnosis = diagnose(tree, target_read, read_drafter(drafter, target_read),
                             Options(server.get("num_speculative_tokens") or 3, DEFAULT_TOPK, {},
                                     launch=read_line(doc["launch"])))
    except CompatError as err:
        out["why"] = f"doctor could not run: {err.message}"
        return out
    except Exception as err:  # noqa: BLE001 - the measurement is kept whatever doctor makes of the pair
        out["why"] = f"doctor failed on this pair ({type(err).__name__}: {err}); run the command to see it"
        return out
    checks = diagnosis["checks"]
    return {**out, "ran": True, "verdict": diagnosis["verdict"],
            "failing": [c["check"] for c in checks if c["verdict"] == FAIL],
            "warnings": [c["check"] for c in checks if c["verdict"] == WARN]}
