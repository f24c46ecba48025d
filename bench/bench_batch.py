"""Batched kernels against a Python loop of Pinocchio calls, per state, in the same run.

    python bench/bench_batch.py [--quick] [--markdown] [--robots ur5,panda,talos_full]

Table 1, per robot (T = 1000 random states; Γ: T = 200): time per state of

* ``coriolis_batch`` (M, Ṁ, C) vs ``for t: pin.computeCoriolisMatrix`` (C only: the issue's
  peer, on which the target is judged), and also vs the loop giving the same three outputs,
  ``pin.crba`` (M, upper triangle as Pinocchio leaves it) + ``computeCoriolisMatrix`` + ``C + C.T``,
  and vs the loop that keeps each C (``Ck[t] = computeCoriolisMatrix(...)`` into a preallocated
  (T, n, n) array, as ``coriolis_batch`` keeps its outputs: both then write every state's result
  to memory);
* ``christoffel_batch`` vs ``for t: nv × computeCoriolisMatrix`` (Γ_ijk = C(q, e_k)_ij);
* ``coriolis_vectors_batch`` vs ``for t: pin.rnea(q, qd, 0)`` (C q̇ + g; ours gives C q̇, Cᵀq̇, Mq̇);
* ``gravity_batch`` vs ``computeGeneralizedGravity``; ``inverse_dynamics_batch`` vs ``rnea``;

and our own Python loop of single-state calls for reference.  Targets (issue 12):
coriolis_batch ≥ 5× and christoffel_batch ≥ 20× the Pinocchio loop.  Each timing sample is
~20 ms (``--sample-ms``) of back-to-back calls of one statement, the samples of the compared
statements interleaved: throughput, as a long recording or a rollout loop sees it.  With 2 ms
samples a batch was often timed right after the Pinocchio loop had let the OpenMP worker fall
asleep, and paid its wake-up: UR5 5.3× and Panda 5.0× instead of 6.7× and 6.2×, same minute.

Table 2: scaling of ``coriolis_batch`` and ``coriolis_vectors_batch`` over Numba threads 1, 2
and T = 1e2 … 1e5 (Panda), µs per state, median and range of the repeats.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

ROBOTS = {
    "ur5": ("UR5", "ur_description/urdf/ur5_robot.urdf"),
    "panda": ("Panda", "panda_description/urdf/panda.urdf"),
    "talos_full": ("Talos full v2 (fixed base)", "talos_data/robots/talos_full_v2.urdf"),
}


def _states(n, T, seed=1):
    rng = np.random.default_rng(seed)
    return rng.uniform(-np.pi, np.pi, (T, n)), rng.normal(0, 1, (T, n)), rng.normal(0, 1, (T, n))


def bench_robot(key: str, settings: bl.Settings, T: int, T_gamma: int) -> dict:
    import numba

    from coriolis_ros.dynamics import Dynamics

    label, rel = ROBOTS[key]
    path = str(bl.erd_robots_dir() / rel)
    dyn = Dynamics.from_urdf(path, mimic="independent")
    dyn.warmup()
    dyn.warmup_batch()
    n = dyn.nv
    Q, V, A = _states(n, T)
    pr = bl.PinRobot(path, dyn.joint_names)
    pin, model, data = pr.pin, pr.model, pr.data
    Qp = [pr.q(q) for q in Q]
    Vp = [pr.v(v) for v in V]
    Ap = [pr.v(a) for a in A]
    zero = np.zeros(pr.nv)
    eye = np.eye(pr.nv)
    # correctness of what is timed: one row against Pinocchio
    C_ref = pr.to_ours(pin.computeCoriolisMatrix(model, data, Qp[3], Vp[3]))
    C = dyn.coriolis_batch(Q, V)[2]
    err = float(np.abs(C[3] - C_ref).max() / max(1.0, np.abs(C_ref).max()))
    ns = {
        "dyn": dyn, "Q": Q, "V": V, "A": A, "Qg": Q[:T_gamma].copy(),
        "cout": tuple(np.empty((T, n, n)) for _ in range(3)),
        "vout": tuple(np.empty((T, n)) for _ in range(3)),
        "G": np.empty((T_gamma, n, n, n)), "g": np.empty((T, n)), "tau": np.empty((T, n)),
        "pin": pin, "model": model, "data": data, "Qp": Qp, "Vp": Vp, "Ap": Ap,
        "zero": zero, "eye": eye, "Gp": np.empty((pr.nv, pr.nv, pr.nv)),
        "loop": bl.pin_christoffel_loop, "T": T, "Tg": T_gamma,
        "c1": (np.empty((n, n)), np.empty((n, n)), np.empty((n, n))),
        "Ck": np.empty((T, pr.nv, pr.nv)),
        "nb": numba, "nt": numba.get_num_threads(),
    }
    items = {
        ("coriolis", "ours"): ("dyn.coriolis_batch(Q, V, out=cout)", T),
        ("coriolis", "pin"): (
            "for t in range(T): pin.computeCoriolisMatrix(model, data, Qp[t], Vp[t])", T),
        ("coriolis", "pin_keep"): (
            "for t in range(T): Ck[t] = pin.computeCoriolisMatrix(model, data, Qp[t], Vp[t])", T),
        ("coriolis", "pin_same"): (
            "for t in range(T): pin.crba(model, data, Qp[t]); "
            "C = pin.computeCoriolisMatrix(model, data, Qp[t], Vp[t]); C + C.T", T),
        ("coriolis", "loop"): (
            "for t in range(T): dyn.coriolis(Q[t], V[t], out=c1)", T),
        ("coriolis", "ours1"): (
            "nb.set_num_threads(1); dyn.coriolis_batch(Q, V, out=cout); nb.set_num_threads(nt)", T),
        ("christoffel", "ours"): ("dyn.christoffel_batch(Qg, out=G)", T_gamma),
        ("christoffel", "ours1"): (
            "nb.set_num_threads(1); dyn.christoffel_batch(Qg, out=G); nb.set_num_threads(nt)",
            T_gamma),
        ("christoffel", "pin"): (
            "for t in range(Tg): loop(pin, model, data, Qp[t], eye, Gp)", T_gamma),
        ("coriolis_vectors", "ours"): ("dyn.coriolis_vectors_batch(Q, V, out=vout)", T),
        ("coriolis_vectors", "pin"): (
            "for t in range(T): pin.rnea(model, data, Qp[t], Vp[t], zero)", T),
        ("gravity", "ours"): ("dyn.gravity_batch(Q, out=g)", T),
        ("gravity", "pin"): (
            "for t in range(T): pin.computeGeneralizedGravity(model, data, Qp[t])", T),
        ("inverse_dynamics", "ours"): ("dyn.inverse_dynamics_batch(Q, V, A, out=tau)", T),
        ("inverse_dynamics", "pin"): (
            "for t in range(T): pin.rnea(model, data, Qp[t], Vp[t], Ap[t])", T),
    }
    timings = bl.measure_group({k: (stmt, ns) for k, (stmt, _) in items.items()}, settings)
    per_state = {k: (timings[k].median / items[k][1], timings[k].min / items[k][1]) for k in items}
    return {"label": label, "nv": n, "err": err, "per_state": per_state,
            "threads": numba.get_num_threads()}


def robot_table(results: list[dict], markdown: bool) -> str:
    headers = ["robot", "nv", "operation", "ours batch µs/state (med/min)",
               "Pinocchio loop µs/state (med/min)", "speed-up (med/min)", "target",
               "ours, 1 thread: µs/state, speed-up (med)", "our loop µs/state",
               "Pinocchio, same outputs (M, Ṁ, C): µs/state, speed-up (med)",
               "Pinocchio keeping each C in a (T, n, n) array: µs/state, speed-up (med)"]
    rows = []
    targets = {"coriolis": 5.0, "christoffel": 20.0}
    for res in results:
        ps = res["per_state"]
        for op in ("coriolis", "christoffel", "coriolis_vectors", "gravity", "inverse_dynamics"):
            ours, pin = ps[(op, "ours")], ps[(op, "pin")]
            med, best = pin[0] / ours[0], pin[1] / ours[1]
            target = targets.get(op)
            verdict = "-" if target is None else (
                f"≥ {target:g}×: {'met' if med >= target else 'MISSED'}")
            loop = ps.get((op, "loop"))
            one = ps.get((op, "ours1"))
            same = ps.get((op, "pin_same"))
            keep = ps.get((op, "pin_keep"))
            rows.append([
                res["label"], str(res["nv"]), op,
                f"{bl.fmt_us(ours[0])} / {bl.fmt_us(ours[1])}",
                f"{bl.fmt_us(pin[0])} / {bl.fmt_us(pin[1])}",
                f"{bl.fmt_ratio(med)}× / {bl.fmt_ratio(best)}×", verdict,
                "-" if one is None else f"{bl.fmt_us(one[0])}, {bl.fmt_ratio(pin[0] / one[0])}×",
                "-" if loop is None else bl.fmt_us(loop[0]),
                "-" if same is None
                else f"{bl.fmt_us(same[0])}, {bl.fmt_ratio(same[0] / ours[0])}×",
                "-" if keep is None
                else f"{bl.fmt_us(keep[0])}, {bl.fmt_ratio(keep[0] / ours[0])}×",
            ])
    return bl.table(headers, rows, markdown)


def scaling_table(settings: bl.Settings, Ts: list[int], markdown: bool) -> str:
    import numba

    from coriolis_ros.dynamics import Dynamics

    path = str(bl.erd_robots_dir() / ROBOTS["panda"][1])
    dyn = Dynamics.from_urdf(path, mimic="independent")
    dyn.warmup_batch()
    n = dyn.nv
    threads = sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)})
    headers = ["T"] + [f"{op}, {k} thread{'s' if k > 1 else ''}: µs/state med [min–max]"
                       for op in ("coriolis_batch", "coriolis_vectors_batch") for k in threads]
    rows = []
    before = numba.get_num_threads()
    try:
        for T in Ts:
            Q, V, _ = _states(n, T, seed=T)
            mats = tuple(np.empty((T, n, n)) for _ in range(3))
            vecs = tuple(np.empty((T, n)) for _ in range(3))
            row = [f"{T:.0e}".replace("e+0", "e")]
            for call in (lambda: dyn.coriolis_batch(Q, V, out=mats),
                         lambda: dyn.coriolis_vectors_batch(Q, V, out=vecs)):
                for k in threads:
                    numba.set_num_threads(k)
                    call()
                    reps = []
                    budget = time.perf_counter() + max(0.05, 20 * settings.target_s)
                    while len(reps) < 3 or (len(reps) < settings.repeats // 4
                                            and time.perf_counter() < budget):
                        t0 = time.perf_counter()
                        call()
                        reps.append((time.perf_counter() - t0) / T * 1e6)
                    row.append(f"{bl.fmt_us(float(np.median(reps)))} "
                               f"[{bl.fmt_us(min(reps))}–{bl.fmt_us(max(reps))}]")
            rows.append(row)
    finally:
        numba.set_num_threads(before)
    return bl.table(headers, rows, markdown)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--robots", default=",".join(ROBOTS))
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--sample-ms", type=float, default=20.0,
                    help="length of one timing sample (default 20 ms)")
    args = ap.parse_args(argv)
    keys = [k for k in args.robots.split(",") if k]
    unknown = [k for k in keys if k not in ROBOTS]
    if unknown:
        ap.error(f"unknown robot(s) {unknown}; choose from {', '.join(ROBOTS)}")
    # ~20 ms per timing sample: a sample is then many back-to-back batches (steady-state
    # throughput), not one or two that each wait for the OpenMP worker to wake after the
    # interleaved Pinocchio loop has let it sleep
    settings = bl.Settings(repeats=3, target_s=0.001) if args.quick else bl.Settings(
        repeats=9, target_s=args.sample_ms * 1e-3)
    T, T_gamma = (200, 20) if args.quick else (1000, 200)
    print(bl.heading("Batched kernels vs a Python loop of Pinocchio calls", args.markdown, 2))
    for line in bl.machine_info():
        print(line + ("  " if args.markdown else ""))
    print(f"Load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    import numba

    print(f"Numba threads: {numba.get_num_threads()}, threading layer: ", end="")
    results = [bench_robot(k, settings, T, T_gamma) for k in keys]
    print(numba.threading_layer())
    print()
    print(bl.heading(f"Per state, T = {T} (Γ: T = {T_gamma}), {results[0]['threads']} threads",
                     args.markdown, 3))
    print(f"Timing: {settings.repeats} interleaved repeats of each whole batch / loop, each "
          f"repeat ~{settings.target_s * 1e3:g} ms of back-to-back calls; med/min over the "
          "repeats. Check of what is timed, C row 3 vs Pinocchio (relative): "
          + ", ".join(f"{r['label']} {r['err']:.1e}" for r in results))
    print()
    print(robot_table(results, args.markdown))
    if not args.no_scaling:
        Ts = [100, 1000, 10000] if args.quick else [100, 1000, 10000, 100000]
        print()
        print(bl.heading("Scaling over threads and T (Panda, nv = 9)", args.markdown, 3))
        print(scaling_table(settings, Ts, args.markdown))
    print(f"\nLoad average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
