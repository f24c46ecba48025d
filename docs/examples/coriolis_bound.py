"""Gain design with a Coriolis bound: k_c with ||C(q, qd)||_2 <= k_c ||qd|| over the joint limits.

    python docs/examples/coriolis_bound.py [URDF] [--samples N] [--v-max RAD_PER_S]

Default robot: the bundled 7-DoF arm (``coriolis_ros.robots``, "arm7").
Prints k_c, where it occurs, the power-method lower bound (how loose k_c can be), and the
damping a trajectory with ||qd_d|| <= v_max asks for so that K_D dominates C(q, qd_d):
lambda_min(K_D) > k_c v_max.
"""

from __future__ import annotations

import argparse
import numpy as np

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.bounds import coriolis_bound, joint_limits


def default_urdf() -> str:
    from coriolis_ros.robots import robot_path

    return str(robot_path("arm7"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("urdf", nargs="?", default=None)
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--v-max", type=float, default=2.0, help="max ||qd_d|| (rad/s)")
    args = ap.parse_args(argv)
    urdf = args.urdf or default_urdf()
    dyn = Dynamics.from_urdf(urdf)
    lower, upper = joint_limits(dyn, urdf)
    res = coriolis_bound(dyn, lower, upper, samples=args.samples)
    np.set_printoptions(precision=3, suppress=True)
    print(f"{dyn.name}: {res.samples} configurations in the joint-limit box")
    print(f"k_c = {res.k_c:.4g} (N m s^2 / rad^2) at q = {res.q_max}")
    print(f"attained somewhere: {res.k_lower:.4g} at q = {res.q_lower}, unit qd = {res.v_lower}")
    print(f"k_c / attained = {res.ratio:.3f} (at most sqrt(n) = {np.sqrt(dyn.nv):.3f})")
    print(f"||qd_d|| <= {args.v_max} rad/s: lambda_min(K_D) > k_c v_max = "
          f"{res.k_c * args.v_max:.4g} N m s / rad")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
