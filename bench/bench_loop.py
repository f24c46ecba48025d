"""The users' loop (issue 10): C x, the Slotine-Li torque and the momentum observer's per-tick
terms, ours against the Pinocchio routes, same process, same URDF, same state.

    python bench/bench_loop.py [--quick] [--markdown] [--robots ur5,panda,talos_full]

Rows (µs per call, median and min over interleaved repeats; ratios of the mins, ours / pin):

* C x: our ``coriolis_times(q, qd, x, out=)`` (O(N), C never formed) vs
  ``computeCoriolisMatrix`` followed by the product into a preallocated vector
  (``.dot(x, out=y)``, cheaper than ``@``).  Target ≤ 0.5.
* Slotine-Li M q̈_r + C q̇_r + g: our ``slotine_li(q, qd, qd_ref, qdd_ref, out=)`` vs
  ``computeCoriolisMatrix`` + ``crba`` + ``computeGeneralizedGravity`` + the two products and
  the sums, all into preallocated vectors.  Target ≤ 0.5.
* C q̇, Cᵀq̇, M q̇: our ``coriolis_vectors`` (what the observer needs each tick) vs ``rnea``
  (which gives C q̇ + g only).  Target ≤ 1.0.
* observer: ``MomentumObserver.update(t, q, qd, tau)`` (Cᵀq̇, M q̇ and g in one pass, and the
  exponential step) vs ``rnea`` (target ≤ 1.0: the per-tick price of the observer), and vs the
  Pinocchio terms the same update would need (C from ``computeCoriolisMatrix``, Cᵀq̇ and M q̇
  products, ``crba``, ``computeGeneralizedGravity``), for scale only: Pinocchio has no
  observer.

Before timing, every route is checked against the other on the same state.  No assertions on
speed: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

ROBOTS = {
    "ur5": ("UR5", "ur_description/urdf/ur5_robot.urdf"),
    "panda": ("Panda", "panda_description/urdf/panda.urdf"),
    "solo12": ("Solo12 (fixed base)", "solo_description/robots/solo12.urdf"),
    "talos_reduced": ("Talos reduced (fixed base)", "talos_data/robots/talos_reduced.urdf"),
    "talos_full": ("Talos full v2 (fixed base)", "talos_data/robots/talos_full_v2.urdf"),
}
DEFAULT_ROBOTS = "ur5,panda,talos_full"

OURS = {
    "times": "dyn.coriolis_times(q, qd, x, out=y)",
    "slotine_li": "dyn.slotine_li(q, qd, qdr, qddr, out=tau)",
    "vectors": "dyn.coriolis_vectors(q, qd, out=vout)",
    "observer": "obs.update(next(tick) * 1e-3, q, qd, tau_meas)",
}
PIN = {
    "times": "pin.computeCoriolisMatrix(model, data, qp, vp).dot(xp, out=yp)",
    "slotine_li": "pin_slotine_li(pin, model, data, qp, vp, xp, ap, t1, t2)",
    "vectors": "pin.rnea(model, data, qp, vp, zp)",
    "observer": "pin_observer_terms(pin, model, data, qp, vp, t1, t2)",
}
# (ours, Pinocchio, row label, summary column, target ratio ours/pin or None)
ROWS = [
    ("times", "times", "C x: coriolis_times vs computeCoriolisMatrix + product", "C x", 0.5),
    ("slotine_li", "slotine_li", "M q̈_r + C q̇_r + g: slotine_li vs C + crba + g + products",
     "Slotine-Li", 0.5),
    ("vectors", "vectors", "C q̇, Cᵀq̇, M q̇: coriolis_vectors vs rnea (C q̇ + g only)",
     "coriolis_vectors / rnea", 1.0),
    ("observer", "vectors", "observer update (Cᵀq̇, M q̇, g, step) vs rnea",
     "observer update / rnea", 1.0),
    ("observer", "observer", "observer update vs Pinocchio's C, M, g + Cᵀq̇, M q̇ products",
     "observer update / Pinocchio terms", None),
]


def pin_slotine_li(pin, model, data, qp, vp, xp, ap, t1, t2):
    """M a + C x + g with Pinocchio's matrices (crba's Python binding returns the full M)."""
    C = pin.computeCoriolisMatrix(model, data, qp, vp)
    M = pin.crba(model, data, qp)
    g = pin.computeGeneralizedGravity(model, data, qp)
    np.dot(M, ap, out=t1)
    np.dot(C, xp, out=t2)
    t1 += t2
    t1 += g
    return t1


def pin_observer_terms(pin, model, data, qp, vp, t1, t2):
    """Cᵀq̇, M q̇ and g: what one observer update needs, from Pinocchio's matrices."""
    C = pin.computeCoriolisMatrix(model, data, qp, vp)
    np.dot(C.T, vp, out=t1)
    M = pin.crba(model, data, qp)
    np.dot(M, vp, out=t2)
    return pin.computeGeneralizedGravity(model, data, qp)


def bench_robot(key: str, settings: bl.Settings) -> dict:
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics, MomentumObserver

    label, rel = ROBOTS[key]
    path = str(bl.erd_robots_dir() / rel)
    dyn = Dynamics.from_urdf(path, mimic="independent")  # Pinocchio is built without mimic
    dyn.warmup()
    n = dyn.nv
    rng = np.random.default_rng(42)
    q = rng.uniform(-np.pi, np.pi, n)
    qd, x, qddr = (rng.normal(0.0, 1.0, n) for _ in range(3))
    obs = MomentumObserver(dyn, 50.0)
    tau_meas = dyn.gravity(q) + rng.normal(0.0, 1.0, n)
    ns = {
        "dyn": dyn, "obs": obs, "tick": itertools.count(), "q": q, "qd": qd, "x": x,
        "qdr": x, "qddr": qddr, "tau_meas": tau_meas, "y": np.empty(n), "tau": np.empty(n),
        "vout": (np.empty(n), np.empty(n), np.empty(n)),
    }
    pr = bl.PinRobot(path, dyn.joint_names)
    pns = {
        "pin": pin, "model": pr.model, "data": pr.data, "qp": pr.q(q), "vp": pr.v(qd),
        "xp": pr.v(x), "ap": pr.v(qddr), "zp": np.zeros(n), "yp": np.empty(n),
        "t1": np.empty(n), "t2": np.empty(n), "pin_slotine_li": pin_slotine_li,
        "pin_observer_terms": pin_observer_terms,
    }
    errors = check(dyn, pr, pns, q, qd, x, qddr)
    items = {("ours", k): (stmt, ns) for k, stmt in OURS.items()}
    items.update({("pin", k): (stmt, pns) for k, stmt in PIN.items()})
    res = {"label": label, "nv": n, "depth": dyn.tree_depth, "errors": errors}
    for (side, name), timing in bl.measure_group(items, settings).items():
        res.setdefault(side, {})[name] = timing
    return res


def check(dyn, pr, pns, q, qd, x, qddr) -> dict:
    """Relative max errors between our results and the Pinocchio routes at this state."""
    pin, model, data = pns["pin"], pns["model"], pns["data"]
    back = np.argsort(pr.perm)  # our index -> Pinocchio velocity slot
    C = pin.computeCoriolisMatrix(model, data, pns["qp"], pns["vp"]).copy()
    M = pin.crba(model, data, pns["qp"]).copy()
    assert np.array_equal(M, M.T), "crba returned a non-symmetric M: the route needs a fix"
    g = pin.computeGeneralizedGravity(model, data, pns["qp"]).copy()

    def rel(ours, pin_vec):
        ref = pin_vec[back]
        return float(np.abs(ours - ref).max() / max(1.0, np.abs(ref).max()))

    cqd, ctqd, p = dyn.coriolis_vectors(q, qd)
    return {
        "C x": rel(dyn.coriolis_times(q, qd, x), C @ pns["xp"]),
        "Slotine-Li": rel(dyn.slotine_li(q, qd, x, qddr),
                          pin_slotine_li(pin, model, data, pns["qp"], pns["vp"], pns["xp"],
                                         pns["ap"], np.empty(dyn.nv), np.empty(dyn.nv)).copy()),
        "C q̇": rel(cqd, C @ pns["vp"]),
        "Cᵀq̇": rel(ctqd, C.T @ pns["vp"]),
        "M q̇": rel(p, M @ pns["vp"]),
        "g": rel(dyn.gravity(q), g),
    }


def robot_table(res: dict, markdown: bool) -> str:
    headers = ["operation: ours vs Pinocchio", "ours med", "ours min", "pin med", "pin min",
               "ratio (min)", "ratio (med)", "target"]
    rows = []
    for ours, pin, label, _, target in ROWS:
        o, p = res["ours"][ours], res["pin"][pin]
        r_min, r_med = o.min / p.min, o.median / p.median
        verdict = "-" if target is None else (
            f"≤ {target:g}: {'met' if r_min <= target else 'NOT met'}")
        rows.append([label, bl.fmt_us(o.median), bl.fmt_us(o.min), bl.fmt_us(p.median),
                     bl.fmt_us(p.min), bl.fmt_ratio(r_min), bl.fmt_ratio(r_med), verdict])
    errs = ", ".join(f"{k} {v:.1e}" for k, v in res["errors"].items())
    title = (f"{res['label']}: nv={res['nv']}, tree depth={res['depth']} (µs per call; "
             f"check vs Pinocchio, rel. max err: {errs})")
    warn = ""
    if not max(res["errors"].values()) < 1e-8:
        warn = "\n\nWARNING: ours and Pinocchio disagree: these timings compare different things."
    return bl.heading(title, markdown, 3) + warn + "\n\n" + bl.table(headers, rows, markdown)


def summary_table(results: list[dict], markdown: bool) -> str:
    headers = ["robot", "nv"] + [
        column + ("" if target is None else f" (≤ {target:g})") for *_, column, target in ROWS
    ]
    rows = []
    for res in results:
        row = [res["label"], str(res["nv"])]
        for ours, pin, _, _, target in ROWS:
            o, p = res["ours"][ours], res["pin"][pin]
            r = o.min / p.min
            tail = "" if target is None else (" met" if r <= target else " NOT met")
            row.append(f"{bl.fmt_ratio(r)} (med {bl.fmt_ratio(o.median / p.median)}){tail}")
        rows.append(row)
    return (bl.heading("Summary (ratios of min times; median-based in parentheses)", markdown, 3)
            + "\n\n" + bl.table(headers, rows, markdown))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--robots", default=DEFAULT_ROBOTS,
                    help=f"comma-separated subset of {','.join(ROBOTS)}")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.robots.split(",") if k.strip()]
    unknown = [k for k in keys if k not in ROBOTS]
    if unknown or not keys:
        ap.error(f"unknown robot(s) {unknown}; choose from {', '.join(ROBOTS)}")
    settings = bl.Settings.for_mode(args.quick)
    t0 = time.perf_counter()
    print(bl.heading("The users' loop: C x, Slotine-Li, observer terms vs Pinocchio",
                     args.markdown, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if args.markdown else line)
    print(f"{'- ' if args.markdown else ''}{bl.timing_note(settings, args.quick)}")
    print()
    results = []
    for key in keys:
        res = bench_robot(key, settings)
        results.append(res)
        print(robot_table(res, args.markdown))
        print(flush=True)
    print(summary_table(results, args.markdown))
    print()
    print(f"(bench_loop finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
