# Shared settings for scripts/*.sh (sourced, not executed).
# ROOT: repository root; VENV: the project's virtual environment; BUILD: CMake build tree.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CORIOLIS_VENV:-$ROOT/.venv}"
BUILD="${CORIOLIS_BUILD:-$ROOT/build/venv}"
STAMP="$VENV/.coriolis-setup-stamp"
PYTHON_BOOTSTRAP="${PYTHON:-python3.11}"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Hash of everything that decides the venv contents: requirement files, the setup
# script itself and the interpreter version. A changed hash means "rebuild the venv".
setup_hash() {
    {
        cat "$ROOT"/requirements/*.txt "$ROOT/scripts/setup.sh"
        "$PYTHON_BOOTSTRAP" -c 'import sys; print(sys.version)'
    } | sha256sum | cut -d' ' -f1
}

venv_is_current() {
    [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$(setup_hash)" ]]
}
