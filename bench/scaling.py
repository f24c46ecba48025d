"""Time vs number of DoF, like Figs. 3-5 of Echeandia & Wensing (log-log, fitted slopes).

    python bench/scaling.py [--quick] [--markdown] [--sizes 4,8,16,32,64]
                            [--topologies serial_chain,binary_tree,biped,quadruped] [--no-plot]

For each topology (``support.random_trees.random_tree(topology, N, seed, PLAIN)``: revolute joints,
one body per joint; biped/quadruped = fixed torso with 2/4 legs sharing N) and each N, times our
``coriolis`` (M, Ṁ, C; out=) and ``christoffel`` (Γ; out=) against Pinocchio's
``computeCoriolisMatrix`` and "Γ via Pinocchio" (nv calls of it with unit velocities), plots
the min time per call on log-log axes to ``bench/results/scaling_<topology>.png`` and prints the
least-squares log-log slope of each curve fitted over the larger half of the sizes (small N is
dominated by constant per-call overhead).

Expected for ours (the paper): C in O(Nd), Γ in O(Nd²), d = tree depth: slopes ≈ 2 / 3 for
chains (d = N) and legged systems (d = N/2, N/4), lower for binary trees (d ≈ log₂ N).  The
"expected" columns fit log(N·d) and log(N·d²) over the same sizes.  Note the outputs have N²
(three matrices) and N³ entries that are all written, so for binary trees the slopes drift
towards 2 and 3 once filling the outputs dominates: the reference curve ``Γ.fill(0)`` (numpy
writing the N³ output once) shows that floor.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

TOPOLOGIES = {
    "serial_chain": "Serial chain",
    "binary_tree": "Binary tree (branching factor 2)",
    "biped": "Biped (fixed torso, 2 legs)",
    "quadruped": "Quadruped (fixed torso, 4 legs)",
}
SIZES = (4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)
QUICK_SIZES = (4, 8, 16, 32, 64)
SEED = 7
CURVES = {  # key: (legend label, statement, colour, line style)
    "C": ("ours coriolis (M, Ṁ, C)", "dyn.coriolis(q, qd, out=cout)", "tab:blue", "-"),
    "G": ("ours christoffel (Γ)", "dyn.christoffel(q, out=G)", "tab:red", "-"),
    "pC": ("Pinocchio computeCoriolisMatrix (C)",
           "pin.computeCoriolisMatrix(model, data, qp, vp)", "tab:blue", "--"),
    "pG": ("Pinocchio Γ = nv × computeCoriolisMatrix", "loop(pin, model, data, qp, eye, Gp)",
           "tab:red", "--"),
    "fill": ("reference: Γ.fill(0), writing N³ doubles", "G.fill(0.0)", "tab:gray", ":"),
}


def measure_point(topology: str, n: int, settings: bl.Settings) -> dict:
    from support.random_trees import PLAIN, random_tree

    from coriolis_ros.dynamics import Dynamics

    urdf = random_tree(topology, n, SEED, options=PLAIN)
    dyn = Dynamics.from_urdf(urdf)
    dyn.warmup()
    rng = np.random.default_rng(n)
    q = rng.uniform(-np.pi, np.pi, n)
    qd = rng.normal(0.0, 1.0, n)
    pr = bl.PinRobot(urdf, dyn.joint_names)
    ns = {
        "dyn": dyn, "q": q, "qd": qd,
        "cout": (np.empty((n, n)), np.empty((n, n)), np.empty((n, n))),
        "G": np.empty((n, n, n)),
        "pin": pr.pin, "model": pr.model, "data": pr.data, "qp": pr.q(q), "vp": pr.v(qd),
        "eye": np.eye(n), "Gp": np.empty((n, n, n)), "loop": bl.pin_christoffel_loop,
    }
    point = {"n": n, "depth": dyn.tree_depth}
    point.update(bl.measure_group({key: (c[1], ns) for key, c in CURVES.items()}, settings))
    return point


def slope(ns, ts) -> float:
    half = len(ns) // 2
    x, y = np.log(np.asarray(ns[half:], float)), np.log(np.asarray(ts[half:], float))
    if len(x) < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def analyse(points: list[dict]) -> dict:
    ns = [p["n"] for p in points]
    depths = [p["depth"] for p in points]
    out = {key: slope(ns, [p[key].min for p in points]) for key in CURVES}
    out["Nd"] = slope(ns, [n * d for n, d in zip(ns, depths)])
    out["Nd2"] = slope(ns, [n * d * d for n, d in zip(ns, depths)])
    return out


def plot(topology: str, points: list[dict], slopes: dict, settings: bl.Settings, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [p["n"] for p in points]
    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=110)
    for key, (label, _, colour, style) in CURVES.items():
        ts = [p[key].min for p in points]
        marker = {"-": "o", "--": "s"}.get(style, "")
        ax.loglog(ns, ts, style, color=colour, marker=marker, markersize=4,
                  label=f"{label}: slope {slopes[key]:.2f}")
    ax.set_xticks(ns)
    ax.set_xticklabels([f"{p['n']}\n(d={p['depth']})" for p in points], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("DoF N (tree depth d)")
    ax.set_ylabel("time per call, min over repeats (µs)")
    ax.set_title(
        f"{TOPOLOGIES[topology]}: time vs DoF\n"
        f"slopes fitted over N ≥ {ns[len(ns) // 2]}; O(Nd) slope {slopes['Nd']:.2f}, "
        f"O(Nd²) slope {slopes['Nd2']:.2f}",
        fontsize=10,
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.text(0.99, 0.005, f"min of {settings.repeats} interleaved repeats × "
             f"~{settings.target_s * 1e3:.0f} ms; shared 2-core machine",
             ha="right", va="bottom", fontsize=7, color="gray")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and short repeats")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--sizes", default=None, help="comma-separated DoF counts")
    ap.add_argument("--topologies", default=",".join(TOPOLOGIES),
                    help=f"comma-separated subset of {','.join(TOPOLOGIES)}")
    ap.add_argument("--no-plot", action="store_true", help="print the tables only")
    ap.add_argument("--outdir", default=str(bl.RESULTS), help="where the PNGs go")
    args = ap.parse_args(argv)
    settings = bl.Settings.for_mode(args.quick)
    try:
        sizes = (tuple(sorted({int(s) for s in args.sizes.split(",") if s.strip()}))
                 if args.sizes else (QUICK_SIZES if args.quick else SIZES))
    except ValueError:
        ap.error("--sizes must be comma-separated integers")
    if not sizes or sizes[0] < 1:
        ap.error("--sizes must be positive integers")
    topologies = [t.strip() for t in args.topologies.split(",") if t.strip()]
    unknown = [t for t in topologies if t not in TOPOLOGIES]
    if unknown or not topologies:
        ap.error(f"unknown topology {unknown}; choose from {', '.join(TOPOLOGIES)}")
    outdir = Path(args.outdir)
    if not args.no_plot:
        outdir.mkdir(parents=True, exist_ok=True)

    t0 = time.perf_counter()
    md = args.markdown
    print(bl.heading("Scaling with DoF: ours vs Pinocchio (Figs. 3-5 of the paper)", md, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if md else line)
    print(f"{'- ' if md else ''}{bl.timing_note(settings, args.quick)} Tables: min / median "
          f"µs per call; systems: random_tree(topology, N, seed={SEED}, PLAIN).")
    print()
    summary = []
    f = bl.fmt_us
    for topology in topologies:
        points = [measure_point(topology, n, settings) for n in sizes]
        slopes = analyse(points)
        rows = [[str(p["n"]), str(p["depth"])]
                + [f"{f(p[k].min)} / {f(p[k].median)}" for k in CURVES if k != "fill"]
                + [bl.fmt_ratio(p["C"].min / p["pC"].min), bl.fmt_ratio(p["pG"].min / p["G"].min),
                   f(p["fill"].min), bl.fmt_ratio(p["G"].min / p["fill"].min)]
                for p in points]
        headers = (["N", "d"] + [CURVES[k][0] for k in CURVES if k != "fill"]
                   + ["C ours/pin", "Γ pin/ours", "Γ.fill(0) min", "christoffel / Γ.fill"])
        print(bl.heading(f"{TOPOLOGIES[topology]} (min / median µs)", md))
        print()
        print(bl.table(headers, rows, md))
        print()
        png = outdir / f"scaling_{topology}.png"
        if not args.no_plot:
            plot(topology, points, slopes, settings, png)
            print(f"plot: {png}")
            print()
        summary.append((topology, slopes))
        sys.stdout.flush()

    half = sizes[len(sizes) // 2]
    headers = ["topology", "ours C", "ours Γ", "pin C", "pin Γ (nv×C)",
               "expected O(Nd)", "expected O(Nd²)", "Γ.fill(0)"]
    rows = [[TOPOLOGIES[t]] + [f"{s[k]:.2f}" for k in ("C", "G", "pC", "pG", "Nd", "Nd2", "fill")]
            for t, s in summary]
    print(bl.heading(f"Log-log slopes (least squares over N ≥ {half}, min times)", md))
    print()
    print(bl.table(headers, rows, md))
    print()
    print(f"(scaling finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
