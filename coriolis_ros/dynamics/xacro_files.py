"""xacro descriptions wherever a URDF path is accepted.

A path ending in ``.xacro`` (``robot.urdf.xacro``, ``robot.xacro``) is expanded by the
``xacro`` package (``pip install xacro``; ``pip install coriolis_ros[xacro]``) before it is
parsed, exactly as ``xacro robot.urdf.xacro > robot.urdf`` would expand it, with
``name:=value`` arguments when they are given.  xacro runs in a child interpreter (its
module keeps global state, and a failing file makes it exit), so one expansion never
affects another, and its own error message is passed on in the :class:`URDFError`.

Without the ``xacro`` package a ``.xacro`` path is refused with a :class:`URDFError` that says
how to install it, or how to expand the file by hand.  ``$(find pkg)`` in a xacro file is
resolved by xacro through the ament index, so it finds the packages of a sourced ROS 2
workspace, or of the venv.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping

from .errors import URDFError

__all__ = ["XACRO_SUFFIX", "expand_xacro", "is_xacro_path", "xacro_available"]

XACRO_SUFFIX = ".xacro"
# Generous: a big robot's xacro with many includes takes a few seconds.
XACRO_TIMEOUT = 120.0
MISSING = (
    "{path} is a xacro file and the xacro package is not installed: `pip install xacro` "
    "(or coriolis_ros[xacro]), or expand it first with `xacro {path} > robot.urdf`"
)
# Runs xacro's command-line entry point in the child interpreter (xacro has no __main__).
_RUN_XACRO = "import sys, xacro; sys.argv[0] = 'xacro'; xacro.main()"


def is_xacro_path(path) -> bool:
    """True for a path (str or os.PathLike, not XML text) whose name ends in ``.xacro``."""
    if not isinstance(path, (str, os.PathLike)):
        return False
    text = os.fspath(path)
    return not text.lstrip().startswith("<") and text.strip().lower().endswith(XACRO_SUFFIX)


def xacro_available() -> bool:
    """True when the ``xacro`` package can be imported by this interpreter."""
    try:
        return importlib.util.find_spec("xacro") is not None
    except (ImportError, ValueError):
        return False


def expand_xacro(path, mappings: Mapping[str, str] | None = None) -> str:
    """The URDF text ``xacro`` makes of the file ``path`` (with ``name:=value`` for each entry
    of ``mappings``); :class:`URDFError` with xacro's reason when it fails, or when xacro is
    not installed."""
    path = os.fspath(path)
    if not xacro_available():
        raise URDFError(MISSING.format(path=path))
    if not os.path.isfile(path):
        raise URDFError(f"cannot read {path}: no such file")
    args = [f"{key}:={value}" for key, value in (mappings or {}).items()]
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RUN_XACRO, path, *args],
            capture_output=True,
            text=True,
            timeout=XACRO_TIMEOUT,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise URDFError(f"xacro {path}: no result after {XACRO_TIMEOUT:g} s") from None
    except OSError as exc:
        raise URDFError(f"xacro {path}: cannot run it: {exc}") from None
    if done.returncode != 0 or not done.stdout.strip():
        reason = " ".join(done.stderr.split()) or f"exit status {done.returncode}, no output"
        raise URDFError(f"xacro {path} failed: {reason}")
    return done.stdout

