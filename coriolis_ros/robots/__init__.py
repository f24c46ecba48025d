"""Robot models bundled with coriolis_ros (URDF files shipped as package data).

``available_robots()`` lists the bundled names, ``robot_path(name)`` gives the file path and
``robot_urdf(name)`` the XML text.  ROS-free; uses only the standard library.
"""

from __future__ import annotations

import importlib.resources
import pathlib

__all__ = ["available_robots", "robot_path", "robot_urdf"]

_SUFFIX = ".urdf"


def _resources():
    return importlib.resources.files(__name__)


def available_robots() -> tuple[str, ...]:
    """Names of the bundled robots (file names without ``.urdf``), sorted."""
    names = []
    for entry in _resources().iterdir():
        if entry.is_file() and entry.name.endswith(_SUFFIX):
            names.append(entry.name[: -len(_SUFFIX)])
    return tuple(sorted(names))


def _check_name(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"robot name must be a string, got {type(name).__name__}")
    known = available_robots()
    if name not in known:
        raise ValueError(f"unknown robot {name!r}; bundled robots: {', '.join(known) or 'none'}")
    return name


def robot_path(name: str) -> pathlib.Path:
    """Filesystem path of the bundled URDF ``name`` (e.g. ``"arm7"``).

    Raises ValueError for an unknown name (the message lists the bundled robots).
    """
    resource = _resources() / (_check_name(name) + _SUFFIX)
    path = pathlib.Path(str(resource))
    if not path.is_file():  # only possible for a package imported from a zip archive
        raise FileNotFoundError(f"robot {name!r} is not available as a plain file ({resource})")
    return path


def robot_urdf(name: str) -> str:
    """XML text of the bundled URDF ``name``."""
    return (_resources() / (_check_name(name) + _SUFFIX)).read_text(encoding="utf-8")
