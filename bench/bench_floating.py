"""Floating-base robots: our C and generalized Γ against Pinocchio with a free-flyer root.

    python bench/bench_floating.py [--quick] [--markdown] [--systems solo12,talos_full,...]

Both sides model the same URDF with a free-flyer root (ours: ``root_joint="floating"``;
Pinocchio: ``JointModelFreeFlyer``), and are checked against each other before timing (M, C and
Γ[:, :, k] = computeCoriolisMatrix(q, e_k)).  Rows: our ``coriolis`` (M, Ṁ and C together) vs
``computeCoriolisMatrix`` (C only), our ``christoffel`` (generalized Γ, O(Nd²)) vs "Γ via
Pinocchio" (nv calls of computeCoriolisMatrix with unit velocities, copied into an (nv, nv, nv)
array), our ``coriolis_vectors`` (C v, Cᵀ v, M v) vs ``rnea``.  The paper's 20-DoF biped and
quadruped (``support.random_trees.paper_topologies``) are run with a floating torso, next to the
paper's Table 2 (Echeandia & Wensing: C/C++ on RBDL, their machine, C = 13 / 10 µs and Γ = 64 /
37 µs for the biped / quadruped).  No assertions on speed: this is a benchmark.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

SYSTEMS = {  # key: (label, example-robot-data path or paper topology, paper's (C, Γ) µs)
    "solo12": ("Solo12", "solo_description/robots/solo12.urdf", None),
    "anymal_c": ("ANYmal C", "anymal_c_simple_description/urdf/anymal.urdf", None),
    "talos_full": ("Talos full v2", "talos_data/robots/talos_full_v2.urdf", None),
    "g1": ("G1 29-DoF", "g1_description/urdf/g1_29dof_rev_1_0.urdf", None),
    "biped20": ("paper biped, 20 DoF", "biped", (13.0, 64.0)),
    "quadruped20": ("paper quadruped, 20 DoF", "quadruped", (10.0, 37.0)),
}
STATEMENTS = {
    "C": "dyn.coriolis(q, v, out=cout)",
    "G": "dyn.christoffel(q, out=G)",
    "vec": "dyn.coriolis_vectors(q, v, out=vout)",
    "pC": "pin.computeCoriolisMatrix(model, data, qp, vp)",
    "pG": "loop(pin, model, data, qp, eye, Gp)",
    "prnea": "pin.rnea(model, data, qp, vp, ap)",
}


def load(key: str) -> tuple[str, str]:
    label, source, _ = SYSTEMS[key]
    if source.endswith(".urdf"):
        return label, str(bl.erd_robots_dir() / source)
    from support.random_trees import paper_topologies

    return label, paper_topologies(20, 2020)[source]


def bench_system(key: str, settings: bl.Settings) -> dict:
    import pinocchio as pin
    from support.floating import MultiDofOracle, random_configuration

    from coriolis_ros.dynamics import Dynamics

    label, urdf = load(key)
    dyn = Dynamics.from_urdf(urdf, root_joint="floating", mimic="independent")
    dyn.warmup()
    oracle = MultiDofOracle(urdf, dyn, "floating")
    n = dyn.nv
    rng = np.random.default_rng(42)
    q = random_configuration(dyn, rng, unit=True)
    v, a = rng.normal(0.0, 1.0, n), rng.normal(0.0, 1.0, n)
    M, _, C = dyn.coriolis(q, v)
    G = dyn.christoffel(q)
    err = max(
        float(np.abs(C - oracle.C(q, v)).max()),
        float(np.abs(M - oracle.M(q)).max()),
        max(float(np.abs(G[:, :, k] - oracle.C(q, np.eye(n)[k])).max()) for k in range(n)),
    )
    ns = {
        "dyn": dyn, "q": q, "v": v,
        "cout": (np.empty((n, n)), np.empty((n, n)), np.empty((n, n))),
        "G": np.empty((n, n, n)), "vout": (np.empty(n), np.empty(n), np.empty(n)),
        "pin": pin, "model": oracle.model, "data": oracle.data, "qp": oracle.q_pin(q),
        "vp": oracle.v_pin(v), "ap": oracle.v_pin(a), "eye": np.eye(n),
        "Gp": np.empty((n, n, n)), "loop": bl.pin_christoffel_loop,
    }  # fmt: skip
    timings = bl.measure_group({k: (s, ns) for k, s in STATEMENTS.items()}, settings)
    return {"key": key, "label": label, "nv": n, "depth": dyn.tree_depth, "err": err, **timings}


def results_table(results: list[dict], markdown: bool) -> str:
    f, r = bl.fmt_us, bl.fmt_ratio
    headers = [
        "system (floating base)", "nv", "depth", "C ours", "C pin", "ours/pin",
        "Γ ours", "Γ pin", "pin/ours", "C v ours", "rnea pin", "ours/pin", "max |err|",
    ]  # fmt: skip
    rows = []

    def pair(a: bl.Timing, b: bl.Timing) -> str:  # ratio of the mins; of the medians after ';'
        return f"{r(a.min / b.min)}; {r(a.median / b.median)}"

    for res in results:
        C, pC, G, pG = res["C"], res["pC"], res["G"], res["pG"]
        vec, prnea = res["vec"], res["prnea"]
        rows.append([
            res["label"], str(res["nv"]), str(res["depth"]),
            f(C.min), f(pC.min), pair(C, pC),
            f(G.min), f(pG.min), pair(pG, G),
            f(vec.min), f(prnea.min), pair(vec, prnea),
            f"{res['err']:.1e}",
        ])  # fmt: skip
    return bl.table(headers, rows, markdown)


def paper_table(results: list[dict], markdown: bool) -> str:
    f = bl.fmt_us
    headers = ["system", "C ours (med / min)", "C paper", "Γ ours (med / min)", "Γ paper"]
    rows = []
    for res in results:
        paper = SYSTEMS[res["key"]][2]
        if paper is None:
            continue
        rows.append([
            res["label"] + ", floating torso",
            f"{f(res['C'].median)} / {f(res['C'].min)}", f(paper[0]),
            f"{f(res['G'].median)} / {f(res['G'].min)}", f(paper[1]),
        ])  # fmt: skip
    return bl.table(headers, rows, markdown)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help=f"comma-separated subset of {','.join(SYSTEMS)}")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.systems.split(",") if k.strip()]
    unknown = [k for k in keys if k not in SYSTEMS]
    if unknown or not keys:
        ap.error(f"unknown system(s) {unknown}; choose from {', '.join(SYSTEMS)}")
    settings = bl.Settings.for_mode(args.quick)
    t0 = time.perf_counter()
    print(bl.heading("Floating bases: coriolis_ros.dynamics vs Pinocchio (free flyer)",
                     args.markdown, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if args.markdown else line)
    print(f"{'- ' if args.markdown else ''}{bl.timing_note(settings, args.quick)}")
    print(f"{'- ' if args.markdown else ''}Times in µs, min over repeats (the robust figure on a "
          "shared machine); ratios of the mins, then of the medians. Targets: C "
          "ours/pin ≤ 1.0; Γ pin/ours ≥ 10. Our coriolis returns M, Ṁ and C; Pinocchio's "
          "computeCoriolisMatrix returns C only.")
    print()
    results = [bench_system(key, settings) for key in keys]
    print(results_table(results, args.markdown))
    print()
    if any(SYSTEMS[res["key"]][2] for res in results):
        print(bl.heading("The paper's Table 2 systems with a floating torso", args.markdown))
        print()
        print(paper_table(results, args.markdown))
        print()
    print(f"(bench_floating finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
