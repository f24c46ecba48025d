"""Single-thread time per state of Algorithm 2 (``christoffel``) through ``christoffel_batch``.

    python bench/bench_christoffel_kernel.py [--robots ur5,panda,talos_full] [--repeats 15]
    CORIOLIS_BENCH_CODE=HEAD python bench/bench_christoffel_kernel.py   # the last commit

One Numba thread (``numba.set_num_threads(1)``), T = 200 random states as in
bench_batch.py, the output preallocated; each repeat is one batch call (or a few, to last
~20 ms), reported as µs per state (median, min, max over the repeats).  The peer, in the
same run with its repeats interleaved with ours: the Python loop of Pinocchio calls that
bench_batch.py compares with (Γ[:, :, k] = C(q, e_k), nv ``computeCoriolisMatrix`` calls per
state), on the first 20 states.  Also prints the output size, the number of chain triples
(i <= j <= k on one root path) the sweep visits and the load average, so that runs on a
shared machine can be judged.  The 2-thread figures are bench_batch.py's.
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
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "talos_full": "talos_data/robots/talos_full_v2.urdf",
}
T_PIN = 20


def chain_triples(parent: list[int]) -> int:
    depth = []
    for p in parent:
        depth.append(1 if p < 0 else depth[p] + 1)
    return sum(d * (d + 1) // 2 for d in depth)


def _timed(fn, reps: int, states: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps / states * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="ur5,panda,talos_full")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--T", type=int, default=200)
    ap.add_argument("--no-pinocchio", action="store_true")
    args = ap.parse_args()

    import numba

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.dynamics.model import MF_PARENT

    numba.set_num_threads(1)
    print(f"code: {os.environ.get(bl.CODE_ENV, 'worktree')}, load: {os.getloadavg()}")
    for key in args.robots.split(","):
        path = str(bl.erd_robots_dir() / ROBOTS[key])
        dyn = Dynamics.from_urdf(path, mimic="independent")
        n = dyn.nv
        Q = np.random.default_rng(1).uniform(-np.pi, np.pi, (args.T, dyn.nq))
        G = np.empty((args.T, n, n, n))

        def ours():
            dyn.christoffel_batch(Q, out=G)

        calls = {"ours": (ours, args.T)}
        if not args.no_pinocchio:
            pr = bl.PinRobot(path, dyn.joint_names)
            Qp = [pr.q(q) for q in Q[:T_PIN]]
            eye, Gp = np.eye(pr.nv), np.empty((pr.nv, pr.nv, pr.nv))

            def peer():
                for q in Qp:
                    bl.pin_christoffel_loop(pr.pin, pr.model, pr.data, q, eye, Gp)

            calls["pin"] = (peer, T_PIN)
        reps = {}
        for name, (fn, states) in calls.items():
            for _ in range(3):
                fn()
            reps[name] = max(1, int(0.02 / max(1e-9, _timed(fn, 1, 1) / 1e6)))
        runs = {name: [] for name in calls}
        for _ in range(args.repeats):
            for name, (fn, states) in calls.items():
                runs[name].append(_timed(fn, reps[name], states))
        parents = [int(p) for p in dyn._mf[:, MF_PARENT]]
        med = {name: float(np.median(r)) for name, r in runs.items()}
        line = (
            f"{key:11s} nv={n:3d} out={n**3 * 8 / 1024:7.1f} KiB "
            f"triples={chain_triples(parents):5d}  ours µs/state med {med['ours']:8.3f} "
            f"[{min(runs['ours']):8.3f} – {max(runs['ours']):8.3f}]"
        )
        if "pin" in runs:
            line += (
                f"  Pinocchio loop med {med['pin']:8.2f} [{min(runs['pin']):8.2f} – "
                f"{max(runs['pin']):8.2f}]  speed-up (med) {med['pin'] / med['ours']:5.1f}x"
            )
        print(line + f"  ({args.repeats} repeats)")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
