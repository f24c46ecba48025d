"""numpy <-> message-field conversions without per-element Python work (ROS-free).

rclpy stores float64[] fields as array.array('d'). A message built with check_fields=True
keeps an assigned array.array('d') by reference; otherwise (and for any other sequence) the
setter copies it with array.array('d', value), element by element. A message field backed
by an array.array that numpy views *in place* lets the kernels write their results straight
into the message: the tick then copies nothing, and `publish` serialises the current contents.
"""

from __future__ import annotations

import array

import numpy as np

_EMPTY = array.array("d")


def float64_field(*shape: int) -> tuple[array.array, np.ndarray]:
    """A zeroed array.array('d') of prod(shape) elements and a writable ndarray view of it."""
    size = int(np.prod(shape)) if shape else 0
    storage = array.array("d", bytes(8 * size))
    if size == 0:
        return storage, np.zeros(shape)
    view = np.frombuffer(storage, dtype=np.float64).reshape(shape)
    return storage, view


def to_field(values: np.ndarray) -> array.array:
    """A new array.array('d') holding a copy of `values` (flattened, row-major)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = array.array("d")
    out.frombytes(values.tobytes())
    return out


def empty_field() -> array.array:
    return array.array("d", _EMPTY)
