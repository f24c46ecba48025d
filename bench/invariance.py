"""Error of the dynamics against the base's distance from the world origin, ours and Pinocchio's.

    python bench/invariance.py [--markdown] [--states 5]

The joint-space dynamics of a floating (or planar) base with its twist in the base frame do
not depend on where the base stands: M, C, Γ, g and RNEA at base position d·u (u a unit
vector) equal those at the origin.  For each distance d this prints the largest relative
difference max|X(d) - X(0)| / max|X(0)| over random states (joint angles, base orientation,
velocities and accelerations O(1)), for our M, Ṁ, C, Γ, g, RNEA, C v, Cᵀ v, M v and
Slotine-Li torque (worst of all) and, computed the same way, for Pinocchio's M (crba),
C (computeCoriolisMatrix), g and RNEA, each on the same URDF with a free-flyer (planar) root.
docs/invariance.md shows the table; it is an accuracy measurement, not a timing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

ROBOTS = {  # label: (example-robot-data path, root joint)
    "Talos full v2 (floating)": ("talos_data/robots/talos_full_v2.urdf", "floating"),
    "Solo12 (floating)": ("solo_description/robots/solo12.urdf", "floating"),
    "UR5 on a planar base": ("ur_description/urdf/ur5_robot.urdf", "planar"),
}
DISTANCES = [0.0, 1.0, 1e2, 1e3, 1e4, 1e5, 5e5, 1e6, 5e6, 1e7]
DIRECTION = np.array([0.6, 0.8, 0.0])  # horizontal: a planar base moves in x-y


def _rel(x, x0) -> float:
    return float(np.abs(np.asarray(x) - x0).max() / max(np.abs(x0).max(), 1e-300))


def ours(dyn, q, v, a) -> list[np.ndarray]:
    M, Mdot, C = dyn.coriolis(q, v)
    return [M, Mdot, C, dyn.christoffel(q), dyn.gravity(q), dyn.inverse_dynamics(q, v, a),
            *dyn.coriolis_vectors(q, v), dyn.slotine_li(q, v, a, v)]  # fmt: skip


def pinocchio(oracle, q, v, a) -> list[np.ndarray]:
    return [oracle.M(q), oracle.C(q, v), oracle.g(q), oracle.rnea(q, v, a)]


def placed(q: np.ndarray, d: float, root: str) -> np.ndarray:
    out = q.copy()
    out[: 3 if root == "floating" else 2] = (d * DIRECTION)[: 3 if root == "floating" else 2]
    return out


def measure(path: str, root: str, states: int) -> list[list[float]]:
    """Rows [d, ours, pin M, pin C, pin g, pin RNEA] of worst relative errors."""
    from support.floating import MultiDofOracle, random_configuration

    from coriolis_ros.dynamics import Dynamics

    urdf = str(bl.erd_robots_dir() / path)
    dyn = Dynamics.from_urdf(urdf, root_joint=root, mimic="independent")
    oracle = MultiDofOracle(urdf, dyn, root)
    rng = np.random.default_rng(7)
    worst = np.zeros((len(DISTANCES), 5))
    for _ in range(states):
        q = random_configuration(dyn, rng, unit=True)
        v, a = rng.normal(size=dyn.nv), rng.normal(size=dyn.nv)
        q = placed(q, 0.0, root)
        ref_ours, ref_pin = ours(dyn, q, v, a), pinocchio(oracle, q, v, a)
        for row, d in enumerate(DISTANCES):
            qd = placed(q, d, root)
            err = [max(_rel(x, x0) for x, x0 in zip(ours(dyn, qd, v, a), ref_ours, strict=True))]
            err += [_rel(x, x0) for x, x0 in zip(pinocchio(oracle, qd, v, a), ref_pin, strict=True)]
            worst[row] = np.maximum(worst[row], err)
    return [[d, *w] for d, w in zip(DISTANCES, worst, strict=True)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--states", type=int, default=5, help="random states per robot (default 5)")
    args = ap.parse_args(argv)
    headers = ["base distance (m)", "ours: worst of all terms", "Pinocchio M", "Pinocchio C",
               "Pinocchio g", "Pinocchio RNEA"]  # fmt: skip
    print(bl.code_description())
    for label, (path, root) in ROBOTS.items():
        rows = measure(path, root, args.states)
        print(bl.heading(f"{label}: worst relative error over {args.states} states",
                         args.markdown))  # fmt: skip
        cells = [[f"{r[0]:g}"] + [f"{x:.1e}" if x else "0" for x in r[1:]] for r in rows]
        print(bl.table(headers, cells, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
