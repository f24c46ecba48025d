"""One tick of Slotine-Li adaptive control: ours against the Pinocchio regressor route, side by
side in the same run.

    python bench/bench_adaptive.py [--quick] [--markdown] [--runs N] [--robots ur5,panda,solo12]

UR5 and Panda (fixed base; Panda's finger joints as independent DoF, as Pinocchio reads the
URDF) and Solo12 with a free-flyer root, the same random state for both:

* ours: ``AdaptiveController.track(q, qd, q_d, qd_d, qdd_d)`` (fixed bases; the references,
  the Slotine-Li regressor Y(q, qd, qd_r, qdd_r), tau = Y pi^ - K_D s, pi^ <- pi^ - dt P Y^T s
  and the projection check of every body, in two compiled calls) and
  ``AdaptiveController.step(q, qd, qd_r, qdd_r)`` (the same without the references; Solo12's
  floating base needs the caller's references);
* the Pinocchio route, per tick: ``computeJointTorqueRegressor(model, data, q, qd, qdd_r)``
  (Pinocchio has no Slotine-Li regressor with qd_r != qd; its inverse-dynamics regressor is
  the same size and the same kind of sweep), then in numpy tau = Y pi - K_D s,
  pi -= dt P (Y^T s) with the dense block-diagonal P, and one ``np.linalg.cholesky`` of each
  body's scaled pseudo-inertia (the projection's test; no body needs projecting here).
  Both timed with a dt so small that the repeated ticks at one state leave pi where it is.

Before timing, one tick of ours is checked against the same numpy formulas on our own
regressor (1e-12).  1 kHz leaves 1000 µs per tick.  Benchmarks, not tests: nothing here asserts
a speed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

ROBOTS = {"ur5": ("ur_description/urdf/ur5_robot.urdf", False),
          "panda": ("panda_description/urdf/panda.urdf", False),
          "solo12": ("solo_description/robots/solo12.urdf", True)}  # fmt: skip


def setup(name: str) -> dict:
    import pinocchio as pin

    from coriolis_ros.dynamics import AdaptiveController, Dynamics

    rel, floating = ROBOTS[name]
    urdf = str(bl.erd_robots_dir() / rel)
    root = "floating" if floating else "fixed"
    dyn = Dynamics.from_urdf(urdf, root_joint=root, mimic="independent")
    base = 6 if floating else 0
    robot = bl.PinRobot(urdf, dyn.joint_names[base:], free_flyer=floating)
    model, data = robot.model, robot.data
    n, nb = dyn.nv, len(dyn.parameter_links)
    rng = np.random.default_rng(3)
    q = dyn.integrate(dyn.neutral(), rng.uniform(-1.0, 1.0, n))
    qd, q_d, qd_d, qdd_d = rng.normal(size=(4, n)) * 0.3
    nq_base = 7 if floating else 0
    qp = robot.q(q[nq_base:])
    qp[:nq_base] = q[:nq_base]
    vp = robot.v(qd[base:], base=qd[:base] if floating else None)
    # the timed controller: dt so small that ~1e6 repeated ticks at one state leave pi^ where it
    # is (the work per tick does not depend on dt; the projection stays a check)
    ctrl = AdaptiveController(dyn, dt=1e-12, lam=5.0, kd=20.0, gain=1.0)
    ctrl2 = AdaptiveController(dyn, dt=1e-3, lam=5.0, kd=20.0, gain=1.0)
    qdr, qddr = qd_d.copy(), qdd_d.copy()
    pi0 = ctrl.parameters
    # one tick checked against the formulas (no projection at the model's own parameters)
    tau = ctrl2.step(q, qd, qdr, qddr).copy()
    Y = dyn.regressor(q, qd, qdr, qddr)
    s = qd - qdr
    P = ctrl2.gain_matrix()
    err_tau = float(np.abs(tau - (Y @ pi0 - 20.0 * s)).max() / np.abs(tau).max())
    err_pi = float(np.abs(ctrl2.parameters - (pi0 - 1e-3 * P @ Y.T @ s)).max() / np.abs(pi0).max())
    assert err_tau <= 1e-12 and err_pi <= 1e-12, (err_tau, err_pi)
    scales = ctrl.length_scales
    D = [np.diag([1 / x] * 3 + [1.0]) for x in scales]
    ap = robot.v(qddr[base:], base=qddr[:base] if floating else None)
    kd = np.full(n, 20.0)
    ns = {
        "ctrl": ctrl, "q": q, "qd": qd, "q_d": q_d, "qd_d": qd_d, "qdd_d": qdd_d, "qdr": qdr,
        "qddr": qddr, "pin": pin, "model": model, "data": data, "qp": qp, "vp": vp, "ap": ap,
        "pi": pi0.copy(), "P": P, "kd": kd, "sp": rng.normal(size=n) * 1e-3, "np": np, "D": D,
        "pseudo": __import__("coriolis_ros.dynamics.parameters", fromlist=["x"]).pseudo_inertia,
        "nb": nb,
    }  # fmt: skip
    return {"ns": ns, "nv": n, "bodies": nb, "floating": floating, "err": max(err_tau, err_pi)}


PIN_TICK = (
    "Yp = pin.computeJointTorqueRegressor(model, data, qp, vp, ap)\n"
    "tau = Yp @ pi - kd * sp\n"
    "pi_next = pi - 1e-12 * (P @ (Yp.T @ sp))\n"
    "for b in range(nb):\n"
    "    np.linalg.cholesky(D[b] @ pseudo(pi_next[10 * b : 10 * b + 10]) @ D[b])"
)


def statements(floating: bool) -> dict:
    out = {"step": "ctrl.step(q, qd, qdr, qddr)", "pin": PIN_TICK,
           "pin_Y": "pin.computeJointTorqueRegressor(model, data, qp, vp, ap)"}  # fmt: skip
    if not floating:
        out["track"] = "ctrl.track(q, qd, q_d, qd_d, qdd_d)"
    return out


def run(robots, settings, runs: int) -> dict:
    out = {}
    for name in robots:
        s = setup(name)
        stmts = {k: (v, s["ns"]) for k, v in statements(s["floating"]).items()}
        s["runs"] = [bl.measure_group(stmts, settings) for _ in range(runs)]
        s["ns"]["ctrl"].reset()
        out[name] = s
    return out


def _agg(values, fmt=bl.fmt_us) -> str:
    v = np.asarray(values, dtype=float)
    if len(v) == 1:
        return fmt(float(v[0]))
    return f"{fmt(float(np.median(v)))} ({fmt(float(v.min()))}–{fmt(float(v.max()))})"


def report(res: dict, md: bool) -> str:
    rows = []
    for name, s in res.items():
        p = [r["pin"].median for r in s["runs"]]
        py = _agg([r["pin_Y"].median for r in s["runs"]])
        kind = ", floating" if s["floating"] else ""
        label = f"{name} (nv {s['nv']}, {s['bodies']} bodies{kind})"
        for key, what in (("track", "track"), ("step", "step")):
            if key not in s["runs"][0]:
                continue
            o = [r[key].median for r in s["runs"]]
            ratio = _agg(np.divide(o, p), bl.fmt_ratio)
            rows.append([label, what, _agg(o), _agg(p), ratio, py])
    headers = ["robot", "ours", "ours (µs)", "Pinocchio route (µs)", "ours / Pinocchio route",
               "of which Pinocchio's regressor (µs)"]  # fmt: skip
    return bl.table(headers, rows, md)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--runs", type=int, default=1, help="independent runs (median and range)")
    ap.add_argument("--robots", default="ur5,panda,solo12")
    args = ap.parse_args(argv)
    settings = bl.Settings.for_mode(args.quick)
    md = args.markdown
    t0 = time.perf_counter()
    print(bl.heading("Adaptive control tick: coriolis_ros.dynamics vs the Pinocchio route", md, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if md else line)
    print(f"{'- ' if md else ''}{bl.timing_note(settings, args.quick)}")
    print(f"{'- ' if md else ''}{args.runs} run(s): median of the run medians (range), µs per "
          "tick; ratios: median (range) over the runs of ours / Pinocchio route.")  # fmt: skip
    res = run(args.robots.split(","), settings, args.runs)
    errs = ", ".join(f"{k} {s['err']:.1e}" for k, s in res.items())
    print(f"{'- ' if md else ''}one tick vs the formulas, max rel. err: {errs}")
    print()
    print(report(res, md))
    print()
    print(f"(bench_adaptive finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
