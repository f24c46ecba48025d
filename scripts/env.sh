# Source this file to work by hand with the installed package:  source scripts/env.sh
# Activates .venv, points the ament index at it and keeps ROS 2 traffic on loopback.
# ROS_DOMAIN_ID: kept if already set, otherwise derived from this shell's pid (1..100).
# PYTHONSAFEPATH=1: `python -m coriolis_ros...` from the repository root imports the installed
# package (with its generated msg/srv), not the source tree in the current directory.
_coriolis_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_coriolis_venv="${CORIOLIS_VENV:-$_coriolis_root/.venv}"
if [[ ! -x "$_coriolis_venv/bin/python" ]]; then
    echo "scripts/env.sh: $_coriolis_venv missing; run 'make setup' first" >&2
else
    # shellcheck disable=SC1091
    source "$_coriolis_venv/bin/activate"
    case ":${AMENT_PREFIX_PATH:-}:" in
        *":$_coriolis_venv:"*) ;;
        *) export AMENT_PREFIX_PATH="${AMENT_PREFIX_PATH:+$AMENT_PREFIX_PATH:}$_coriolis_venv" ;;
    esac
    export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
    export PYTHONSAFEPATH=1
    export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 100 + 1 ))}"
fi
unset _coriolis_root _coriolis_venv
