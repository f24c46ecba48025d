"""Per-robot timings of coriolis_ros.dynamics against Pinocchio (same process, same URDF).

    python bench/bench_dynamics.py [--quick] [--markdown] [--robots ur5,panda,...]

For each robot (example-robot-data URDFs): median and min µs per call of our ``coriolis``,
``christoffel``, ``coriolis_vectors``, ``gravity``, ``inverse_dynamics`` and ``mass_matrix``
(all with preallocated ``out=`` buffers), and Pinocchio's ``computeCoriolisMatrix``, ``rnea``,
``crba``, ``computeGeneralizedGravity`` and "Γ via Pinocchio" (nv calls of
``computeCoriolisMatrix`` with unit velocities, each result copied into an (nv, nv, nv) array).
Our library is fixed-base only, so Pinocchio is timed on the same fixed-base model; legged
robots also get a Pinocchio free-flyer reference column (nv + 6).  Before timing, C and Γ are
checked against Pinocchio (so both sides provably compute the same thing).
The last section measures the per-call overhead (no-op Numba function, 1-DoF robot).
No assertions on speed: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

# key: (label, path under example-robot-data/robots, also time Pinocchio with a free flyer)
ROBOTS = {
    "ur5": ("UR5", "ur_description/urdf/ur5_robot.urdf", False),
    "panda": ("Panda", "panda_description/urdf/panda.urdf", False),
    "solo12": ("Solo12 (fixed base)", "solo_description/robots/solo12.urdf", True),
    "talos_reduced": ("Talos reduced (fixed base)", "talos_data/robots/talos_reduced.urdf", True),
    "talos_full": ("Talos full v2 (fixed base)", "talos_data/robots/talos_full_v2.urdf", True),
}

OURS = {
    "coriolis": "dyn.coriolis(q, qd, out=cout)",
    "christoffel": "dyn.christoffel(q, out=G)",
    "coriolis_vectors": "dyn.coriolis_vectors(q, qd, out=vout)",
    "gravity": "dyn.gravity(q, out=g)",
    "inverse_dynamics": "dyn.inverse_dynamics(q, qd, qdd, out=tau)",
    "mass_matrix": "dyn.mass_matrix(q, out=M)",
}
PIN = {
    "computeCoriolisMatrix": "pin.computeCoriolisMatrix(model, data, qp, vp)",
    "rnea": "pin.rnea(model, data, qp, vp, ap)",
    "crba": "pin.crba(model, data, qp)",
    "computeGeneralizedGravity": "pin.computeGeneralizedGravity(model, data, qp)",
    "Γ via Pinocchio": "loop(pin, model, data, qp, eye, Gp)",
}
# (row label, ours, Pinocchio, ratio is ours/pin (False: pin/ours), target text)
ROWS = [
    ("C: coriolis (M, Ṁ, C) vs computeCoriolisMatrix", "coriolis", "computeCoriolisMatrix",
     True, "ours/pin ≤ 1.0"),
    ("C q̇: coriolis_vectors (Cq̇, Cᵀq̇, Mq̇) vs rnea", "coriolis_vectors", "rnea",
     True, "ours/pin ≤ 1.0"),
    ("g: gravity vs computeGeneralizedGravity", "gravity", "computeGeneralizedGravity",
     True, "ours/pin"),
    ("τ: inverse_dynamics vs rnea", "inverse_dynamics", "rnea", True, "ours/pin"),
    ("M: mass_matrix vs crba", "mass_matrix", "crba", True, "ours/pin"),
    ("Γ: christoffel vs nv × computeCoriolisMatrix", "christoffel", "Γ via Pinocchio",
     False, "pin/ours ≥ 10"),
]
TARGETS = {
    "computeCoriolisMatrix": (True, 1.0),
    "rnea": (True, 1.0),
    "Γ via Pinocchio": (False, 10.0),
}


def pin_namespace(pr: bl.PinRobot, q, qd, qdd, base_v=None) -> dict:
    return {
        "pin": pr.pin, "model": pr.model, "data": pr.data,
        "qp": pr.q(q), "vp": pr.v(qd, base_v), "ap": pr.v(qdd, base_v),
        "eye": np.eye(pr.nv), "Gp": np.empty((pr.nv, pr.nv, pr.nv)),
        "loop": bl.pin_christoffel_loop,
    }


def check_against_pinocchio(dyn, pr: bl.PinRobot, q, qd) -> tuple[float, float]:
    """Relative max errors of C and Γ against Pinocchio (fixed base) at (q, qd)."""
    ns = pin_namespace(pr, q, qd, qd)
    _, _, C = dyn.coriolis(q, qd)
    Cp = pr.to_ours(pr.pin.computeCoriolisMatrix(pr.model, pr.data, ns["qp"], ns["vp"]).copy())
    G = dyn.christoffel(q)
    Gp = bl.pin_christoffel_loop(pr.pin, pr.model, pr.data, ns["qp"], ns["eye"], ns["Gp"])
    # Gp[k] = C(q, e_k) in Pinocchio order = Γ[:, :, k] in ours.
    G_from_pin = np.empty_like(G)
    for kp in range(pr.nv):
        G_from_pin[:, :, pr.perm[kp]] = pr.to_ours(Gp[kp])
    err_c = np.abs(C - Cp).max() / max(1.0, np.abs(Cp).max())
    err_g = np.abs(G - G_from_pin).max() / max(1.0, np.abs(G_from_pin).max())
    return float(err_c), float(err_g)


def bench_robot(key: str, settings: bl.Settings) -> dict:
    from coriolis_ros.dynamics import Dynamics

    label, rel, free_flyer = ROBOTS[key]
    path = str(bl.erd_robots_dir() / rel)
    dyn = Dynamics.from_urdf(path, mimic="independent")  # as Pinocchio (mimic=False)
    dyn.warmup()
    n = dyn.nv
    rng = np.random.default_rng(42)
    q = rng.uniform(-np.pi, np.pi, n)
    qd = rng.normal(0.0, 1.0, n)
    qdd = rng.normal(0.0, 1.0, n)
    ns = {
        "dyn": dyn, "q": q, "qd": qd, "qdd": qdd,
        "cout": (np.empty((n, n)), np.empty((n, n)), np.empty((n, n))),
        "G": np.empty((n, n, n)), "vout": (np.empty(n), np.empty(n), np.empty(n)),
        "g": np.empty(n), "tau": np.empty(n), "M": np.empty((n, n)),
    }
    pr = bl.PinRobot(path, dyn.joint_names)
    err_c, err_g = check_against_pinocchio(dyn, pr, q, qd)
    res = {"label": label, "nv": n, "depth": dyn.tree_depth, "err_c": err_c, "err_g": err_g}
    items = {("ours", name): (stmt, ns) for name, stmt in OURS.items()}
    pns = pin_namespace(pr, q, qd, qdd)
    items.update({("pin", name): (stmt, pns) for name, stmt in PIN.items()})
    if free_flyer:
        prf = bl.PinRobot(path, dyn.joint_names, free_flyer=True)
        fns = pin_namespace(prf, q, qd, qdd, base_v=rng.normal(0.0, 1.0, 6))
        items.update({("pin_ff", name): (stmt, fns) for name, stmt in PIN.items()})
        res["nv_ff"] = prf.nv
    for (side, name), timing in bl.measure_group(items, settings).items():
        res.setdefault(side, {})[name] = timing
    return res


def ratio(ours: bl.Timing, pin: bl.Timing, ours_over_pin: bool) -> tuple[float, float]:
    if ours_over_pin:
        return ours.min / pin.min, ours.median / pin.median
    return pin.min / ours.min, pin.median / ours.median


def robot_table(res: dict, markdown: bool) -> str:
    ff = "pin_ff" in res
    headers = ["operation: ours vs Pinocchio", "ours med", "ours min", "pin med", "pin min"]
    if ff:
        headers += [f"pin FF med (nv={res['nv_ff']})", "pin FF min"]
    headers += ["ratio (min)", "ratio (med)", "ratio / target"]
    rows = []
    for label, ours_key, pin_key, oop, target in ROWS:
        o, p = res["ours"][ours_key], res["pin"][pin_key]
        r_min, r_med = ratio(o, p, oop)
        row = [label, bl.fmt_us(o.median), bl.fmt_us(o.min), bl.fmt_us(p.median), bl.fmt_us(p.min)]
        if ff:
            pf = res["pin_ff"][pin_key]
            row += [bl.fmt_us(pf.median), bl.fmt_us(pf.min)]
        row += [bl.fmt_ratio(r_min), bl.fmt_ratio(r_med), target]
        rows.append(row)
    title = (
        f"{res['label']}: nv={res['nv']}, tree depth={res['depth']} "
        f"(times in µs per call; check vs Pinocchio: rel. max err C {res['err_c']:.1e}, "
        f"Γ {res['err_g']:.1e})"
    )
    warn = ""
    if not max(res["err_c"], res["err_g"]) < 1e-8:
        warn = ("\n\nWARNING: ours and Pinocchio disagree on C or Γ: these timings compare "
                "different computations.")
    return bl.heading(title, markdown, 3) + warn + "\n\n" + bl.table(headers, rows, markdown)


def summary_table(results: list[dict], markdown: bool) -> str:
    headers = ["robot", "nv", "depth", "coriolis / computeCoriolisMatrix (≤ 1)",
               "coriolis_vectors / rnea (≤ 1)", "Γ via Pinocchio / christoffel (≥ 10)"]
    rows = []
    for res in results:
        row = [res["label"], str(res["nv"]), str(res["depth"])]
        for ours_key, pin_key in (("coriolis", "computeCoriolisMatrix"),
                                  ("coriolis_vectors", "rnea"),
                                  ("christoffel", "Γ via Pinocchio")):
            oop, target = TARGETS[pin_key]
            r_min, r_med = ratio(res["ours"][ours_key], res["pin"][pin_key], oop)
            ok = (r_min <= target) if oop else (r_min >= target)
            row.append(f"{bl.fmt_ratio(r_min)} (med {bl.fmt_ratio(r_med)}) "
                       f"{'met' if ok else 'NOT met'}")
        rows.append(row)
    return (bl.heading("Summary (ratios of min times; median-based in parentheses)", markdown, 3)
            + "\n\n" + bl.table(headers, rows, markdown))


# ----------------------------------------------------------------------------- overhead


def overhead_table(settings: bl.Settings, markdown: bool) -> str:
    """What a call costs when it does (almost) nothing: the floor under every small-n time."""
    import numba
    import pinocchio as pin

    from coriolis_ros.dynamics import Dynamics
    from support.random_trees import PLAIN, serial_chain

    @numba.njit(cache=False)
    def noop8(mi, mf, q, qd, ws, a, b, c):
        return 0

    @numba.njit(cache=False)
    def noop1(q):
        return 0

    def pynoop8(mi, mf, q, qd, ws, a, b, c):
        return 0

    n = 6
    mi = np.zeros((2, n), dtype=np.int64)
    mf = np.zeros((n, 25))
    mi.setflags(write=False)
    mf.setflags(write=False)
    args = (mi, mf, np.zeros(n), np.zeros(n), np.zeros((n, 20)),
            np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n)))
    noop8(*args)
    noop1(args[2])
    sig = tuple(numba.typeof(a) for a in args)
    entry8 = noop8.overloads[sig].entry_point

    urdf = serial_chain(1, seed=0, options=PLAIN)
    dyn1 = Dynamics.from_urdf(urdf, mimic="independent")
    dyn1.warmup()
    z = np.zeros(1)
    out3 = (np.empty((1, 1)), np.empty((1, 1)), np.empty((1, 1)))
    model = pin.buildModelFromXML(urdf)
    data = model.createData()
    ns = {"noop8": noop8, "noop1": noop1, "entry8": entry8, "pynoop8": pynoop8,
          "a": args, "mi": mi, "mf": mf, "q": args[2], "qd": args[3], "ws": args[4],
          "A": args[5], "B": args[6], "C": args[7], "dyn": dyn1, "z": z, "out3": out3,
          "g1": np.empty(1), "pin": pin, "model": model, "data": data}
    cases = [
        ("Python no-op function, 8 args", "pynoop8(mi, mf, q, qd, ws, A, B, C)"),
        ("Numba no-op, 1 array arg (dispatcher)", "noop1(q)"),
        ("Numba no-op, 8 array args (dispatcher)", "noop8(mi, mf, q, qd, ws, A, B, C)"),
        ("Numba no-op, 8 array args (compiled entry point, no type dispatch)",
         "entry8(mi, mf, q, qd, ws, A, B, C)"),
        ("ours, 1-DoF robot: coriolis(q, qd, out=)", "dyn.coriolis(z, z, out=out3)"),
        ("ours, 1-DoF robot: gravity(q, out=)", "dyn.gravity(z, out=g1)"),
        ("Pinocchio, 1-DoF robot: computeCoriolisMatrix",
         "pin.computeCoriolisMatrix(model, data, z, z)"),
        ("Pinocchio, 1-DoF robot: computeGeneralizedGravity",
         "pin.computeGeneralizedGravity(model, data, z)"),
    ]
    kernel = _bare_coriolis_kernel(dyn1, z, out3)
    if isinstance(kernel, str):
        print(f"(kernel-alone overhead row skipped: {kernel})")
    else:
        ns["kern"], ns["kargs"] = kernel
        cases.insert(5, (f"ours, 1-DoF robot: the coriolis kernel alone, {len(ns['kargs'])} args "
                         "(no Python wrapper; private internals)", "kern(*kargs)"))
    timings = bl.measure_group({label: (stmt, ns) for label, stmt in cases}, settings)
    rows = [[label, bl.fmt_us(t.median), bl.fmt_us(t.min)] for label, t in timings.items()]
    return (bl.heading("Call overhead (µs per call)", markdown, 3) + "\n\n"
            + bl.table(["call", "median", "min"], rows, markdown))


def _bare_coriolis_kernel(dyn, z, out3):
    """(callable, args) of the compiled kernel behind dyn.coriolis, or a reason why not.

    Uses private internals of Dynamics (they change while the kernels are optimised), so it
    tries the argument lists the kernel has had and gives up quietly otherwise.
    """
    try:
        from coriolis_ros.dynamics.kernels.coriolis_matrix import coriolis_matrix as disp
    except ImportError as exc:
        return f"kernel not importable: {exc}"
    fields = {name: getattr(dyn, name) for name in ("_mi", "_mf", "_ws") if hasattr(dyn, name)}
    candidates = []
    if {"_mi", "_mf", "_ws"} <= set(fields):
        candidates.append((fields["_mi"], fields["_mf"], z, z, fields["_ws"], *out3))
    if {"_mf", "_ws"} <= set(fields):
        candidates.append((fields["_mf"], z, z, fields["_ws"], *out3))
    for args in candidates:
        try:
            if disp(*args) != 0:
                continue
        except Exception:  # noqa: BLE001 - wrong signature for this version of the kernel
            continue
        try:
            import numba

            sig = tuple(numba.typeof(a) for a in args)
            return disp.overloads[sig].entry_point, args
        except (AttributeError, KeyError):
            return disp, args
    return "no known argument list matches the current kernel"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few short repeats (CI smoke run)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--robots", default=",".join(ROBOTS),
                    help=f"comma-separated subset of {','.join(ROBOTS)}")
    ap.add_argument("--no-overhead", action="store_true", help="skip the call-overhead table")
    args = ap.parse_args(argv)
    keys = [k.strip() for k in args.robots.split(",") if k.strip()]
    unknown = [k for k in keys if k not in ROBOTS]
    if unknown or not keys:
        ap.error(f"unknown robot(s) {unknown}; choose from {', '.join(ROBOTS)}")
    settings = bl.Settings.for_mode(args.quick)
    t0 = time.perf_counter()
    print(bl.heading("coriolis_ros.dynamics vs Pinocchio on example-robot-data robots",
                     args.markdown, 2))
    print()
    for line in bl.machine_info():
        print(f"- {line}" if args.markdown else line)
    print(f"{'- ' if args.markdown else ''}{bl.timing_note(settings, args.quick)}")
    print(f"{'- ' if args.markdown else ''}Our coriolis returns M, Ṁ and C together; "
          "Pinocchio's computeCoriolisMatrix returns C only; crba fills the upper triangle only. "
          "FF = Pinocchio with a free-flyer root (reference; ours is fixed-base).")
    print()
    results = []
    for key in keys:
        res = bench_robot(key, settings)
        results.append(res)
        print(robot_table(res, args.markdown))
        print(flush=True)
    print(summary_table(results, args.markdown))
    print()
    if not args.no_overhead:
        print(overhead_table(settings, args.markdown))
        print()
    print(f"(bench_dynamics finished in {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
