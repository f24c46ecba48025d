#!/usr/bin/env bash
# Run a command in the project's environment (venv, ament index, loopback-only ROS 2 traffic).
# ROS_DOMAIN_ID: kept if set, otherwise derived from this process id (1..100).
# Usage: scripts/run.sh python -m coriolis_ros.demo
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
[[ -n "${VIRTUAL_ENV:-}" ]] || exit 1
# env.sh sets PYTHONSAFEPATH=1: `python -m pkg` / `python -c` from the repository root would
# otherwise put the source tree first on sys.path and import ./coriolis_ros (no msg/srv).
exec "$@"
