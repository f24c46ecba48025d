"""Point Numba's on-disk cache at a writable per-user directory.

Compiled kernels are cached so that a process loads them in a fraction of a
second instead of compiling for ~10 s.  The package may be installed read-only
(a system prefix, a ROS install space), so the cache goes to
``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/coriolis_ros/numba``
(default ``~/.cache/coriolis_ros/numba``), else a per-user temporary directory.
"""

import os
import sys
import tempfile


def _candidates():
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    yield os.path.join(xdg, "coriolis_ros", "numba")
    user = os.environ.get("USER") or str(os.getuid()) if hasattr(os, "getuid") else "user"
    yield os.path.join(tempfile.gettempdir(), f"coriolis_ros-{user}", "numba")


def configure() -> str:
    """Choose the cache directory (before the kernels are imported) and return it."""
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if not chosen:
        for path in _candidates():
            try:
                os.makedirs(path, exist_ok=True)
            except OSError:
                continue
            if os.access(path, os.W_OK):
                chosen = path
                break
    if chosen:
        os.environ["NUMBA_CACHE_DIR"] = chosen
        config = sys.modules.get("numba.core.config")
        if config is not None:  # numba already imported: its config read the environment already
            config.CACHE_DIR = chosen
    return chosen or ""
