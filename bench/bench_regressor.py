"""Regressors and parameter updates: ours against Pinocchio, side by side in the same run.

    python bench/bench_regressor.py [--quick] [--markdown] [--runs N]

UR5 (fixed base, nv = 6, 6 bodies) and Talos full v2 with a free-flyer root (nv = 50, 45
bodies), same random state for both libraries, preallocated ``out=`` buffers for ours:

* ``regressor(q, qd, qd, qdd)``, the inverse-dynamics regressor, against Pinocchio's
  ``computeJointTorqueRegressor(model, data, q, v, a)`` (the same matrix, columns in the
  bodies' order); ``regressor(q, qd, qd_r, qdd_r)``, the Slotine-Li regressor (no Pinocchio
  peer: same sweep, listed for its cost);
* ``energy_regressor(q, qd)`` (kinetic and potential rows in one call) against Pinocchio's
  ``computeKineticEnergyRegressor`` + ``computePotentialEnergyRegressor``;
* ``set_inertial_parameters(pi)`` (checks included: sizes, finite, pseudo-inertia of every
  body) against the Pinocchio route to the same change, one
  ``model.inertias[j] = Inertia.FromDynamicParameters(pi_j)`` per body (no checks).

Both regressors are checked against Pinocchio's (max |ours - Pinocchio| / max |Pinocchio| <=
1e-10, asserted) before timing.  Each run interleaves the repeats of the calls of one robot
(they share the background load); with ``--runs N`` the table gives the median over the runs
of each run's median, and the range of the run medians; ratios are ours / Pinocchio of the
medians, median (range) over the runs.  Benchmarks, not tests: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

REL_TOL = 1e-10
ROBOTS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", False),
          "talos_full": ("talos_data/robots/talos_full_v2.urdf", True)}  # fmt: skip


def rel_err(got, ref) -> float:
    return float(np.abs(got - ref).max() / np.abs(ref).max())


def setup(name: str) -> dict:
    """Both libraries on one robot, one state, agreement checked; the timing namespace."""
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics

    rel, floating = ROBOTS[name]
    urdf = str(bl.erd_robots_dir() / rel)
    root = "floating" if floating else "fixed"
    dyn = Dynamics.from_urdf(urdf, root_joint=root, mimic="independent")  # as Pinocchio reads it
    base = 6 if floating else 0
    robot = bl.PinRobot(urdf, dyn.joint_names[base:], free_flyer=floating)
    model, data = robot.model, robot.data
    n, nb = dyn.nv, len(dyn.parameter_links)
    rng = np.random.default_rng(3)
    nq_base = 7 if floating else 0  # a free flyer's (x, y, z, qx, qy, qz, qw)
    q = rng.uniform(-1.0, 1.0, dyn.nq)
    q[3:nq_base] /= np.linalg.norm(q[3:nq_base]) if floating else 1.0
    qd, qdd, qdr, qddr = rng.normal(size=(4, n))
    qp = robot.q(q[nq_base:])
    qp[:nq_base] = q[:nq_base]
    vp = robot.v(qd[base:], base=qd[:base] if floating else None)
    ap = robot.v(qdd[base:], base=qdd[:base] if floating else None)
    # Pinocchio's rows and columns in ours: rows by velocity index, columns by body joint
    rows = np.empty(n, dtype=np.int64)
    rows[:base] = np.arange(base)
    rows[base + robot.perm] = base + np.arange(n - base)  # our row of each Pinocchio v slot
    cols = np.concatenate(
        [np.arange(10) + 10 * (model.getJointId(j) - 1) for j in dyn.parameter_joints]
    )
    Y = np.empty((n, 10 * nb))
    E = np.empty((2, 10 * nb))
    dyn.regressor(q, qd, qd, qdd, out=Y)
    Yp = np.asarray(pin.computeJointTorqueRegressor(model, data, qp, vp, ap))
    ours_in_pin = np.empty_like(Y)
    ours_in_pin[rows] = Y  # our rows, placed at Pinocchio's v index
    err_Y = rel_err(ours_in_pin[:, np.argsort(cols)], Yp)
    assert err_Y <= REL_TOL, f"{name}: regressor vs Pinocchio's, rel. error {err_Y:.1e}"
    dyn.energy_regressor(q, qd, out=E)
    Tp = np.asarray(pin.computeKineticEnergyRegressor(model, data, qp, vp))
    Up = np.asarray(pin.computePotentialEnergyRegressor(model, data, qp))
    err_E = max(rel_err(E[0][np.argsort(cols)], Tp), rel_err(E[1][np.argsort(cols)], Up))
    assert err_E <= REL_TOL, f"{name}: energy regressor vs Pinocchio's, rel. error {err_E:.1e}"
    pi = dyn.inertial_parameters()
    joint_ids = [model.getJointId(j) for j in dyn.parameter_joints]
    dyn.set_inertial_parameters(pi)  # compile before timing
    dyn.regressor(q, qd, qdr, qddr, out=Y)
    ns = {
        "dyn": dyn, "pin": pin, "model": model, "data": data, "q": q, "qd": qd, "qdd": qdd,
        "qdr": qdr, "qddr": qddr, "qp": qp, "vp": vp, "ap": ap, "Y": Y, "E": E, "pi": pi,
        "blocks": [(j, pi[10 * b : 10 * b + 10].copy()) for b, j in enumerate(joint_ids)],
        "Inertia": pin.Inertia,
    }  # fmt: skip
    return {"ns": ns, "nv": n, "bodies": nb, "err_Y": err_Y, "err_E": err_E}


STATEMENTS = {
    "Y": "dyn.regressor(q, qd, qd, qdd, out=Y)",
    "Y_pin": "pin.computeJointTorqueRegressor(model, data, qp, vp, ap)",
    "Y_sl": "dyn.regressor(q, qd, qdr, qddr, out=Y)",
    "E": "dyn.energy_regressor(q, qd, out=E)",
    "E_pin": "pin.computeKineticEnergyRegressor(model, data, qp, vp); "
    "pin.computePotentialEnergyRegressor(model, data, qp)",
    "P": "dyn.set_inertial_parameters(pi)",
    "P_pin": "for j, p in blocks: model.inertias[j] = Inertia.FromDynamicParameters(p)",
}
ROWS = [
    ("inverse-dynamics regressor", "Y", "Y_pin"),
    ("Slotine-Li regressor (q̇r ≠ q̇)", "Y_sl", None),
    ("energy regressors (T and U)", "E", "E_pin"),
    ("set_inertial_parameters", "P", "P_pin"),
]


def run(robots, settings, runs: int) -> dict:
    out = {}
    for name in robots:
        s = setup(name)
        stmts = {k: (v, s["ns"]) for k, v in STATEMENTS.items()}
        s["runs"] = [bl.measure_group(stmts, settings) for _ in range(runs)]
        out[name] = s
    return out


def _agg(values, fmt=bl.fmt_us) -> str:
    """Median (min–max) over the runs."""
    v = np.asarray(values, dtype=float)
    if len(v) == 1:
        return fmt(float(v[0]))
    return f"{fmt(float(np.median(v)))} ({fmt(float(v.min()))}–{fmt(float(v.max()))})"


def report(res: dict, md: bool) -> str:
    lines = []
    for name, s in res.items():
        lines.append(bl.heading(f"{name} (nv = {s['nv']}, {s['bodies']} bodies, Y {s['nv']} × "
                                f"{10 * s['bodies']}); max rel. err vs Pinocchio: Y "
                                f"{s['err_Y']:.1e}, energies {s['err_E']:.1e}", md))  # fmt: skip
        lines.append("")
        rows = []
        for label, ours, peer in ROWS:
            o = [r[ours].median for r in s["runs"]]
            if peer is None:
                rows.append([label, _agg(o), "-", "-"])
                continue
            p = [r[peer].median for r in s["runs"]]
            rows.append([label, _agg(o), _agg(p), _agg(np.divide(o, p), bl.fmt_ratio)])
        headers = ["call", "ours (µs)", "Pinocchio (µs)", "ours / Pinocchio"]
        lines.append(bl.table(headers, rows, md))
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--runs", type=int, default=1, help="independent runs (median and range)")
    ap.add_argument("--robots", default="ur5,talos_full")
    args = ap.parse_args(argv)
    settings = bl.Settings.for_mode(args.quick)
    md = args.markdown
    t0 = time.perf_counter()
    print(bl.heading("Regressors and parameter updates: coriolis_ros.dynamics vs Pinocchio", md, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if md else line)
    print(f"{'- ' if md else ''}{bl.timing_note(settings, args.quick)}")
    print(f"{'- ' if md else ''}{args.runs} run(s): median of the run medians (range), µs per "
          "call; ratios: median (range) over the runs of ours / Pinocchio.")  # fmt: skip
    print()
    print(report(run(args.robots.split(","), settings, args.runs), md))
    print(f"(bench_regressor finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
