#!/usr/bin/env bash
# The ROS 2 wheels export CMake files that point at the wheel build host's Python include dir and
# NumPy include dir (/opt/python/cp311-cp311/...). Re-point them at this venv's interpreter.
# Safe to run more than once.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

py_inc="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
np_inc="$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')"
[[ -f "$py_inc/Python.h" ]] || die "Python headers not found in $py_inc (install the python3.11 dev headers)"
[[ -d "$np_inc" ]] || die "NumPy include dir $np_inc not found"

bad='/opt/python/cp311-cp311'
mapfile -d '' files < <(grep -rlZ --include='*.cmake' "$bad/" "$VENV/share" || true)
for f in "${files[@]}"; do
    sed -i \
        -e "s#$bad/lib/python3.11/site-packages/numpy/_core/include#$np_inc#g" \
        -e "s#$bad/include/python3.11#$py_inc#g" \
        "$f"
done
if left="$(grep -rl --include='*.cmake' "$bad/" "$VENV/share")"; then
    die "unrepaired build-host paths remain in: $left"
fi
log "repaired ${#files[@]} CMake files"
