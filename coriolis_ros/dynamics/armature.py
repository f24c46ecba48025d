"""The armature approximation of geared rotors: ``rotor_model="armature"``.

The exact model (:mod:`.couplings`) keeps each rotor as a body of the tree spinning at
N q̇_j on the driven joint's parent.  Its kinetic energy, for a rotor balanced about its spin
axis z (centre of mass on the axis, z a principal axis) with moment I_a about z, is

    T_rotor = 1/2 I_a (N q̇_j + ω_p·z)^2 + (the rotor's mass and transverse inertia moving
              rigidly with the parent, ω_p its angular velocity),

so T_rotor = 1/2 N^2 I_a q̇_j^2 + N I_a q̇_j (ω_p·z) + 1/2 I_a (ω_p·z)^2 + rigid part.  The
armature approximation (Pinocchio's ``model.armature``, MuJoCo's ``armature``) keeps the
first term, a constant N^2 I_a on M's diagonal, and drops the other two: the gyroscopic
coupling of the spin with the parent's rotation about the axis (and with it every term of
C and Γ the spin momentum carries).  The rigid part is kept as it is at rotor angle 0 (the
exact model turns it with the rotor, which matters only if the transverse inertia is not
symmetric about z).  The two models agree exactly when the parent is the fixed base, or
when ω_p·z = 0 at every configuration and velocity (every joint above turns about axes
perpendicular to z) and the transverse inertia is symmetric about z.

:func:`armature_model` turns a model of the exact kind into this one, as a model variant
(the kernels and the coordinate map are the coupled ones, unchanged).  For each coupled
joint r (a rotor, or a gear of a gear train) with leader j, resolved ratio N, and body
(mass m, centre c, inertia I_c about c, in r's frame whose z is the spin axis):

- the spin: I_a = z^T I_c z becomes a thin disc (inertia diag(I_a/2, I_a/2, I_a), no mass)
  on r's joint, re-hung from the world about a fixed axis.  Its only energy is
  1/2 I_a (N q̇_j)^2: it adds N^2 I_a to M[j, j] and N^2 I_a q̈_j to τ_j, and nothing to
  Ṁ, C, Γ or g.
- the rest, mass m at c with inertia I_c - I_a z z^T about c (the transverse moments), is
  welded to r's parent body where r's frame is at q = 0; on the world (a rotor of a joint
  that hangs from the fixed base) it drops out.
- the frames attached to r's body (the rotor link) move with it to the parent.

A rotor that follows a sum of joints (:mod:`.couplings`: q_r = sum of c_l q_l) becomes the
same disc, spinning at sum of c_l q̇_l: it adds I_a c c^T to M, off the diagonal too (between
the joints it sums), and has no line in the model's ``armature`` list.

A rotor that is not balanced about its spin axis (centre of mass off the axis, or products
of inertia between the axis and the transverse ones beyond round-off) has no such split and
is refused with a message naming it, as is a coupled body with moving joints below it or
a coupled prismatic joint.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .model import (
    FM_BODY,
    FM_R,
    FM_T,
    MF_C,
    MF_I,
    MF_M,
    MF_PARENT,
    MF_R,
    MF_T,
    MF_TYPE,
    REVOLUTE,
    Model,
)

ROTOR_MODELS = ("exact", "armature")
# Round-off allowed in a balanced rotor: products of inertia with the spin axis relative to
# its largest moment, and the centre's distance from the axis (m).
PRODUCT_TOLERANCE = 1e-9
AXIS_TOLERANCE = 1e-9


def check_rotor_model(rotor_model) -> str:
    """``rotor_model`` if it is one of :data:`ROTOR_MODELS`; ValueError otherwise."""
    if not isinstance(rotor_model, str) or rotor_model not in ROTOR_MODELS:
        raise ValueError(
            f"rotor_model must be one of {', '.join(map(repr, ROTOR_MODELS))}, got {rotor_model!r}"
        )
    return rotor_model


def _add_rigid(row: np.ndarray, mass: float, com: np.ndarray, inertia: np.ndarray) -> None:
    """Weld a body (mass, centre, inertia about the centre, in ``row``'s frame) onto the body
    of ``row`` (an ``mf`` row), in place."""
    m0, c0 = row[MF_M], row[MF_C : MF_C + 3].copy()
    i0 = row[MF_I : MF_I + 9].reshape(3, 3)
    total = m0 + mass
    if total == 0.0:  # massless bodies: rotational inertia adds as it is
        row[MF_I : MF_I + 9] = (i0 + inertia).reshape(-1)
        return
    c = (m0 * c0 + mass * com) / total

    def shift(m, d):  # parallel axis: m (|d|^2 E - d d^T)
        return m * (d.dot(d) * np.eye(3) - np.outer(d, d))

    out = i0 + shift(m0, c0 - c) + inertia + shift(mass, com - c)
    row[MF_M] = total
    row[MF_C : MF_C + 3] = c
    row[MF_I : MF_I + 9] = (0.5 * (out + out.T)).reshape(-1)


def _split(model: Model, r: int, name: str, leader: str) -> tuple:
    """(I_a, mass, centre, transverse inertia about the centre) of coupled row r's body;
    ValueError if the body is not a rotor balanced about its spin axis."""
    mf = model.mf
    what = f"rotor_model='armature': coupled joint '{name}' (following '{leader}')"
    if int(mf[r, MF_TYPE]) != REVOLUTE:
        raise ValueError(f"{what} is prismatic; the armature approximation is for rotors")
    below = [model.joint_names[i] for i in range(model.nv) if int(mf[i, MF_PARENT]) == r]
    if below:
        raise ValueError(
            f"{what} carries moving joints ({', '.join(map(repr, below))}): only a rotor with "
            "nothing moving below it becomes an armature; use rotor_model='exact'"
        )
    mass = float(mf[r, MF_M])
    com = mf[r, MF_C : MF_C + 3].copy()
    inertia = mf[r, MF_I : MF_I + 9].reshape(3, 3).copy()
    off_axis = float(np.hypot(com[0], com[1])) if mass > 0.0 else 0.0
    if off_axis > AXIS_TOLERANCE:
        raise ValueError(
            f"{what}: its centre of mass is {off_axis:.3g} m off its spin axis; the armature "
            "approximation needs a rotor balanced about its axis (use rotor_model='exact')"
        )
    scale = float(np.abs(inertia).max())
    products = float(np.hypot(inertia[0, 2], inertia[1, 2]))
    if products > PRODUCT_TOLERANCE * scale:
        raise ValueError(
            f"{what}: its spin axis is not a principal axis of its inertia (products "
            f"ixz, iyz = {inertia[0, 2]:.3g}, {inertia[1, 2]:.3g} kg m^2 in the axis frame); "
            "the armature approximation needs a rotor balanced about its axis (use "
            "rotor_model='exact')"
        )
    spin = float(inertia[2, 2])
    transverse = inertia.copy()
    transverse[:, 2] = 0.0
    transverse[2, :] = 0.0
    return spin, mass, com, transverse


def armature_model(model: Model) -> Model:
    """The model with every coupled joint's body replaced by its armature (module docstring);
    the model itself if nothing is coupled."""
    if not (model.couplings or model.sums):
        return model
    mf = model.mf.copy()
    fm = model.fm.copy()
    rows = {name: i for i, name in enumerate(model.joint_names)}
    armature: dict[str, float] = {}
    # a rotor that follows a sum of joints: its disc spins at sum c_l qdot_l, which adds
    # I_a c c^T to M (off the diagonal too); it has no line in ``armature``
    summed = [(name, " + ".join(leader for leader, _ in terms), None)
              for name, terms, _offset in model.sums]  # fmt: skip
    for name, leader, ratio, *_ in (*model.couplings, *summed):
        r = rows[name]
        spin, mass, com, transverse = _split(model, r, name, leader)
        rot = mf[r, MF_R : MF_R + 9].reshape(3, 3).copy()
        trans = mf[r, MF_T : MF_T + 3].copy()
        parent = int(mf[r, MF_PARENT])
        if parent >= 0 and (mass > 0.0 or np.any(transverse)):
            _add_rigid(mf[parent], mass, rot @ com + trans, rot @ transverse @ rot.T)
        for f in np.flatnonzero(fm[:, FM_BODY] == r):  # the rotor link's frames, welded
            pose = fm[f, FM_R : FM_R + 9].reshape(3, 3)
            fm[f, FM_T : FM_T + 3] = rot @ fm[f, FM_T : FM_T + 3] + trans
            fm[f, FM_R : FM_R + 9] = (rot @ pose).reshape(-1)
            fm[f, FM_BODY] = parent
        # the spin: a massless thin disc on a world-fixed axis (only I_a about it matters)
        mf[r, MF_R : MF_R + 9] = np.eye(3).reshape(-1)
        mf[r, MF_T : MF_T + 3] = 0.0
        mf[r, MF_M] = 0.0
        mf[r, MF_C : MF_C + 3] = 0.0
        mf[r, MF_I : MF_I + 9] = np.diag([0.5 * spin, 0.5 * spin, spin]).reshape(-1)
        mf[r, MF_PARENT] = -1.0
        if ratio is not None:
            armature[leader] = armature.get(leader, 0.0) + ratio * ratio * spin
    ordered = tuple((j, armature[j]) for j in model.joint_names if j in armature)
    return dataclasses.replace(model, mf=mf, fm=fm, armature=ordered)
