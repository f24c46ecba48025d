"""Deterministic generator of random kinematic-tree URDFs.

The topologies follow Section 5 of Echeandia & Wensing, "Numerical methods to compute the
Coriolis matrix and Christoffel symbols for rigid-body systems": serial chains, binary trees
(branching factor 2, depth O(log N)), bipeds (a main body and two serial-chain legs, optionally
two arms) and quadrupeds (a main body and four serial-chain legs).  The paper's legged systems
have a floating main body; here the main body is the fixed root link, and the limbs split the
N joint DoF evenly.

Every generated URDF is a plain XML string.  Given the same arguments the output is identical
(byte for byte): all randomness comes from ``numpy.random.default_rng(seed)`` and every number
is written with ``repr`` so that every parser reads back exactly the sampled double.

Randomised features (see :class:`TreeOptions`):
  * joint type per DoF: revolute, continuous or prismatic, with a random unit axis (sometimes a
    signed coordinate axis, so both "aligned" and "unaligned" code paths are exercised);
  * random joint origins (xyz and rpy);
  * random physically valid inertias: positive mass, rotational inertia about the CoM built from
    positive second moments (so it is positive definite and satisfies the triangle
    inequalities strictly), rotated by a random rotation (non-zero products of inertia), with a
    random CoM offset and a random ``<inertial><origin rpy>``;
  * fixed joints: "mount" links between a parent and a DoF joint, and fixed leaf links
    (sensor/tool frames) carrying mass or not;
  * massless links (no ``<inertial>``), only where the mass matrix stays positive definite
    (never a massless leaf body behind a DoF joint);
  * the order of ``<link>``/``<joint>`` elements in the file is shuffled.

Public API: :func:`serial_chain`, :func:`binary_tree`, :func:`biped`, :func:`quadruped`,
:func:`random_tree` and :func:`paper_topologies`; :func:`dof_parents` returns the DoF parent
array a topology uses (``-1`` is the root link).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TOPOLOGIES = ("serial_chain", "binary_tree", "biped", "quadruped")
_ALIASES = {
    "serial": "serial_chain",
    "chain": "serial_chain",
    "serial_chain": "serial_chain",
    "binary": "binary_tree",
    "binary_tree": "binary_tree",
    "biped": "biped",
    "quadruped": "quadruped",
}
JOINT_TYPES = ("revolute", "continuous", "prismatic")


@dataclass(frozen=True)
class TreeOptions:
    """Knobs of the generator (defaults: everything mixed in)."""

    joint_types: tuple[str, ...] = JOINT_TYPES
    """Allowed DoF joint types, drawn uniformly."""
    mount_probability: float = 0.3
    """Probability that a DoF joint hangs below a fixed joint + extra "mount" link."""
    leaf_fixed_probability: float = 0.15
    """Probability that a body carries an extra fixed leaf link (sensor/tool frame)."""
    massless_probability: float = 0.2
    """Probability that a link with descendants carrying mass has no <inertial>."""
    aligned_axis_probability: float = 0.25
    """Probability that a joint axis is a signed coordinate axis instead of a random one."""
    shuffle: bool = True
    """Shuffle the order of <link>/<joint> elements in the document."""


PLAIN = TreeOptions(
    joint_types=("revolute",),
    mount_probability=0.0,
    leaf_fixed_probability=0.0,
    massless_probability=0.0,
    aligned_axis_probability=0.0,
    shuffle=False,
)
"""Options for the paper's benchmark systems: one body per revolute joint, nothing else."""


# ----------------------------------------------------------------------------- topologies


def dof_parents(topology: str, n_dof: int, arms: bool = False) -> list[int]:
    """Parent DoF index of each DoF body (``-1``: the root link), parents before children."""
    topology = _canonical(topology)
    _check_n(n_dof)
    if topology == "serial_chain":
        return [i - 1 for i in range(n_dof)]
    if topology == "binary_tree":
        # Heap numbering: body i (1-based) has parent i // 2, body 1 is attached to the root.
        return [(i + 1) // 2 - 1 for i in range(n_dof)]
    limbs = 4 if (topology == "quadruped" or arms) else 2
    parents: list[int] = []
    for length in _limb_lengths(n_dof, limbs):
        start = len(parents)
        parents.extend([-1] + [start + k for k in range(length - 1)] if length else [])
    return parents


def _limb_lengths(n_dof: int, limbs: int) -> list[int]:
    base, extra = divmod(n_dof, limbs)
    return [base + (1 if k < extra else 0) for k in range(limbs)]


def _limb_names(topology: str, n_dof: int, arms: bool) -> list[str]:
    """A readable name prefix for each DoF body."""
    if topology == "serial_chain":
        return ["chain"] * n_dof
    if topology == "binary_tree":
        return ["node"] * n_dof
    if topology == "quadruped":
        labels = ["lf_leg", "rf_leg", "lh_leg", "rh_leg"]
    elif arms:
        labels = ["l_leg", "r_leg", "l_arm", "r_arm"]
    else:
        labels = ["l_leg", "r_leg"]
    names: list[str] = []
    for label, length in zip(labels, _limb_lengths(n_dof, len(labels))):
        names.extend([label] * length)
    return names


def _canonical(topology: str) -> str:
    try:
        return _ALIASES[topology]
    except KeyError:
        raise ValueError(f"unknown topology {topology!r}; expected one of {TOPOLOGIES}") from None


def _check_n(n_dof: int) -> None:
    if not isinstance(n_dof, (int, np.integer)) or n_dof < 1:
        raise ValueError(f"n_dof must be a positive integer, got {n_dof!r}")


# ----------------------------------------------------------------------------- sampling


def _f(x: float) -> str:
    return repr(float(x))


def _vec(v) -> str:
    return " ".join(_f(x) for x in v)


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    qv = rng.normal(size=4)
    w, x, y, z = qv / np.linalg.norm(qv)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def _rpy(rng: np.random.Generator) -> np.ndarray:
    return np.array(
        [rng.uniform(-math.pi, math.pi), rng.uniform(-1.5, 1.5), rng.uniform(-math.pi, math.pi)]
    )


def _inertial_xml(rng: np.random.Generator) -> str:
    mass = math.exp(rng.uniform(math.log(0.2), math.log(5.0)))
    # Second moments of the mass distribution along principal axes (m * sigma^2 > 0); principal
    # moments Ixx = Sy + Sz etc. are then positive and satisfy the triangle inequalities strictly.
    sigma2 = rng.uniform(0.0005, 0.02, size=3)
    s = mass * sigma2
    principal = np.array([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
    rot = _random_rotation(rng)
    inertia = rot @ np.diag(principal) @ rot.T
    inertia = 0.5 * (inertia + inertia.T)
    com = rng.uniform(-0.15, 0.15, size=3)
    rpy = _rpy(rng)
    return (
        "    <inertial>\n"
        f'      <origin xyz="{_vec(com)}" rpy="{_vec(rpy)}"/>\n'
        f'      <mass value="{_f(mass)}"/>\n'
        f'      <inertia ixx="{_f(inertia[0, 0])}" ixy="{_f(inertia[0, 1])}" '
        f'ixz="{_f(inertia[0, 2])}" iyy="{_f(inertia[1, 1])}" iyz="{_f(inertia[1, 2])}" '
        f'izz="{_f(inertia[2, 2])}"/>\n'
        "    </inertial>\n"
    )


def _axis(rng: np.random.Generator, aligned_probability: float) -> np.ndarray:
    if rng.uniform() < aligned_probability:
        axis = np.zeros(3)
        axis[rng.integers(3)] = rng.choice([-1.0, 1.0])
        return axis
    while True:
        a = rng.normal(size=3)
        norm = np.linalg.norm(a)
        if norm > 1e-3:
            return a / norm


def _link_xml(name: str, inertial: str | None) -> str:
    if inertial is None:
        return f'  <link name="{name}"/>\n'
    return f'  <link name="{name}">\n{inertial}  </link>\n'


def _joint_xml(
    name: str,
    jtype: str,
    parent: str,
    child: str,
    xyz,
    rpy,
    axis=None,
) -> str:
    lines = [
        f'  <joint name="{name}" type="{jtype}">\n',
        f'    <parent link="{parent}"/>\n',
        f'    <child link="{child}"/>\n',
        f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>\n',
    ]
    if axis is not None:
        lines.append(f'    <axis xyz="{_vec(axis)}"/>\n')
    if jtype == "revolute":
        lines.append('    <limit lower="-3.14" upper="3.14" effort="100.0" velocity="10.0"/>\n')
    elif jtype == "prismatic":
        lines.append('    <limit lower="-0.5" upper="0.5" effort="100.0" velocity="2.0"/>\n')
    lines.append("  </joint>\n")
    return "".join(lines)


# ----------------------------------------------------------------------------- generator


def _generate(
    topology: str,
    n_dof: int,
    seed: int,
    options: TreeOptions,
    arms: bool = False,
    name: str | None = None,
) -> str:
    topology = _canonical(topology)
    _check_n(n_dof)
    for jt in options.joint_types:
        if jt not in JOINT_TYPES:
            raise ValueError(f"unsupported joint type {jt!r} for the generator")
    parents = dof_parents(topology, n_dof, arms=arms)
    prefixes = _limb_names(topology, n_dof, arms)
    rng = np.random.default_rng(seed)

    has_child = [False] * n_dof
    for p in parents:
        if p >= 0:
            has_child[p] = True

    robot_name = name or f"{topology}_{n_dof}dof_seed{seed}"
    root = "torso" if topology in ("biped", "quadruped") else "base_link"
    elements: list[str] = [_link_xml(root, _inertial_xml(rng))]
    body_link = [f"{prefixes[i]}_link{i}" for i in range(n_dof)]

    def offset() -> tuple[np.ndarray, np.ndarray]:
        return rng.uniform(-0.3, 0.3, size=3), _rpy(rng)

    for i in range(n_dof):
        parent_link = root if parents[i] < 0 else body_link[parents[i]]
        # Optional fixed joint + mount link between the parent body and the DoF joint.  The mount
        # is upstream of the DoF body, so it may be massless without making M singular.
        if rng.uniform() < options.mount_probability:
            mount = f"{prefixes[i]}_mount{i}"
            inertial = None if rng.uniform() < options.massless_probability else _inertial_xml(rng)
            xyz, rpy = offset()
            elements.append(_link_xml(mount, inertial))
            elements.append(
                _joint_xml(f"{prefixes[i]}_mount_joint{i}", "fixed", parent_link, mount, xyz, rpy)
            )
            parent_link = mount
        jtype = options.joint_types[rng.integers(len(options.joint_types))]
        axis = _axis(rng, options.aligned_axis_probability)
        xyz, rpy = offset()
        # A body may be massless only if it has DoF descendants (they keep M positive definite).
        massless = has_child[i] and rng.uniform() < options.massless_probability
        elements.append(_link_xml(body_link[i], None if massless else _inertial_xml(rng)))
        elements.append(
            _joint_xml(f"{prefixes[i]}_joint{i}", jtype, parent_link, body_link[i], xyz, rpy, axis)
        )
        # Optional fixed leaf (sensor or tool frame), with or without mass.
        if rng.uniform() < options.leaf_fixed_probability:
            leaf = f"{prefixes[i]}_frame{i}"
            inertial = None if rng.uniform() < 0.5 else _inertial_xml(rng)
            xyz, rpy = offset()
            elements.append(_link_xml(leaf, inertial))
            elements.append(
                _joint_xml(f"{prefixes[i]}_frame_joint{i}", "fixed", body_link[i], leaf, xyz, rpy)
            )

    if options.shuffle:
        order = rng.permutation(len(elements))
        elements = [elements[k] for k in order]
    return (
        f'<?xml version="1.0"?>\n<robot name="{robot_name}">\n' + "".join(elements) + "</robot>\n"
    )


def serial_chain(n_dof: int, seed: int = 0, options: TreeOptions = TreeOptions()) -> str:
    """A serial chain of ``n_dof`` DoF joints below a fixed base link."""
    return _generate("serial_chain", n_dof, seed, options)


def binary_tree(n_dof: int, seed: int = 0, options: TreeOptions = TreeOptions()) -> str:
    """A binary tree (heap numbering) of ``n_dof`` DoF joints below a fixed base link."""
    return _generate("binary_tree", n_dof, seed, options)


def biped(
    n_dof: int, seed: int = 0, options: TreeOptions = TreeOptions(), arms: bool = False
) -> str:
    """A fixed torso with two serial-chain legs (and two arms if ``arms``) sharing ``n_dof``."""
    return _generate("biped", n_dof, seed, options, arms=arms)


def quadruped(n_dof: int, seed: int = 0, options: TreeOptions = TreeOptions()) -> str:
    """A fixed torso with four serial-chain legs sharing ``n_dof`` evenly."""
    return _generate("quadruped", n_dof, seed, options)


def random_tree(
    topology: str,
    n_dof: int,
    seed: int = 0,
    options: TreeOptions = TreeOptions(),
    arms: bool = False,
) -> str:
    """URDF of a random tree; ``topology`` in :data:`TOPOLOGIES` (or "serial"/"binary")."""
    return _generate(topology, n_dof, seed, options, arms=arms)


def expected_tree_depth(topology: str, n_dof: int, arms: bool = False) -> int:
    """Max number of DoF joints on a root-to-leaf path (fixed joints do not count)."""
    parents = dof_parents(topology, n_dof, arms=arms)
    depth = [0] * n_dof
    for i, p in enumerate(parents):
        depth[i] = 1 + (depth[p] if p >= 0 else 0)
    return max(depth)


def paper_topologies(n_dof: int = 20, seed: int = 2020) -> dict[str, str]:
    """The four benchmark systems of the paper's Table 1 (20 DoF each by default).

    Revolute joints only, one body per joint, random axes and inertias; biped and quadruped have
    a fixed torso and limbs splitting the DoF evenly (biped 2 x 10, quadruped 4 x 5 at 20 DoF).
    """
    return {
        name: _generate(name, n_dof, seed + k, PLAIN, name=f"paper_{name}_{n_dof}dof")
        for k, name in enumerate(TOPOLOGIES)
    }


if __name__ == "__main__":  # pragma: no cover - manual inspection helper
    import sys

    topo = sys.argv[1] if len(sys.argv) > 1 else "biped"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    s = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    sys.stdout.write(random_tree(topo, n, s))
