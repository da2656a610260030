"""Inside the peers venv: huggingface_hub's own answers about a Hugging Face cache.

argv: a JSON file {"lookups": [{"cache", "repo_id", "revision", "filename"}...], "envs": [{VAR: value}...],
"scan": CACHE}; stdout (last line): {"lookups": [path | "NO_EXIST" | null], "caches": [HF_HUB_CACHE per env],
"scan": {repo_id: {"refs": [...], "commits": [...]}}}.
"""

import importlib
import json
import os
import sys

import huggingface_hub.constants as constants
from huggingface_hub import _CACHED_NO_EXIST, scan_cache_dir, try_to_load_from_cache

job = json.load(open(sys.argv[1]))
answers = []
for q in job["lookups"]:
    found = try_to_load_from_cache(q["repo_id"], q["filename"], cache_dir=q["cache"], revision=q["revision"])
    answers.append("NO_EXIST" if found is _CACHED_NO_EXIST else found)
caches = []
clean = {k: v for k, v in os.environ.items()
         if k not in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")}
for env in job["envs"]:
    os.environ.clear()
    os.environ.update({**clean, **env})
    caches.append(importlib.reload(constants).HF_HUB_CACHE)
scan = {repo.repo_id: {"refs": sorted(ref for rev in repo.revisions for ref in rev.refs),
                       "commits": sorted(rev.commit_hash for rev in repo.revisions)}
        for repo in scan_cache_dir(job["scan"]).repos}
print(json.dumps({"lookups": answers, "caches": caches, "scan": scan}))
