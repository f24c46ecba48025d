"""Issue 9: Safeea's recursive Christoffel symbols, and the cost of the mimic reduction.

    python bench/bench_reduction.py [--quick] [--markdown] [--dofs 6,8,...]

Table 1, serial chains of revolute joints (``support.random_trees.serial_chain``, random axes and
inertias), n = 5 and 6..30 DoF: our ``christoffel(q, method="safeea")`` (Safeea et al.'s
O(n^3) recursion), our default ``christoffel`` (Echeandia & Wensing's Algorithm 2, O(N d^2) =
O(n^3) on a chain) and the Pinocchio route to Γ (nv calls of ``computeCoriolisMatrix`` with unit
velocities, copied into an (nv, nv, nv) array), all with preallocated outputs; both of ours are
checked against Pinocchio before timing.  Slopes: least-squares fit of log t (the min over repeats,
the robust figure on a shared machine) against log n over 6..30 DoF.  Reference line: the
seed paper's 5-DoF MATLAB time, 99 µs (Safeea et al. 2019, Table I; their machine, MATLAB).

Table 2, Panda with its hand (9 joints, panda_finger_joint2 mimics panda_finger_joint1): every
call with the mimic joint followed (8 independent coordinates, the default) against the same
call on the unreduced 9-DoF tree (``mimic="independent"``), interleaved.  Target for
``coriolis``: reduced / unreduced ≤ 1.10.

Benchmarks, not tests: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

DOFS = (6, 8, 10, 12, 16, 20, 24, 30)
SAFEEA_MATLAB_5DOF_US = 99.0
PANDA = "panda_description/urdf/panda.urdf"


def chain(n: int) -> str:
    from support.random_trees import TreeOptions, serial_chain

    return serial_chain(n, seed=500 + n, options=TreeOptions(joint_types=("revolute",)))


def bench_chain(n: int, settings: bl.Settings) -> dict:
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics

    urdf = chain(n)
    dyn = Dynamics.from_urdf(urdf)
    dyn.warmup()
    dyn.christoffel(dyn.neutral(), method="safeea")
    robot = bl.PinRobot(urdf, dyn.joint_names)
    q = np.random.default_rng(n).uniform(-np.pi, np.pi, n)
    qp = robot.q(q)
    eye = np.eye(n)
    Gp = np.empty((n, n, n))
    bl.pin_christoffel_loop(pin, robot.model, robot.data, qp, eye, Gp)
    Gref = robot.to_ours_tensor(Gp) if hasattr(robot, "to_ours_tensor") else None
    G2, GS = dyn.christoffel(q), dyn.christoffel(q, method="safeea")
    if Gref is None:  # Pinocchio's order: C(q, e_k) per our joint k, permuted
        Gref = np.empty((n, n, n))
        for k in range(n):
            v = np.zeros(n)
            v[k] = 1.0
            c = pin.computeCoriolisMatrix(robot.model, robot.data, qp, robot.v(v))
            Gref[:, :, k] = robot.to_ours(c)
    err = max(float(np.abs(G2 - Gref).max()), float(np.abs(GS - Gref).max()))
    ns = {
        "dyn": dyn, "q": q, "G": np.empty((n, n, n)), "pin": pin, "model": robot.model,
        "data": robot.data, "qp": qp, "eye": eye, "Gp": Gp, "loop": bl.pin_christoffel_loop,
    }  # fmt: skip
    stmts = {
        "safeea": "dyn.christoffel(q, out=G, method='safeea')",
        "alg2": "dyn.christoffel(q, out=G)",
        "pin": "loop(pin, model, data, qp, eye, Gp)",
    }
    timings = bl.measure_group({k: (s, ns) for k, s in stmts.items()}, settings)
    return {"n": n, "err": err, **timings}


def slope(results: list[dict], key: str) -> float:
    rows = [r for r in results if r["n"] >= 6]
    if len(rows) < 2:
        return float("nan")
    x = np.log([r["n"] for r in rows])
    y = np.log([r[key].min for r in rows])  # the min: the median is too noisy to fit
    return float(np.polyfit(x, y, 1)[0])


def chain_table(results: list[dict], markdown: bool) -> str:
    f, r = bl.fmt_us, bl.fmt_ratio
    headers = ["DoF", "Safeea ours (med / min)", "Alg. 2 ours (med / min)", "Safeea / Alg. 2",
               "Γ via Pinocchio (med / min)", "Pinocchio / Safeea", "max |err| vs Pinocchio"]
    rows = []
    for res in results:
        s, a, p = res["safeea"], res["alg2"], res["pin"]
        rows.append([
            str(res["n"]), s.fmt(), a.fmt(), r(s.median / a.median), p.fmt(),
            r(p.median / s.median), f"{res['err']:.1e}",
        ])  # fmt: skip
    rows.append([
        "slope (6-30)", f"{slope(results, 'safeea'):.2f}", f"{slope(results, 'alg2'):.2f}", "",
        f"{slope(results, 'pin'):.2f}", "", "",
    ])  # fmt: skip
    rows.append(["5 (seed, MATLAB)", f(SAFEEA_MATLAB_5DOF_US), "", "", "", "", ""])
    return bl.table(headers, rows, markdown)


def bench_panda(settings: bl.Settings) -> list[list[str]]:
    from coriolis_ros.dynamics import Dynamics

    path = str(bl.erd_robots_dir() / PANDA)
    red = Dynamics.from_urdf(path)
    full = Dynamics.from_urdf(path, mimic="independent")
    red.warmup()
    full.warmup()
    nb, n = red.nv, full.nv
    rng = np.random.default_rng(0)
    qb, vb, ab = rng.uniform(-1, 1, nb), rng.normal(size=nb), rng.normal(size=nb)
    qf, vf, af = red.full_position(qb), red.full_velocity(vb), red.full_velocity(ab)
    ns = {
        "red": red, "full": full, "qb": qb, "vb": vb, "ab": ab, "qf": qf, "vf": vf, "af": af,
        "Mb": tuple(np.empty((nb, nb)) for _ in range(3)),
        "Mf": tuple(np.empty((n, n)) for _ in range(3)),
        "Gb": np.empty((nb, nb, nb)), "Gf": np.empty((n, n, n)),
        "vb3": tuple(np.empty(nb) for _ in range(3)), "vf3": tuple(np.empty(n) for _ in range(3)),
    }  # fmt: skip
    calls = {
        "coriolis": ("red.coriolis(qb, vb, out=Mb)", "full.coriolis(qf, vf, out=Mf)"),
        "christoffel": ("red.christoffel(qb, out=Gb)", "full.christoffel(qf, out=Gf)"),
        "coriolis_vectors": (
            "red.coriolis_vectors(qb, vb, out=vb3)", "full.coriolis_vectors(qf, vf, out=vf3)"
        ),
        "mass_matrix": ("red.mass_matrix(qb, out=Mb[0])", "full.mass_matrix(qf, out=Mf[0])"),
        "gravity": ("red.gravity(qb, out=vb3[0])", "full.gravity(qf, out=vf3[0])"),
        "inverse_dynamics": (
            "red.inverse_dynamics(qb, vb, ab, out=vb3[0])",
            "full.inverse_dynamics(qf, vf, af, out=vf3[0])",
        ),
    }
    items = {}
    for name, (a, b) in calls.items():
        items[name + ":red"] = (a, ns)
        items[name + ":full"] = (b, ns)
    t = bl.measure_group(items, settings)
    rows = []
    for name in calls:
        a, b = t[name + ":red"], t[name + ":full"]
        rows.append([name, a.fmt(), b.fmt(), f"{a.median / b.median:.3f}",
                     f"{a.min / b.min:.3f}"])  # fmt: skip
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--dofs", default=",".join(map(str, DOFS)),
                    help="comma-separated serial-chain sizes (>= 1)")
    args = ap.parse_args(argv)
    try:
        dofs = sorted({int(x) for x in args.dofs.split(",") if x.strip()})
    except ValueError:
        ap.error(f"--dofs must be integers, got {args.dofs!r}")
    if not dofs or dofs[0] < 1:
        ap.error("--dofs must list sizes >= 1")
    settings = bl.Settings.for_mode(args.quick)
    t0 = time.perf_counter()
    print(bl.heading("Safeea's recursion and the mimic reduction (issue 9)", args.markdown, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if args.markdown else line)
    print(f"{'- ' if args.markdown else ''}{bl.timing_note(settings, args.quick)}")
    print()
    print(bl.heading("Γ of serial revolute chains: Safeea vs Algorithm 2 vs Pinocchio route",
                     args.markdown))
    print()
    results = [bench_chain(n, settings) for n in ([5] + dofs if 5 not in dofs else dofs)]
    print(chain_table(results, args.markdown))
    print()
    print(bl.heading("Panda with hand: mimic followed (8 DoF) vs unreduced tree (9 DoF)",
                     args.markdown))
    print()
    headers = ["call", "reduced (med / min)", "unreduced (med / min)", "ratio (med)",
               "ratio (min)"]
    print(bl.table(headers, bench_panda(settings), args.markdown))
    print()
    print(f"(bench_reduction finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
