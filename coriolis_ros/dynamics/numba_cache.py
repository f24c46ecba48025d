"""Point Numba's on-disk cache at a writable per-user directory, on the first compile.

Compiled kernels are cached so that a process loads them in a fraction of a
second instead of compiling for ~10 s.  The package may be installed read-only
(a system prefix, a ROS install space), so the cache goes to
``$NUMBA_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/coriolis_ros/numba``
(default ``~/.cache/coriolis_ros/numba``), else a per-user temporary directory,
in a subdirectory named after a hash of the kernels' sources.  Numba keys its
cache on each function's own file only, so a change to a helper or constant
in another module (an upgrade, an edit) would otherwise load stale machine code.

Nothing happens on import: :func:`configure` runs when the first kernel is compiled
(:func:`coriolis_ros.dynamics.kernel_table.compile_frozen`), and the kernels are declared
without a cache of their own until then.
"""

import hashlib
import os
import tempfile
import threading
from pathlib import Path

from numba.core import config as numba_config

_LOCK = threading.Lock()
_CHOSEN: list[str] = []  # the directory, once chosen ("" when none is writable)


def _candidates():
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    yield os.path.join(xdg, "coriolis_ros", "numba")
    user = os.environ.get("USER") or str(os.getuid()) if hasattr(os, "getuid") else "user"
    yield os.path.join(tempfile.gettempdir(), f"coriolis_ros-{user}", "numba")


def sources_digest() -> str:
    """A short hash of every source file the compiled kernels depend on."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([here / "model.py", *(here / "kernels").glob("*.py")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _choose() -> str:
    chosen = os.environ.get("NUMBA_CACHE_DIR")
    if chosen:
        return os.path.join(chosen, "coriolis_ros-" + sources_digest())
    for path in _candidates():
        path = os.path.join(path, sources_digest())
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    return ""


def configure() -> str:
    """Choose the cache directory (once per process) and return it ("" if none is writable).

    Sets Numba's configuration, not the environment: child processes choose for themselves.
    Kernels given a cache after this (``enable_caching``) read it."""
    with _LOCK:
        if not _CHOSEN:
            chosen = _choose()
            if chosen:
                numba_config.CACHE_DIR = chosen
            _CHOSEN.append(chosen)
        return _CHOSEN[0]


def cache_dir() -> str:
    """The directory compiled kernels are cached in (chosen now if no kernel was compiled yet)."""
    return configure()
