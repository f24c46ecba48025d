#!/usr/bin/env bash
# Create (or reuse) .venv with Python 3.11, the ROS 2 Kilted wheels and the pinned tools, repair
# the wheels' CMake paths, then build and install this package into the venv (scripts/install.sh).
# Idempotent: the venv is reused when its stamp (hash of requirements/*.txt, SETUP_RECIPE in
# common.sh and the Python version) matches; otherwise it is recreated from scratch.
# Usage: scripts/setup.sh [--venv-only]   (--venv-only: skip building/installing the package)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

command -v "$PYTHON_BOOTSTRAP" >/dev/null \
    || die "$PYTHON_BOOTSTRAP not found (the ROS 2 wheels need CPython 3.11; set PYTHON=...)"
"$PYTHON_BOOTSTRAP" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || die "$PYTHON_BOOTSTRAP is not Python 3.11 (the ROS 2 Kilted wheels are cp311 only)"

take_lock setup
if venv_is_current; then
    log "reusing $VENV (requirements unchanged)"
else
    start=$SECONDS
    log "creating $VENV (1-2 minutes, ~1.5 GB)"
    rm -rf "$VENV" "$BUILD"  # the build tree refers to the old venv's files
    "$PYTHON_BOOTSTRAP" -m venv "$VENV"
    # One resolver run over all pins; constraints.txt fixes every transitive version too.
    # (The grep drops pip's noise about local index directories that lack a package.)
    "$VENV/bin/python" -m pip install --quiet --no-input \
        -r "$ROOT/requirements/ros.txt" \
        -r "$ROOT/requirements/lib.txt" \
        -r "$ROOT/requirements/dev.txt" \
        -c "$ROOT/requirements/constraints.txt" \
        2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
    "$ROOT/scripts/fix_cmake_paths.sh"
    setup_hash >"$STAMP"
    log "venv ready in $((SECONDS - start)) s"
fi

if [[ "${1:-}" != "--venv-only" ]]; then
    "$ROOT/scripts/install.sh"
fi
