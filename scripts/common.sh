# Shared settings for scripts/*.sh (sourced, not executed).
# ROOT: repository root; VENV: the project's virtual environment; BUILD: CMake build tree.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CORIOLIS_VENV:-$ROOT/.venv}"
BUILD="${CORIOLIS_BUILD:-$ROOT/build/venv}"
STAMP="$VENV/.coriolis-setup-stamp"
PYTHON_BOOTSTRAP="${PYTHON:-python3.11}"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Bump when the venv recipe in setup.sh changes in a way that needs a fresh venv.
SETUP_RECIPE=1

# Hash of what decides the venv contents: requirement files, the recipe version and the
# interpreter version. A changed hash means "recreate the venv".
setup_hash() {
    {
        cat "$ROOT"/requirements/*.txt
        echo "recipe $SETUP_RECIPE"
        "$PYTHON_BOOTSTRAP" -c 'import sys; print(sys.version)'
    } | sha256sum | cut -d' ' -f1
}

venv_is_current() {
    [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$(setup_hash)" ]]
}

# Serialize concurrent runs (several shells may run make in one checkout): take an exclusive
# lock named $1 for the rest of the calling script.
take_lock() {
    local dir
    dir="$(dirname "$BUILD")"
    mkdir -p "$dir"
    exec {lock_fd}>"$dir/.$1.lock"
    if ! flock -n "$lock_fd"; then
        log "waiting for another $1 in this checkout to finish"
        flock "$lock_fd"
    fi
}
