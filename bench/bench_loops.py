"""Closed loops: the four-bar's Cbar and Gammabar against its spanning tree and Pinocchio.

    python bench/bench_loops.py [--quick] [--markdown]

The bundled four-bar (``four_bar``: 3 tree joints, one revolute loop, 1 DoF), every call at a
new crank angle (a slow back-and-forth sweep, 0.001 rad apart, as along a trajectory: each
call closes the loop by Newton from the previous solution), preallocated ``out=`` buffers:

- ours: ``coriolis`` (Mbar, Mbardot, Cbar with the loop closed, A and dA/dy),
  ``coriolis`` + ``christoffel`` at the same angle (two calls; the closure is done once), and
  ``coriolis_christoffel`` (one call: the closure, Gammabar, and Cbar from Gammabar);
- the spanning tree alone: our ``coriolis`` of the 3-joint tree (no closure), the yardstick
  of the target "Cbar with Gammabar within 3x the tree's C";
- Pinocchio's route to Cbar at a configuration already closed (no Newton): frames at the
  loop's ends, ``computeJointJacobians`` + ``getFrameJacobian`` for the constraint Jacobian K
  (the points' linear rows), ``getFrameJacobianTimeVariation`` for Kdot, A = [1; -K_z^+ K_y],
  Adot = -[0; K_z^+ Kdot A], then ``crba`` and ``computeCoriolisMatrix`` and numpy for
  A^T C A + A^T M Adot.  Both Cbar are checked equal (1e-9 relative) first.

Times are µs per call, median (and min) over interleaved repeats.  Nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

REL_TOL = 1e-9


class PinLoopRoute:
    """Cbar of the four-bar from Pinocchio's tree quantities and frame Jacobians."""

    def __init__(self, pin, urdf_text, dyn):
        self.pin = pin
        self.model = pin.buildModelFromXML(urdf_text)
        m = self.model
        loop = dyn.loops[0]
        self.frames = []
        for link, (rot, xyz) in ((loop.predecessor, loop.pred_pose),
                                 (loop.successor, loop.succ_pose)):  # fmt: skip
            parent = m.frames[m.getFrameId(link)]
            placement = parent.placement * pin.SE3(rot, np.asarray(xyz))
            frame = pin.Frame(f"loop_{link}", parent.parentJoint, m.getFrameId(link), placement,
                              pin.FrameType.OP_FRAME)  # fmt: skip
            self.frames.append(m.addFrame(frame))
        self.data = m.createData()
        names = [m.names[j] for j in range(1, m.njoints)]
        self.perm = [names.index(n) for n in dyn.tree_joint_names]  # ours -> pinocchio order
        dep = [dyn.tree_joint_names.index(n) for n in dyn.dependent_joints]
        ind = [dyn.tree_joint_names.index(n) for n in dyn.joint_names]
        self.dep = [self.perm[i] for i in dep]
        self.ind = [self.perm[i] for i in ind]

    def q(self, q_tree):
        """Pinocchio's configuration (continuous joints as cos, sin) from our tree positions."""
        out = []
        m = self.model
        for j in range(1, m.njoints):
            x = q_tree[self.perm.index(j - 1)]
            out.extend([np.cos(x), np.sin(x)] if m.joints[j].nq == 2 else [x])
        return np.array(out)

    def cbar(self, qp, vp):
        pin, m, d = self.pin, self.model, self.data
        pin.computeJointJacobians(m, d, qp)
        pin.computeJointJacobiansTimeVariation(m, d, qp, vp)
        ref = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        fp, fs = self.frames
        K = pin.getFrameJacobian(m, d, fs, ref)[:3] - pin.getFrameJacobian(m, d, fp, ref)[:3]
        Kd = (pin.getFrameJacobianTimeVariation(m, d, fs, ref)[:3]
              - pin.getFrameJacobianTimeVariation(m, d, fp, ref)[:3])  # fmt: skip
        Kz = K[:, self.dep]
        A = np.zeros((m.nv, len(self.ind)))
        A[self.ind, np.arange(len(self.ind))] = 1.0
        A[self.dep] = -np.linalg.lstsq(Kz, K[:, self.ind], rcond=None)[0]
        Adot = np.zeros_like(A)
        Adot[self.dep] = -np.linalg.lstsq(Kz, Kd @ A, rcond=None)[0]
        M = pin.crba(m, d, qp)
        M = np.triu(M) + np.triu(M, 1).T
        C = pin.computeCoriolisMatrix(m, d, qp, vp)
        return A.T @ C @ A + A.T @ M @ Adot


def bench_four_bar(settings: bl.Settings) -> dict:
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.robots import robot_path, robot_urdf

    dyn = Dynamics.from_urdf(robot_path("four_bar"))
    dyn.warmup()
    tree = dyn.closed.tree_dynamics
    sweep = np.concatenate([np.arange(0.0, 1.0, 0.001), np.arange(1.0, 0.0, -0.001)])
    states = [np.array([y]) for y in sweep]
    yd = np.array([1.7])
    route = PinLoopRoute(pin, robot_urdf("four_bar"), dyn)
    # agreement at a few closed states
    worst = 0.0
    for y in states[::250]:
        q_tree = dyn.full_position(y)
        A, _ = dyn.velocity_map(y)
        vp = np.zeros(route.model.nv)
        vp[route.perm] = A @ yd
        ref = route.cbar(route.q(q_tree), vp)
        got = dyn.coriolis(y, yd)[2]
        worst = max(worst, float(np.abs(got - ref).max() / np.abs(ref).max()))
    assert worst <= REL_TOL, f"four-bar Cbar vs the Pinocchio route: rel. error {worst:.1e}"
    y0 = states[300]
    q_tree = dyn.full_position(y0)
    A, _ = dyn.velocity_map(y0)
    qp = route.q(q_tree)
    vp = np.zeros(route.model.nv)
    vp[route.perm] = A @ yd
    n, nt = dyn.nv, tree.nv
    ns = {
        "dyn": dyn, "tree": tree, "yd": yd, "q_tree": q_tree, "v_tree": A @ yd,
        "s1": itertools.cycle(states), "s2": itertools.cycle(states),
        "s3": itertools.cycle(states),
        "c": tuple(np.empty((n, n)) for _ in range(3)), "g": np.empty((n, n, n)),
        "cg": (*(np.empty((n, n)) for _ in range(3)), np.empty((n, n, n))),
        "ct": tuple(np.empty((nt, nt)) for _ in range(3)),
        "route": route, "qp": qp, "vp": vp,
    }  # fmt: skip
    stmts = {
        "C": "dyn.coriolis(next(s1), yd, out=c)",
        "CG": "y = next(s2); dyn.coriolis(y, yd, out=c); dyn.christoffel(y, out=g)",
        "both": "dyn.coriolis_christoffel(next(s3), yd, out=cg)",
        "tree": "tree.coriolis(q_tree, v_tree, out=ct)",
        "pin": "route.cbar(qp, vp)",
    }
    timings = bl.measure_group({k: (s, ns) for k, s in stmts.items()}, settings)
    return {"err": worst, **timings}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    settings = bl.Settings.for_mode(args.quick)
    r = bench_four_bar(settings)
    md = args.markdown
    print(bl.heading("Four-bar (1 DoF, 3-joint spanning tree, one revolute loop)", md))
    rows = [
        ["ours: Cbar (closure, A, dA/dy, tree C, reduction)", r["C"].fmt(), "1"],
        ["ours: Cbar and Gammabar at the same angle, two calls", r["CG"].fmt(),
         bl.fmt_ratio(r["CG"].median / r["C"].median)],
        ["ours: Cbar and Gammabar, one call (coriolis_christoffel)", r["both"].fmt(),
         bl.fmt_ratio(r["both"].median / r["C"].median)],
        ["ours: the spanning tree's C alone (no loop)", r["tree"].fmt(),
         bl.fmt_ratio(r["tree"].median / r["C"].median)],
        ["Pinocchio route: Cbar at a closed q (no Newton)", r["pin"].fmt(),
         bl.fmt_ratio(r["pin"].median / r["C"].median)],
    ]  # fmt: skip
    print(bl.table(["call", "µs med / min", "÷ ours Cbar"], rows, md))
    print()
    print(f"Cbar with Gammabar ÷ the tree's C: {r['both'].median / r['tree'].median:.1f} in one "
          f"call (target ≤ 3), {r['CG'].median / r['tree'].median:.1f} in two")  # fmt: skip
    print(f"ours Cbar ÷ Pinocchio route: {r['C'].median / r['pin'].median:.2f}; agreement "
          f"{r['err']:.1e} relative")  # fmt: skip
    print(bl.timing_note(settings, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
