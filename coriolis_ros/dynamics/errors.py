"""The library's own exception types, and how values read in its messages."""

from __future__ import annotations

import numpy as np


class URDFError(ValueError):
    """The URDF cannot be turned into a model; the message says why."""


def plain(value):
    """``value`` as a message shows it: numpy scalars and arrays as the Python numbers and lists
    they hold, so that ``f"{plain(x)!r}"`` reads ``-2.0`` or ``[0.0, nan]``, never
    ``np.float64(-2.0)`` or ``array([0., nan])``; anything else unchanged."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    return value
