"""Test helpers shared by several test modules (from test_dynamics_api.py)."""

from __future__ import annotations

import numpy as np


BOX = """<inertial><origin xyz="{c}" rpy="0.2 -0.1 0.3"/><mass value="{m}"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.025" iyz="0.002" izz="0.03"/></inertial>"""


def _link(name, mass=None, com="0.05 0.02 0.1"):
    if mass is None:
        return f'<link name="{name}"/>'
    return f'<link name="{name}">{BOX.format(c=com, m=mass)}</link>'


def _joint(name, jtype, parent, child, axis="0 0 1", xyz="0 0.1 0.2", rpy="0 0 0"):
    limit = (
        '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
        if jtype
        in (
            "revolute",
            "prismatic",
        )
        else ""
    )
    ax = f'<axis xyz="{axis}"/>' if jtype != "fixed" else ""
    return (
        f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="{rpy}"/>{ax}{limit}</joint>'
    )


HAND_URDF = (
    '<?xml version="1.0"?>\n<robot name="hand_tree">'
    + _joint("j_d", "revolute", "c", "d", axis="1 0 0")
    + _link("d", 0.5)
    + _link("base", 10.0)
    + _joint("j_a", "revolute", "base", "a")
    + _link("a", 2.0)
    + _joint("j_b", "prismatic", "a", "b", axis="0 0.6 0.8")
    + _link("b", 1.0)
    + _joint("a_sensor_fix", "fixed", "a", "a_sensor")
    + _link("a_sensor")
    + _joint("j_c", "continuous", "a_sensor", "c", axis="0 1 0")
    + _link("c", 1.5)
    + _joint("j_e", "revolute", "base", "e", axis="0 -1 0")
    + _link("e", 0.7)
    + _link("g_mount", 0.3)
    + _joint("g_mount_fix", "fixed", "base", "g_mount", xyz="0.3 0 0")
    + _joint("j_g", "revolute", "g_mount", "g", axis="0.48 0.6 0.64")
    + _link("g", 0.9)
    + "</robot>"
)


def _bad_inputs(n):
    ok = np.linspace(-1.0, 1.0, n)
    yield "too short", ok[:-1], r"shape|length|size|expected|elements"
    yield "too long", np.append(ok, 0.5), r"shape|length|size|expected|elements"
    yield "column", ok.reshape(n, 1), r"shape|dimension|expected"
    yield "scalar", np.float64(0.3), r"shape|dimension|expected|sequence"
    yield "empty", np.zeros(0), r"shape|length|size|expected|elements"
    for label, value, pattern in (
        ("nan", np.nan, r"nan|finite"),
        ("+inf", np.inf, r"inf|finite"),
        ("-inf", -np.inf, r"inf|finite"),
    ):
        bad = ok.copy()
        bad[n // 2] = value
        yield label, bad, pattern
    yield "text", ["a"] * n, r"number|float|convert|numeric"


def _wrong_buffers(shape):
    """(label, buffer, what the message must name): the shape or the dtype/type problem."""
    wrong_shape = r"shape|dimension"
    wrong_type = r"dtype|float64|type"
    yield "wrong shape", np.zeros(tuple(s + 1 for s in shape)), wrong_shape
    yield "too few dims", np.zeros(shape[:-1] or (2,)), wrong_shape
    yield "too many dims", np.zeros(shape + (1,)), wrong_shape
    yield "0-d", np.zeros(()), wrong_shape
    yield "float32", np.zeros(shape, dtype=np.float32), wrong_type
    yield "int64", np.zeros(shape, dtype=np.int64), wrong_type
    yield "complex", np.zeros(shape, dtype=complex), wrong_type
    yield "list", np.zeros(shape).tolist(), wrong_type
