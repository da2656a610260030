"""`compat verify --server URL`: measure a running vLLM or SGLang deployment through its OpenAI-compatible API.

`verify_server(ServerRun(...), progress)` returns the `--json` document (run.py measures, summary.py judges);
render.py prints it for people. The names of the server's counters come from its release's source, read by
the probes (probes/*/spec_decode_metrics.py, request_metrics.py, server_info*.py).
"""

from __future__ import annotations

from compat.verify.server.prompts import PromptSet, builtin, from_file
from compat.verify.server.run import (DEFAULT_CONCURRENCY, DEFAULT_MAX_TOKENS, DEFAULT_NUM_PROMPTS,
                                      DEFAULT_REQUEST_TIMEOUT, Progress, ServerRun)


def verify_server(run: ServerRun, progress: Progress | None = None) -> dict:
    from compat.verify.server.run import measure
    from compat.verify.server.summary import document

    return document(measure(run, progress))


__all__ = ["verify_server", "ServerRun", "Progress", "PromptSet", "builtin", "from_file", "DEFAULT_CONCURRENCY",
           "DEFAULT_MAX_TOKENS", "DEFAULT_NUM_PROMPTS", "DEFAULT_REQUEST_TIMEOUT"]
