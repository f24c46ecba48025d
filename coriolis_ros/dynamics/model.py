"""The immutable rigid-body tree the kernels read.

A :class:`Model` holds one body per degree of freedom, in topological order
(``parent[i] < i``; ``-1`` is the fixed base).  Every body frame is chosen so
that its joint axis is the local z axis, which makes the joint transform a
plain rotation about (or translation along) z.  The kernels read one packed
array, bound once, and the gravity vector:

``mf`` (float64, shape (n, MF_WIDTH))
    per body: the tree transform from the parent body frame to this body's
    joint frame at q = 0 (rotation, row-major, then translation), the mass, the
    centre of mass and the 3x3 rotational inertia about the centre of mass, all
    in the body frame; then the parent body index (-1: the base) and the joint
    type (:data:`REVOLUTE` or :data:`PRISMATIC`), stored as floats so that one
    array carries the whole model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REVOLUTE = 0
PRISMATIC = 1

# Column layout of ``mf``.
MF_R = 0  # 9: rotation parent body -> joint frame, row-major
MF_T = 9  # 3: joint frame origin in the parent body frame
MF_M = 12  # 1: mass
MF_C = 13  # 3: centre of mass in the body frame
MF_I = 16  # 9: rotational inertia about the centre of mass, body frame, row-major
MF_PARENT = 25  # 1: parent body index
MF_TYPE = 26  # 1: joint type
MF_WIDTH = 27


@dataclass(frozen=True)
class Model:
    """A kinematic tree with single-DoF joints, built once and never mutated."""

    name: str
    joint_names: tuple[str, ...]
    joint_types: tuple[str, ...]  # URDF type of each DoF: revolute, continuous, prismatic
    body_links: tuple[str, ...]  # the URDF link each body frame is attached to
    root_link: str
    mf: np.ndarray
    gravity: np.ndarray  # (3,), world frame, m/s^2

    def __post_init__(self):
        for array in (self.mf, self.gravity):
            array.setflags(write=False)

    @property
    def nv(self) -> int:
        return len(self.joint_names)

    @property
    def parent(self) -> np.ndarray:
        return self.mf[:, MF_PARENT].astype(np.int64)

    @property
    def tree_depth(self) -> int:
        """Largest number of DoF joints on a path from the base to a leaf."""
        depth = np.zeros(self.nv, dtype=np.int64)
        for i, p in enumerate(self.parent):
            depth[i] = 1 if p < 0 else depth[p] + 1
        return int(depth.max(initial=0))

    @property
    def total_mass(self) -> float:
        """Mass of the moving bodies (links fixed to the base are not counted)."""
        return float(self.mf[:, MF_M].sum())
