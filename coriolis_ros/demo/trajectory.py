"""Smooth joint trajectories for the demo publisher (ROS-free).

Every joint follows a sum of sinusoids around the middle of its range,

    q_j(t)   = c_j + A_j * sum_k w_jk sin(omega_jk t + phi_jk)
    qd_j(t)  =       A_j * sum_k w_jk omega_jk cos(omega_jk t + phi_jk)
    qdd_j(t) =      -A_j * sum_k w_jk omega_jk^2 sin(omega_jk t + phi_jk)

with weights w_jk > 0 summing to 1, so |q_j - c_j| <= A_j = margin * (half the joint range) and the
position stays strictly inside the limits.  The frequencies are scaled down where needed so that
|qd_j| <= velocity_margin * (velocity limit of joint j) for every t (a bound, not a sample).
Velocities and accelerations are the exact time derivatives of the positions.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

__all__ = ["JointSpec", "SinusoidTrajectory", "dof_joints_from_urdf"]

DOF_TYPES = ("revolute", "continuous", "prismatic")

# Used when the URDF gives no usable bound (continuous joints, missing or zero limits).
DEFAULT_HALF_RANGE = {"revolute": math.pi, "continuous": math.pi, "prismatic": 0.1}
DEFAULT_VELOCITY = {"revolute": 2.0, "continuous": 2.0, "prismatic": 0.5}


@dataclass(frozen=True)
class JointSpec:
    """A moving joint of a URDF: name, type, position range and velocity limit (SI units)."""

    name: str
    type: str
    lower: float
    upper: float
    velocity: float

    def __post_init__(self):
        if self.type not in DOF_TYPES:
            raise ValueError(f"joint {self.name!r}: unsupported type {self.type!r}")
        for label, value in (("lower", self.lower), ("upper", self.upper)):
            if not math.isfinite(value):
                raise ValueError(f"joint {self.name!r}: {label} limit must be finite, got {value}")
        if not self.lower < self.upper:
            raise ValueError(
                f"joint {self.name!r}: empty range, lower {self.lower} >= upper {self.upper}"
            )
        if not (math.isfinite(self.velocity) and self.velocity > 0):
            raise ValueError(
                f"joint {self.name!r}: velocity limit must be > 0, got {self.velocity}"
            )


def _float_attr(elem, attr: str, joint: str) -> float | None:
    text = elem.get(attr)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"joint {joint!r}: <limit {attr}={text!r}> is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"joint {joint!r}: <limit {attr}={text!r}> is not finite")
    return value


def dof_joints_from_urdf(urdf: str) -> list[JointSpec]:
    """The revolute, continuous and prismatic joints of a URDF (XML text), in document order.

    Joints without usable position limits (continuous joints, or a missing ``<limit>``) get the
    range +-pi (revolute/continuous) or +-0.1 m (prismatic); joints without a positive velocity
    limit get 2 rad/s or 0.5 m/s.  Raises ValueError for unparsable XML, a document that is not a
    ``<robot>``, a joint without a name, duplicate names, or inconsistent limits.
    """
    if not isinstance(urdf, str):
        raise TypeError(f"URDF must be XML text, got {type(urdf).__name__}")
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise ValueError(f"URDF is not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"URDF root element must be <robot>, got <{root.tag}>")
    joints: list[JointSpec] = []
    seen: set[str] = set()
    for elem in root.findall("joint"):
        name = elem.get("name")
        if not name:
            raise ValueError("URDF has a <joint> without a name")
        if name in seen:
            raise ValueError(f"URDF has two joints named {name!r}")
        seen.add(name)
        jtype = elem.get("type")
        if jtype not in DOF_TYPES:
            continue
        limit = elem.find("limit")
        lower = upper = velocity = None
        if limit is not None:
            lower = _float_attr(limit, "lower", name)
            upper = _float_attr(limit, "upper", name)
            velocity = _float_attr(limit, "velocity", name)
        if jtype == "continuous" or lower is None or upper is None or lower == upper == 0.0:
            half = DEFAULT_HALF_RANGE[jtype]
            lower, upper = -half, half
        if velocity is None or velocity <= 0:
            velocity = DEFAULT_VELOCITY[jtype]
        joints.append(JointSpec(name, jtype, lower, upper, velocity))
    return joints


class SinusoidTrajectory:
    """Sum-of-sinusoids trajectory inside the joint limits (see the module docstring).

    Parameters: ``joints`` (JointSpec list), ``seed`` (frequencies, weights and phases are drawn
    from ``numpy.random.default_rng(seed)``), ``components`` sinusoids per joint, frequency band
    ``freq_range`` in Hz, ``margin`` (fraction of the half-range used) and ``velocity_margin``
    (fraction of the velocity limit that |qd| never exceeds).
    """

    def __init__(
        self,
        joints,
        seed: int = 0,
        components: int = 3,
        freq_range: tuple[float, float] = (0.05, 0.4),
        margin: float = 0.8,
        velocity_margin: float = 0.9,
    ):
        joints = list(joints)
        if not joints:
            raise ValueError("trajectory needs at least one moving joint")
        if not all(isinstance(j, JointSpec) for j in joints):
            raise TypeError("joints must be JointSpec instances")
        if int(components) != components or components < 1:
            raise ValueError(f"components must be a positive integer, got {components}")
        f_lo, f_hi = (float(f) for f in freq_range)
        if not (0 < f_lo <= f_hi and math.isfinite(f_hi)):
            raise ValueError(f"freq_range must satisfy 0 < low <= high, got {freq_range}")
        if not 0 < margin < 1:
            raise ValueError(f"margin must be in (0, 1), got {margin}")
        if not 0 < velocity_margin <= 1:
            raise ValueError(f"velocity_margin must be in (0, 1], got {velocity_margin}")

        self.joints = tuple(joints)
        self.names = tuple(j.name for j in joints)
        n, k = len(joints), int(components)
        rng = np.random.default_rng(seed)
        lower = np.array([j.lower for j in joints])
        upper = np.array([j.upper for j in joints])
        self.lower, self.upper = lower, upper
        self.velocity_limit = np.array([j.velocity for j in joints])
        self.center = 0.5 * (lower + upper)
        self.amplitude = margin * 0.5 * (upper - lower)

        weights = rng.uniform(0.2, 1.0, size=(n, k))
        self.weights = weights / weights.sum(axis=1, keepdims=True)
        omega = 2.0 * math.pi * rng.uniform(f_lo, f_hi, size=(n, k))
        # Upper bound of |qd_j| over all t; slow the joint down (time scaling) if it is too fast.
        bound = self.amplitude * (self.weights * omega).sum(axis=1)
        allowed = velocity_margin * self.velocity_limit
        scale = np.minimum(1.0, allowed / bound)
        self.omega = omega * scale[:, None]
        self.phase = rng.uniform(0.0, 2.0 * math.pi, size=(n, k))
        self.max_speed = self.amplitude * (self.weights * self.omega).sum(axis=1)

    @property
    def nv(self) -> int:
        return len(self.joints)

    def _terms(self, t):
        t = float(t)
        if not math.isfinite(t):
            raise ValueError(f"time must be finite, got {t}")
        return self.omega * t + self.phase

    def position(self, t) -> np.ndarray:
        return self.center + self.amplitude * (self.weights * np.sin(self._terms(t))).sum(axis=1)

    def velocity(self, t) -> np.ndarray:
        aw = self.weights * self.omega
        return self.amplitude * (aw * np.cos(self._terms(t))).sum(axis=1)

    def acceleration(self, t) -> np.ndarray:
        aw = self.weights * self.omega**2
        return -self.amplitude * (aw * np.sin(self._terms(t))).sum(axis=1)

    def sample(self, t) -> tuple[np.ndarray, np.ndarray]:
        """(q, qd) at time ``t`` seconds."""
        arg = self._terms(t)
        s, c = np.sin(arg), np.cos(arg)
        q = self.center + self.amplitude * (self.weights * s).sum(axis=1)
        qd = self.amplitude * (self.weights * self.omega * c).sum(axis=1)
        return q, qd
