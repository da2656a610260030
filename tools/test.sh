#!/usr/bin/env bash
# The README's test command, and what .ci/run runs: set up the parts the selected tests need, then run them.
#
#   tools/test.sh [PYTEST ARGS...]     e.g. tools/test.sh -m "not engine" tests/cli
#
# 1. the developer's install, into the python on PATH (use a venv): compat editable with the `test` extra;
# 2. which parts the selected tests need (tests/parts.py): pytest collects them with COMPAT_PARTS_NEEDED set
#    (tests/conftest.py writes the parts their markers and fixtures name); without arguments, every part;
# 3. those parts: torch's CPU build (tests write pytorch_model.bin drafters with it; on PyPI alone, where torch is
#    the CUDA build, set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu first), the venvs the real-engine
#    and peers tests run (.ci/engine-venv, .ci/engine-venv 0.17.1 and 0.16.0,
#    .ci/peers-venv: each reused when it works,
#    repaired when a test left an engine file patched; together about 8.3 GB), and the system parts that are
#    missing (sshd, Chromium, strace, openssl) with Debian's apt-get, as root or through sudo;
# 4. python -m pytest, with the arguments given.
# So `tools/test.sh tests/cli` builds no engine venv. A test whose part is still missing is skipped with the command
# that provides it (under CI=true it fails). TEST_SH_PLAN=1 prints what would be set up (after the collection) and
# sets up nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
say() { echo "== $*" >&2; }
do_() { if [ "${TEST_SH_PLAN:-}" = 1 ]; then echo "would run: $*" >&2; else "$@"; fi; }

say "the developer's install: compat with the test extra"
do_ "$PYTHON" -m pip install -q -e '.[test]'

needed=()
if [ $# -gt 0 ]; then
    list="$(mktemp)"
    trap 'rm -f "$list"' EXIT
    COMPAT_PARTS_NEEDED="$list" "$PYTHON" -m pytest --collect-only -q "$@" >/dev/null 2>&1 || true
    needed=("$list")
    say "the parts the selected tests need: $(tr '\n' ' ' <"$list")"
else
    say "every part (no tests selected: the whole suite)"
fi

packages=()
while IFS=$'\t' read -r name command; do
    case "$command" in
        "apt-get install -y "*) packages+=("${command#apt-get install -y }") ;;
        "bash .ci/"*) say "$name: $command"; do_ $command >/dev/null ;;
        "pip install torch"*) say "$name: $command"; do_ "$PYTHON" -m pip install -q "${command#pip install }" ;;
        *) say "missing $name: $command"; do_ eval "$PYTHON -m $command" ;;
    esac
done < <("$PYTHON" tests/parts.py todo "${needed[@]}")
if [ ${#packages[@]} -gt 0 ]; then
    say "Debian's ${packages[*]} (tests/parts.py: the parts missing here; apt-get needs root)"
    sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    do_ "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive do_ "${sudo[@]}" apt-get install -y -qq "${packages[@]}"
fi

say "the tests"
# two workers (pytest-xdist, in the test extra): most tests wait on a child process, so two share 2 cores well;
# COMPAT_TEST_WORKERS=0 runs in one process (tests/conftest.py keeps each shared part on one worker)
workers=(-n "${COMPAT_TEST_WORKERS:-2}" --dist loadgroup)
[ "${COMPAT_TEST_WORKERS:-2}" = 0 ] && workers=()
if [ "${TEST_SH_PLAN:-}" = 1 ]; then echo "would run: $PYTHON -m pytest ${workers[*]} $*" >&2; exit 0; fi
exec "$PYTHON" -m pytest "${workers[@]}" "$@"
