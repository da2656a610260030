"""`compat convert ckpt`: make an EAGLE-3 drafter loadable and correct on a named engine release.

Data flow: checkpoint -> layout (checkpoints/) -> checkpoint, one job per module:

    source.py       read SRC: config.json, the record, tensor headers (never the tensor bytes);
                    regular files inside SRC only (compat/core/files.py)
    bin.py          pytorch_model.bin: pickle_scan.py reads what the pickle would build, every tensor's
                    storage and strides are checked against the file, then torch.load(weights_only=True)
    checks.py       layers, shapes, vocab maps (compat/vocab_maps.py), the --target (compat/target.py)
    plan.py         make_plan: source layout, canonical config, layer ids, destination config and names
    writer.py       execute(): copy tensor bytes into an owner-marked directory beside DST, verify (verification.py),
                    write the provenance record (record.py), fsync, swap into place (staging.py)
    staging.py      owner markers, recovery of what killed runs left, the RENAME_EXCHANGE swap
    interrupts.py   SIGINT/SIGTERM/SIGHUP clean up; none lands inside the swap
"""

from .writer import Result, execute
from .interrupts import Interrupted
from .plan import DEFAULT_MAX_SHARD, Options, Plan, PlannedTensor, make_plan
from .record import build_record
from .source import BIN_FILE, INDEX_FILE, SINGLE_FILE, SourceCheckpoint, SourceTensor, check_source, open_source
from .staging import find_leftovers, recover_leftovers
from .verification import VerificationError, verify

__all__ = [
    "BIN_FILE", "DEFAULT_MAX_SHARD", "INDEX_FILE", "SINGLE_FILE", "Interrupted", "Options", "Plan", "PlannedTensor",
    "Result", "SourceCheckpoint", "build_record", "SourceTensor", "VerificationError", "execute", "find_leftovers", "make_plan",
    "check_source", "open_source", "recover_leftovers", "verify",
]
