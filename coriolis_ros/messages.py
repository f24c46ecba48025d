"""numpy views of coriolis_ros messages, for Python subscribers and clients.

The messages carry flat, row-major arrays (see msg/CoriolisState.msg); this module gives them
back their shapes under the messages' own field names, which are also the keys of the
``coriolis-ros compute`` JSON and npz output::

    from coriolis_ros.messages import state_to_numpy

    def on_state(msg):                          # a coriolis_ros/CoriolisState callback
        s = state_to_numpy(msg)
        C = s["coriolis_matrix"]                # (n, n): C[i, j] = msg.coriolis_matrix[i*n + j]
        M = s["mass_matrix"]                    # (n, n), or None when the node leaves it out
        tau_c = s["coriolis_force"]             # (n,): C q̇
        names = s["joint_names"]                # order of every row, column and vector

``state_to_numpy`` also takes the responses of ``compute_dynamics`` (same fields, plus
``success``, ``message`` and ``slotine_li_torque``, a vector) and ``get_christoffel_symbols``
(``symbols`` -> (n, n, n)).
Shapes: vectors (n,), matrices (n, n), ``symbols`` (n, n, n), with n = len(joint_names);
``position`` has len(position_names) entries when the message has non-empty ``position_names``
(a floating base: nq = n + 1), else n; an optional field the node was told not to publish (empty)
is ``None``; a field whose length fits no shape raises ValueError naming it. ``header`` (a
std_msgs/Header), ``success`` and ``message`` are passed through; string arrays become lists.
Only the fields the message has are returned, so older and newer interface versions work.
``numpy_to_state`` is the inverse for CoriolisState. This module imports no ROS package:
``state_to_numpy`` only reads attributes, so it also works on recorded messages (e.g. rosbags).
"""

from __future__ import annotations

import array as pyarray

import numpy as np

__all__ = [
    "MATRIX_FIELDS",
    "RESPONSE_FIELDS",
    "STATE_FIELDS",
    "STRING_FIELDS",
    "TENSOR_FIELDS",
    "VECTOR_FIELDS",
    "numpy_to_state",
    "state_to_numpy",
]

# Field names shared by msg/CoriolisState.msg and srv/ComputeDynamics.srv (response), in
# message order, by shape; srv/GetChristoffelSymbols.srv adds `symbols`.
VECTOR_FIELDS = (
    "position",
    "velocity",
    "coriolis_force",
    "coriolis_transpose_force",
    "gravity_force",
    "momentum",
    "effort",
    "external_effort",
)
STRING_FIELDS = ("joint_names", "position_names")
MATRIX_FIELDS = ("coriolis_matrix", "mass_matrix", "mass_matrix_derivative")
TENSOR_FIELDS = ("symbols",)
# CoriolisState's fields after header, in the message's order (position_names, effort and
# external_effort belong to the floating-base / momentum-observer version of the interface; a
# message without them is handled the same way).
STATE_FIELDS = (
    "joint_names",
    "position_names",
    "position",
    "velocity",
    "coriolis_matrix",
    "coriolis_force",
    "coriolis_transpose_force",
    "mass_matrix",
    "mass_matrix_derivative",
    "gravity_force",
    "momentum",
    "effort",
    "external_effort",
)
# Vector fields of the ComputeDynamics response that CoriolisState does not have.
RESPONSE_FIELDS = ("slotine_li_torque",)
_PASSED_THROUGH = ("header", "success", "message")


def _shape(name: str, n: int, nq: int | None = None) -> tuple[int, ...]:
    if name == "position" and nq:
        return (nq,)
    if name in MATRIX_FIELDS:
        return (n, n)
    if name in TENSOR_FIELDS:
        return (n, n, n)
    return (n,)


def state_to_numpy(msg, copy: bool = True) -> dict:
    """The fields of ``msg`` as numpy arrays shaped (n,), (n, n) or (n, n, n).

    ``msg``: a CoriolisState, a ComputeDynamics response or a GetChristoffelSymbols response
    (anything with ``joint_names`` and some of the float64[] fields). ``copy=False`` returns
    read-only views of the message's own storage where it allows it (valid as long as the
    message is not modified). Raises ValueError when a non-empty field has the wrong length.
    """
    if not hasattr(msg, "joint_names"):
        raise ValueError(f"{type(msg).__name__} has no joint_names field")
    names = [str(name) for name in msg.joint_names]
    n = len(names)
    nq = len(getattr(msg, "position_names", ()))
    out: dict = {}
    for key in _PASSED_THROUGH:
        if hasattr(msg, key):
            out[key] = getattr(msg, key)
    for key in (*STATE_FIELDS, *RESPONSE_FIELDS, *TENSOR_FIELDS):  # message order
        if not hasattr(msg, key):
            continue
        if key in STRING_FIELDS:
            out[key] = [str(name) for name in getattr(msg, key)]
            continue
        values = getattr(msg, key)
        if copy:
            flat = np.array(values, dtype=np.float64).reshape(-1)
        else:  # rclpy's array.array('d') fields are viewed through the buffer protocol
            flat = np.asarray(values, dtype=np.float64).reshape(-1)
        if flat.size == 0 and n > 0:
            out[key] = None  # optional field left out by the publisher
            continue
        shape = _shape(key, n, nq)
        if flat.size != int(np.prod(shape)):
            raise ValueError(
                f"{key} has {flat.size} values; {n} joints need {'x'.join(map(str, shape))}"
            )
        array = flat.reshape(shape)
        if not copy:
            array.flags.writeable = False
        out[key] = array
    return out


def numpy_to_state(arrays: dict, msg=None):
    """A coriolis_ros/CoriolisState filled from ``arrays`` (the inverse of state_to_numpy).

    ``arrays`` maps field names to array-likes of the documented shapes (or None / missing for
    an optional field left empty); ``header`` is copied when present. ``msg``: a message to fill
    in place (default: a new CoriolisState, which needs the built coriolis_ros interfaces).
    Raises ValueError for a shape that does not match the number of joint names.
    """
    if msg is None:
        from coriolis_ros.msg import CoriolisState

        msg = CoriolisState()
    names = [str(name) for name in arrays.get("joint_names", ())]
    n = len(names)
    position_names = [str(name) for name in arrays.get("position_names") or ()]
    if position_names and not hasattr(msg, "position_names"):
        raise ValueError(f"{type(msg).__name__} has no position_names field")
    if "header" in arrays and arrays["header"] is not None:
        msg.header = arrays["header"]
    for key in STRING_FIELDS:
        if hasattr(msg, key):
            setattr(msg, key, names if key == "joint_names" else position_names)
    for key in STATE_FIELDS:
        if key in STRING_FIELDS:
            continue
        value = arrays.get(key)
        if not hasattr(msg, key):
            if value is not None:
                raise ValueError(f"{type(msg).__name__} has no {key} field")
            continue
        if value is None:
            setattr(msg, key, [])
            continue
        array = np.asarray(value, dtype=np.float64)
        shape = _shape(key, n, len(position_names))
        if array.shape != shape:
            raise ValueError(f"{key} has shape {array.shape}; {n} joints need {shape}")
        field = pyarray.array("d")
        field.frombytes(np.ascontiguousarray(array).tobytes())
        setattr(msg, key, field)
    return msg
