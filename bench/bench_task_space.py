"""Frame Jacobians and task-space dynamics: ours against the Pinocchio route, same run.

    python bench/bench_task_space.py [--quick] [--markdown]

Table 1, J and Jdot of one frame (reference LOCAL_WORLD_ALIGNED): ours ``frame_jacobians``
(both in one call) and ``frame_jacobian`` + ``frame_jacobian_dot`` (two calls), against
Pinocchio's ``computeFrameJacobian`` + ``computeJointJacobiansTimeVariation`` +
``getFrameJacobianTimeVariation`` (the last needs the second).

Table 2, Lambda and mu of a 6-D task: ours ``task_space`` (Lambda, mu, J, Jdot) against the
Pinocchio route: ``computeMinverse`` (upper triangle, symmetrized), ``computeFrameJacobian``,
``computeJointJacobiansTimeVariation`` + ``getFrameJacobianTimeVariation``,
``computeCoriolisMatrix``, then numpy: Lambda = inv(J M^-1 J^T), mu = Lambda (J M^-1 C -
Jdot) M^-1 J^T Lambda.

Robots (example-robot-data): Panda with its fingers locked (a 7-DoF arm, frame panda_hand;
Pinocchio's ``buildReducedModel`` with the same locks), Talos full v2 on a free flyer (nv = 50,
mimic joints as DoF, frame gripper_left_base_link) and Solo12 on a free flyer (Table 1,
frame FL_FOOT).  Agreement with Pinocchio is asserted before timing.  Preallocated ``out=``
buffers for ours.  Benchmarks, not tests: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

REL_TOL = 1e-9


def robots():
    """(label, Dynamics, PinRobot-like (model, data, v permutation), frame, q, v)."""
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics

    root = bl.erd_robots_dir()
    out = []
    specs = [
        ("Panda, fingers locked (7-DoF arm)", "panda_description/urdf/panda.urdf", "fixed",
         "panda_hand", {"panda_finger_joint1": 0.02, "panda_finger_joint2": 0.02}),
        ("Talos full v2, free flyer", "talos_data/robots/talos_full_v2.urdf", "floating",
         "gripper_left_base_link", None),
        ("Solo12, free flyer", "solo_description/robots/solo12.urdf", "floating", "FL_FOOT", None),
    ]  # fmt: skip
    rng = np.random.default_rng(5)
    for label, rel, base, frame, locks in specs:
        path = str(root / rel)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dyn = Dynamics.from_urdf(path, root_joint=base, mimic="independent",
                                     locked_joints=locks)
        model = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if base == "floating"
                 else pin.buildModelFromUrdf(path))
        if locks:
            ids = [model.getJointId(n) for n in locks]
            qlock = pin.neutral(model)
            for n, x in locks.items():
                qlock[model.joints[model.getJointId(n)].idx_q] = x
            model = pin.buildReducedModel(model, ids, qlock)
        data = model.createData()
        # our v order -> Pinocchio's (joint names; the free flyer's 6 first in both)
        perm, qmap = [], []
        for kind, first, nv, iq in dyn.model.joints():
            name = dyn.joint_names[first].rsplit("/", 1)[0] if nv > 1 else dyn.joint_names[first]
            jid = model.getJointId("root_joint" if nv == 6 else name)
            perm += list(range(model.idx_vs[jid], model.idx_vs[jid] + nv))
            qmap.append((iq, model.idx_qs[jid], model.joints[jid].nq, nv))
        q = dyn.neutral()
        for _, _, _, iq in [j for j in dyn.model.joints() if j[2] == 1]:
            q[iq] = rng.uniform(-1.0, 1.0)
        v = rng.normal(0.0, 1.0, dyn.nv)
        qp = pin.neutral(model)
        for iq, pq, pnq, nv in qmap:
            if nv == 6:
                qp[pq : pq + 7] = q[iq : iq + 7]
            elif pnq == 2:
                qp[pq : pq + 2] = np.cos(q[iq]), np.sin(q[iq])
            else:
                qp[pq] = q[iq]
        vp = np.zeros(model.nv)
        vp[perm] = v
        out.append((label, dyn, model, data, np.array(perm), frame, q, v, qp, vp))
    return out


def pin_jacobians(pin, model, data, qp, vp, fid, ref):
    J = pin.computeFrameJacobian(model, data, qp, fid, ref)
    pin.computeJointJacobiansTimeVariation(model, data, qp, vp)
    return J, pin.getFrameJacobianTimeVariation(model, data, fid, ref)


def pin_task(pin, model, data, qp, vp, fid, ref):
    Minv = pin.computeMinverse(model, data, qp)
    Minv = np.triu(Minv) + np.triu(Minv, 1).T
    J = pin.computeFrameJacobian(model, data, qp, fid, ref)
    pin.computeJointJacobiansTimeVariation(model, data, qp, vp)
    Jdot = pin.getFrameJacobianTimeVariation(model, data, fid, ref)
    C = pin.computeCoriolisMatrix(model, data, qp, vp)
    MJt = Minv @ J.T
    Lam = np.linalg.inv(J @ MJt)
    mu = Lam @ (J @ Minv @ C - Jdot) @ MJt @ Lam
    return Lam, mu


def rel_err(got, ref) -> float:
    return float(np.abs(got - ref).max() / max(1.0, np.abs(ref).max()))


def bench(settings: bl.Settings) -> list[dict]:
    import pinocchio as pin

    ref = pin.LOCAL_WORLD_ALIGNED
    results = []
    for label, dyn, model, data, perm, frame, q, v, qp, vp in robots():
        dyn.warmup_frames()
        n, fid = dyn.nv, model.getFrameId(frame, pin.BODY)
        J, Jd = np.empty((6, n)), np.empty((6, n))
        task = (np.empty((6, 6)), np.empty((6, 6)), np.empty((6, n)), np.empty((6, n)))
        Jp, Jdp = pin_jacobians(pin, model, data, qp, vp, fid, ref)
        dyn.frame_jacobians(q, v, frame, out=(J, Jd))
        err_J = max(rel_err(J, Jp[:, perm]), rel_err(Jd, Jdp[:, perm]))
        assert err_J <= REL_TOL, f"{label}: J, Jdot vs Pinocchio {err_J:.1e}"
        ns = {"dyn": dyn, "q": q, "v": v, "frame": frame, "J": J, "Jd": Jd, "task": task,
              "pin": pin, "model": model, "data": data, "qp": qp, "vp": vp, "fid": fid,
              "ref": ref, "pj": pin_jacobians, "pt": pin_task}  # fmt: skip
        stmts = {
            "ours1": "dyn.frame_jacobians(q, v, frame, out=(J, Jd))",
            "ours2": "dyn.frame_jacobian(q, frame, out=J); "
                     "dyn.frame_jacobian_dot(q, v, frame, out=Jd)",
            "pinJ": "pj(pin, model, data, qp, vp, fid, ref)",
        }
        row = {"label": label, "nv": n, "frame": frame, "err_J": err_J}
        if not label.startswith("Solo"):
            Lp, mp = pin_task(pin, model, data, qp, vp, fid, ref)
            dyn.task_space(q, v, frame, out=task)
            err_T = max(rel_err(task[0], Lp), rel_err(task[1], mp))
            assert err_T <= REL_TOL, f"{label}: Lambda, mu vs Pinocchio route {err_T:.1e}"
            row["err_T"] = err_T
            stmts["oursT"] = "dyn.task_space(q, v, frame, out=task)"
            stmts["pinT"] = "pt(pin, model, data, qp, vp, fid, ref)"
        row.update(bl.measure_group({k: (s, ns) for k, s in stmts.items()}, settings))
        results.append(row)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = ap.parse_args(argv)
    settings = bl.Settings.for_mode(args.quick)
    md = args.markdown
    t0 = time.perf_counter()
    print(bl.heading("Frame Jacobians and task-space dynamics vs Pinocchio", md, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if md else line)
    print(f"{'- ' if md else ''}{bl.timing_note(settings, args.quick)}")
    print(f"{'- ' if md else ''}Times in µs per call (median / min); ratios of the medians.")
    print()
    res = bench(settings)
    print(bl.heading("J and Jdot of one frame (local world aligned)", md))
    print()
    rows = []
    for r in res:
        rows.append([f"{r['label']} (nv {r['nv']}, {r['frame']})", r["ours1"].fmt(),
                     r["ours2"].fmt(), r["pinJ"].fmt(),
                     bl.fmt_ratio(r["ours1"].median / r["pinJ"].median),
                     bl.fmt_ratio(r["ours2"].median / r["pinJ"].median), f"{r['err_J']:.1e}"])
    print(bl.table(["robot", "ours frame_jacobians", "ours J + Jdot (2 calls)",
                    "Pinocchio (3 calls)", "ratio (1 call)", "ratio (2 calls)", "rel. err"],
                   rows, md))
    print()
    print(bl.heading("Lambda and mu of a 6-D task", md))
    print()
    rows = []
    for r in res:
        if "oursT" in r:
            rows.append([f"{r['label']} (nv {r['nv']}, {r['frame']})", r["oursT"].fmt(),
                         r["pinT"].fmt(), bl.fmt_ratio(r["oursT"].median / r["pinT"].median),
                         f"{r['err_T']:.1e}"])
    print(bl.table(["robot", "ours task_space", "Pinocchio route", "ratio", "rel. err"], rows, md))
    print()
    print(f"(bench_task_space finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
