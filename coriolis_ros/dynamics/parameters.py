"""Inertial parameters: read and change a model's masses and inertias in place.

``pi`` has ten entries per body, in Pinocchio's order and frames::

    m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz

with c the centre of mass and I the rotational inertia about the origin of the body's
URDF link frame (the child link of its joint, the frame Pinocchio calls the joint frame),
both expressed in that frame.  Bodies are the moving joints of the tree the kernels run
on, in its order (:attr:`Dynamics.tree_joint_names`, a multi-DoF joint such as a
floating base counted once, first): the links welded to a body by fixed joints are
merged into it, as Pinocchio merges them, and links welded to the world are not bodies.

Changing the parameters (:func:`write`) rewrites the mass, centre-of-mass and inertia
columns of the engine's own copy of the packed model, which every kernel reads on every
call: no rebuild, no recompilation, and every method (single calls, batches, the
observer of a later :meth:`Dynamics.clone`) uses the new values.  The ``Model``
(``dyn.model``, ``dyn.tree``) keeps describing the URDF as it was built.
"""

from __future__ import annotations

import numpy as np

from .kernels.kinematics import MAX_ABS
from .kernels.parameters import (
    BAD_SIZE,
    FIRST_MOMENT_WITHOUT_MASS,
    NOT_PHYSICAL,
    NOT_REPRESENTABLE,
)
from .model import MF_C, MF_I, MF_M, Model

NAMES = ("m", "mc_x", "mc_y", "mc_z", "I_xx", "I_xy", "I_yy", "I_xz", "I_yz", "I_zz")


def body_rows(tree: Model) -> list[int]:
    """The row carrying each body: the last row of each joint, in tree order."""
    return [first + nv - 1 for _, first, nv, _ in tree.joints()]


def body_links(tree: Model) -> tuple[str, ...]:
    """The URDF link of each body."""
    return tuple(tree.body_links[r] for r in body_rows(tree))


def body_joints(tree: Model) -> tuple[str, ...]:
    """The joint of each body (a multi-DoF joint by its own name, e.g. ``root_joint``)."""
    out = []
    for _, first, nv, _ in tree.joints():
        name = tree.joint_names[first]
        out.append(name.rsplit("/", 1)[0] if nv > 1 else name)
    return tuple(out)


def read(mf: np.ndarray, rotations: np.ndarray, tree: Model) -> np.ndarray:
    """pi of the bodies stored in ``mf`` (a new array, 10 per body)."""
    rows = body_rows(tree)
    out = np.empty((len(rows), 10))
    for b, i in enumerate(rows):
        m, c = mf[i, MF_M], mf[i, MF_C : MF_C + 3]
        inertia_c = mf[i, MF_I : MF_I + 9].reshape(3, 3)
        E = rotations[i].reshape(3, 3)  # x_body = E x_link
        h = E.T @ (m * c)
        inertia = E.T @ (inertia_c + m * (c.dot(c) * np.eye(3) - np.outer(c, c))) @ E
        out[b, 0], out[b, 1:4] = m, h
        out[b, 4:] = inertia[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]  # xx, xy, yy, xz, yz, zz
    return out.reshape(-1)


def write(engine, pi, check_physical: bool = True) -> None:
    """Store ``pi`` in the engine's model arrays; ValueError (naming the body's link) for a
    wrong size, a non-finite or huge entry, a body that is not physically consistent (if
    ``check_physical``) or one that the model cannot hold; nothing is changed then."""
    try:
        arr = np.array(pi, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        size = 10 * len(body_rows(engine.tree))
        raise ValueError(f"pi must be a sequence of {size} numbers: {exc}") from None
    if arr.ndim != 1:  # the length is the kernel's to check (BAD_SIZE)
        _refuse(BAD_SIZE, engine.tree, arr)
    if not np.all(np.abs(arr) <= MAX_ABS):
        k = int(np.argmax(~(np.abs(arr) <= MAX_ABS)))
        raise ValueError(
            f"pi[{k}] ({NAMES[k % 10]} of link '{body_links(engine.tree)[k // 10]}') is "
            f"{float(arr[k])!r}: parameters must be finite and within ±{MAX_ABS:g}"
        )
    status = engine.kernels.write_parameters(
        engine.mf_store, engine.link_rotations, arr, bool(check_physical)
    )
    if status:
        _refuse(status, engine.tree, arr)
    engine.refold()


def _refuse(status: int, tree: Model, pi: np.ndarray) -> None:
    if status == BAD_SIZE:
        size = 10 * len(body_rows(tree))
        raise ValueError(f"pi must have shape ({size},) (10 per body), got {pi.shape}")
    body, reason = divmod(status, 4)
    link = body_links(tree)[body]
    values = np.array2string(pi[10 * body : 10 * body + 10], precision=6)
    if reason == NOT_PHYSICAL:
        raise ValueError(
            f"body {body} (link '{link}') is not physically consistent: its pseudo-inertia "
            f"[[tr(I)/2 - I, m c], [m c^T, m]] is not positive definite (parameters {values}); "
            "pass check_physical=False to store it anyway"
        )
    if reason == FIRST_MOMENT_WITHOUT_MASS:
        raise ValueError(
            f"body {body} (link '{link}') has zero mass and a nonzero first moment m c "
            f"(parameters {values}): no centre of mass to store"
        )
    if reason == NOT_REPRESENTABLE:
        raise ValueError(
            f"body {body} (link '{link}'): its centre of mass or inertia about it is beyond "
            f"±{MAX_ABS:g} (a tiny mass with a large first moment; parameters {values})"
        )
    raise RuntimeError(f"internal error: parameter status {status}")


def pseudo_inertia(pi_body) -> np.ndarray:
    """J = [[1/2 tr(I) 1 - I, h], [h^T, m]] (4 x 4) of one body's ten parameters: physically
    consistent if and only if J is positive definite (Wensing, Kim and Slotine 2017)."""
    m, h = pi_body[0], np.asarray(pi_body[1:4], dtype=float)
    xx, xy, yy, xz, yz, zz = pi_body[4:10]
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


__all__ = ["NAMES", "body_joints", "body_links", "body_rows", "pseudo_inertia", "read", "write"]
