"""Test-wide ROS 2 isolation for coriolis_ros.

At import (before any test module can import rclpy) this file sets, in ``os.environ``:

* ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` -- always; DDS traffic stays on 127.0.0.1.
* ``ROS_DOMAIN_ID`` -- unless already set, a domain in 1..100 that no other pytest run on this
  machine holds (an exclusive ``flock`` on ``$TMPDIR/coriolis_ros_domains/<id>.lock``, kept until
  this process exits; the search starts at a pid-derived id).
* ``AMENT_PREFIX_PATH`` -- the venv prefix is appended when missing, so ``ament_index_python``
  finds ``coriolis_ros`` and the ROS core packages installed in the venv.
* ``PYTHONSAFEPATH=1`` -- subprocesses started as ``python -c ...`` / ``python -m ...`` do not put
  their working directory on ``sys.path``; from the repository root they would otherwise import
  the source ``coriolis_ros`` (no msg/srv) instead of the installed one.

Fixture ``ros_domain_env`` (function scope) gives each test its own domain::

    def test_something(ros_domain_env):
        domain_id, env = ros_domain_env          # a RosDomain named tuple
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=domain_id)
        try:
            node = rclpy.create_node("probe", context=context)
            proc = subprocess.Popen([sys.executable, "-c", CODE], env=env)
            ...
        finally:
            rclpy.try_shutdown(context=context)

``domain_id`` is in 0..101, differs from the session domain and from the domain of every other
test running at the same time on this machine (same lock files), and stays reserved until the
test ends. ``env`` is a copy of ``os.environ`` with ``ROS_DOMAIN_ID=str(domain_id)`` and
``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``: pass it to subprocesses that must talk to the test.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import pytest

# Domain ids 0..101 are valid on Linux with the default DDS port mapping.
DOMAIN_MIN = 0
DOMAIN_MAX = 101
_LOCK_DIR = Path(tempfile.gettempdir()) / "coriolis_ros_domains"
_held: dict[int, int] = {}  # domain id -> open lock file descriptor
_reservations = 0  # rotates the search start so consecutive tests get different ids


class RosDomain(NamedTuple):
    """A reserved ROS domain: its id and an environment for subprocesses using it."""

    domain_id: int
    env: dict[str, str]


def _try_lock(domain_id: int) -> bool:
    """Reserve ``domain_id`` for this process; False if another process holds it."""
    if domain_id in _held:
        return False
    _LOCK_DIR.mkdir(mode=0o777, exist_ok=True)
    fd = os.open(_LOCK_DIR / f"{domain_id}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held[domain_id] = fd
    return True


def _release(domain_id: int) -> None:
    fd = _held.pop(domain_id, None)
    if fd is not None:
        os.close(fd)  # closing the descriptor drops the flock


def reserve_domain(low: int = DOMAIN_MIN, high: int = DOMAIN_MAX) -> int:
    """Reserve and return a free domain id in ``low..high`` (inclusive)."""
    global _reservations
    span = high - low + 1
    start = (os.getpid() + _reservations) % span
    _reservations += 1
    for i in range(span):
        candidate = low + (start + i) % span
        if _try_lock(candidate):
            return candidate
    raise RuntimeError(f"no free ROS domain id in {low}..{high} (all reserved by other runs)")


def _setup_environment() -> None:
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    os.environ["PYTHONSAFEPATH"] = "1"
    if not os.environ.get("ROS_DOMAIN_ID"):
        os.environ["ROS_DOMAIN_ID"] = str(reserve_domain(1, 100))
    else:
        # An id chosen by the caller: keep per-test domains away from it when we can.
        try:
            _try_lock(int(os.environ["ROS_DOMAIN_ID"]))
        except ValueError:
            pass
    prefix = sys.prefix
    if (Path(prefix) / "share" / "ament_index").is_dir():
        paths = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
        if prefix not in paths:
            os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join([*paths, prefix])


_setup_environment()


@pytest.fixture
def ros_domain_env():
    """Yield a :class:`RosDomain` with a fresh domain id (0..101) reserved for this test."""
    domain_id = reserve_domain()
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    try:
        yield RosDomain(domain_id, env)
    finally:
        _release(domain_id)
