"""The bundles compat leaves in a `fleet/` cache folder, here and on each host, and when they go.

Every compat version (an edit of an editable install is one) makes a new bundle: `compat-HASH.pyz` and its
`index-KEY.json` here, an unpacked `HASH/` folder on each host. Each use touches the one it uses; whatever has not
been used for BUNDLE_MAX_AGE_DAYS is removed by the next run, here when the bundle is built, on a host when compat
asks where its bundle is (an interrupted unpack's `.unpack-*` folder goes the same way). The rule is one function,
`prune_bundles`, run here as it is and sent to the hosts as its source (stdlib only, any Python 3).
"""

from __future__ import annotations

import inspect

BUNDLE_MAX_AGE_DAYS = 30
BUNDLE_MAX_AGE_S = BUNDLE_MAX_AGE_DAYS * 86400


def prune_bundles(root, keep, max_age_s, now=None):
    """Remove from folder `root` the bundles, indexes and interrupted unpacks not used (touched) for `max_age_s`
    seconds, except `keep` (the names of the ones this run uses, which are touched here); the names removed."""
    import os
    import re
    import shutil
    import time

    now = time.time() if now is None else now
    for name in keep:
        try:
            os.utime(os.path.join(root, name))
        except OSError:
            pass
    try:
        names = os.listdir(root)
    except OSError:
        return []
    ours = re.compile(r"^(?:[0-9a-f]{16}|compat-[0-9a-f]{16}\.pyz|index-[0-9a-f]{24}\.json|\.unpack-[\w-]+)$")
    gone = []
    for name in sorted(names):
        path = os.path.join(root, name)
        if name in keep or not ours.match(name) or os.path.islink(path):
            continue
        try:
            if now - os.stat(path).st_mtime < max_age_s:
                continue
            if os.path.isdir(path):
                # renamed first: a folder half removed is never taken for a bundle that is there
                trash = os.path.join(root, ".unpack-pruned-%d-%s" % (os.getpid(), name))
                os.rename(path, trash)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            continue  # in use by another run, or gone meanwhile: left for a later one
        gone.append(name)
    return gone


PRUNE_SOURCE = inspect.getsource(prune_bundles)
