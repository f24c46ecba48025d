"""The immutable rigid-body tree the kernels read.

A :class:`Model` holds one row per velocity degree of freedom, in topological
order (``parent[i] < i``; ``-1`` is the world).  A single-DoF joint (revolute,
prismatic) is one row, its body frame chosen so that the joint axis is the local
z axis, which makes the joint transform a plain rotation about (or translation
along) z.  A multi-DoF joint (a free flyer, 6 rows; planar, 3 rows) occupies
consecutive rows, each the parent of the next, all on the same body frame: row
``r`` carries the r-th column of the joint's motion subspace Phi (body-fixed),
and only the last row carries the body's inertia and is the parent of the
body's children.  The kernels treat the rows as a chain of single-DoF joints
whose Phidot is the body's v x Phi (see ``kernels/kinematics.py``).  They read
one packed array, bound once, and the gravity vector:

``mf`` (float64, shape (n, MF_WIDTH))
    per body: the tree transform from the parent body frame to this body's
    joint frame at q = 0 (rotation, row-major, then translation), the mass, the
    centre of mass and the 3x3 rotational inertia about the centre of mass, all
    in the body frame; then the parent row (-1: the world), the joint type
    (:data:`REVOLUTE`, :data:`PRISMATIC`, :data:`FREE`, :data:`PLANAR`), the
    index in q of the joint's first coordinate and the row's index within its
    joint, stored as floats so that one array carries the whole model.

Configurations: a revolute or prismatic joint has one coordinate (the angle or
the displacement); a free flyer has 7, (x, y, z, qx, qy, qz, qw), the position
of the child frame in the parent's joint frame and a unit quaternion, with
velocities (linear velocity of the child frame's origin, angular velocity), both
in the child frame; a planar joint has 3, (x, y, theta) in the plane normal to
its axis, with velocities (vx, vy, omega) in the child frame (Pinocchio's
conventions, except that Pinocchio stores a planar angle as cos, sin).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REVOLUTE = 0
PRISMATIC = 1
FREE = 2  # 6 rows: linear x, y, z, then angular x, y, z, in the child frame
PLANAR = 3  # 3 rows: linear x, y, then angular z, in the child frame

# Velocity DoF and configuration size of each joint type.
JOINT_NV = {REVOLUTE: 1, PRISMATIC: 1, FREE: 6, PLANAR: 3}
JOINT_NQ = {REVOLUTE: 1, PRISMATIC: 1, FREE: 7, PLANAR: 3}

# Column layout of ``mf``.
MF_R = 0  # 9: rotation parent body -> joint frame, row-major
MF_T = 9  # 3: joint frame origin in the parent body frame
MF_M = 12  # 1: mass
MF_C = 13  # 3: centre of mass in the body frame
MF_I = 16  # 9: rotational inertia about the centre of mass, body frame, row-major
MF_PARENT = 25  # 1: parent body index
MF_TYPE = 26  # 1: joint type
MF_Q = 27  # 1: index in q of the joint's first coordinate
MF_SUB = 28  # 1: index of this row within its joint (0 for single-DoF joints)
MF_WIDTH = 29

# Column layout of ``fm``, the frames' side table (one row per frame, every URDF link):
# the row of the body the frame is attached to (-1: the world), then the frame's pose in
# that body's frame, rotation (row-major) and origin.
FM_BODY = 0
FM_R = 1  # 9
FM_T = 10  # 3
FM_WIDTH = 13


@dataclass(frozen=True)
class Model:
    """A kinematic tree, built once and never mutated."""

    name: str
    joint_names: tuple[str, ...]  # nv names, the order of v (one per row)
    joint_types: tuple[str, ...]  # URDF type of each row: revolute, continuous, prismatic, ...
    body_links: tuple[str, ...]  # the URDF link each row's body frame is attached to
    root_link: str
    mf: np.ndarray
    gravity: np.ndarray  # (3,), world frame, m/s^2
    position_names: tuple[str, ...] = ()  # nq names, the order of q (joint_names if empty)
    root_joint: str = "fixed"  # how the root link is attached: fixed, floating or planar
    # Mimic joints that follow their leader, in row order: (name, independent leader,
    # multiplier, offset), q_name = multiplier q_leader + offset.  Empty: every row is a DoF.
    mimic: tuple[tuple[str, str, float, float], ...] = ()
    # Coupled joints (geared rotors, gear trains: dynamics.couplings) that follow their leader,
    # in row order, as for mimic: (name, independent leader, ratio, offset).
    couplings: tuple[tuple[str, str, float, float], ...] = ()
    # Coupled joints that follow a sum of joints (dynamics.couplings), in row order: (name,
    # ((independent leader, coefficient), ...), offset).  A model with any is computed as a
    # closed chain (dynamics.closed_chain), its A = dq/dqbar having rows of several entries.
    sums: tuple = ()
    # rotor_model="armature" (dynamics.armature): (driven joint, N^2 I_a summed over its rotors)
    # of each joint whose rotors became an armature, in row order.  Empty: exact rotors.
    armature: tuple[tuple[str, float], ...] = ()
    # Joints welded at build time (name, position), mimic joints of locked leaders included.
    locked_joints: tuple[tuple[str, float], ...] = ()
    # Frames: every URDF link (fixed-joint children included), and their side table
    # ``fm`` (len(frame_names), FM_WIDTH): the body row each is attached to and its pose there.
    frame_names: tuple[str, ...] = ()
    fm: np.ndarray | None = None
    # Closed kinematic loops (dynamics.loops.Loop), closed over this tree.  Empty: a tree.
    loops: tuple = ()
    # The joints' ``independent`` attributes (urdfdom's fork), read when there are loops.
    independent_flags: tuple[tuple[str, bool], ...] = ()

    def __post_init__(self):
        if self.fm is None:
            object.__setattr__(self, "fm", np.zeros((0, FM_WIDTH)))
        for array in (self.mf, self.gravity, self.fm):
            array.setflags(write=False)

    @property
    def nv(self) -> int:
        return len(self.joint_names)

    @property
    def nq(self) -> int:
        return len(self.position_names) if self.position_names else self.nv

    @property
    def parent(self) -> np.ndarray:
        return self.mf[:, MF_PARENT].astype(np.int64)

    @property
    def tree_depth(self) -> int:
        """Largest number of velocity DoF on a path from the world to a leaf."""
        depth = np.zeros(self.nv, dtype=np.int64)
        for i, p in enumerate(self.parent):
            depth[i] = 1 if p < 0 else depth[p] + 1
        return int(depth.max(initial=0))

    def joints(self) -> list[tuple[int, int, int, int]]:
        """(type, first row, number of rows, first index in q) of every joint, in row order."""
        out = []
        i = 0
        while i < self.nv:
            kind = int(self.mf[i, MF_TYPE])
            out.append((kind, i, JOINT_NV[kind], int(self.mf[i, MF_Q])))
            i += JOINT_NV[kind]
        return out

    @property
    def total_mass(self) -> float:
        """Mass of the moving bodies (links fixed to the world are not counted)."""
        return float(self.mf[:, MF_M].sum())
