#!/usr/bin/env bash
# Build and install the current tree (interfaces, Python package, launchers, share/, ament index)
# into the venv with CMake + Ninja. Incremental: configure once, then only changed parts rebuild.
# Files installed by the previous run but no longer produced (e.g. a deleted module) are removed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[[ -x "$VENV/bin/python" ]] || die "$VENV missing: run 'make setup' first"
take_lock install

generator=()
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
    if command -v ninja >/dev/null; then generator=(-G Ninja); fi
fi

export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV" VIRTUAL_ENV="$VENV"
export PATH="$VENV/bin:$PATH"

if [[ ! -f "$BUILD/CMakeCache.txt" ]] || ! grep -q "^CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT\$" "$BUILD/CMakeCache.txt"; then
    rm -rf "$BUILD" && mkdir -p "$BUILD"
    log "configuring $BUILD"
    cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$VENV" \
        -DCMAKE_PREFIX_PATH="$VENV" \
        -DPython3_EXECUTABLE="$VENV/bin/python" \
        -DBUILD_TESTING=OFF \
        >"$BUILD/coriolis-configure.log" 2>&1 || { cat "$BUILD/coriolis-configure.log" >&2; die "cmake configure failed"; }
fi

jobs="${CORIOLIS_JOBS:-2}"
cmake --build "$BUILD" --parallel "$jobs" >"$BUILD/coriolis-build.log" 2>&1 \
    || { cat "$BUILD/coriolis-build.log" >&2; die "build failed (log: $BUILD/coriolis-build.log)"; }

manifest="$BUILD/install_manifest.txt"
old_manifest="$BUILD/install_manifest.previous.txt"
[[ -f "$manifest" ]] && cp "$manifest" "$old_manifest" || : >"$old_manifest"
cmake --install "$BUILD" >"$BUILD/coriolis-install.log" 2>&1 \
    || { cat "$BUILD/coriolis-install.log" >&2; die "install failed (log: $BUILD/coriolis-install.log)"; }
stale=0
while IFS= read -r f; do
    [[ -n "$f" && -e "$f" ]] && rm -f -- "$f" && stale=$((stale + 1))
done < <(comm -23 <(sort "$old_manifest") <(sort "$manifest"))
log "installed into $VENV ($stale stale files removed)"
