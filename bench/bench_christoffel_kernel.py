"""Single-thread time per state of Algorithm 2 (``christoffel``) through ``christoffel_batch``.

    python bench/bench_christoffel_kernel.py [--robots ur5,panda,talos_full] [--repeats 15]
    CORIOLIS_BENCH_CODE=HEAD python bench/bench_christoffel_kernel.py   # the last commit

One Numba thread (``numba.set_num_threads(1)``), T = 200 random states as in bench_batch.py,
the output preallocated; each repeat is one batch call, reported as µs per state (median,
min, max over the repeats).  Also prints the output size, the number of chain triples
(i <= j <= k on one root path) the sweep visits, and the load average, so that runs on a shared
machine can be judged.  No Pinocchio here: bench_batch.py has the peer comparison.
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


def chain_triples(parent: list[int]) -> int:
    depth = []
    for p in parent:
        depth.append(1 if p < 0 else depth[p] + 1)
    return sum(d * (d + 1) // 2 for d in depth)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", default="ur5,panda,talos_full")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--T", type=int, default=200)
    args = ap.parse_args()

    import numba

    from coriolis_ros.dynamics import Dynamics
    from coriolis_ros.dynamics.model import MF_PARENT

    numba.set_num_threads(1)
    print(f"code: {os.environ.get(bl.CODE_ENV, 'worktree')}, load: {os.getloadavg()}")
    for key in args.robots.split(","):
        dyn = Dynamics.from_urdf(str(bl.erd_robots_dir() / ROBOTS[key]), mimic="independent")
        n = dyn.nv
        Q = np.random.default_rng(1).uniform(-np.pi, np.pi, (args.T, dyn.nq))
        G = np.empty((args.T, n, n, n))
        for _ in range(3):
            dyn.christoffel_batch(Q, out=G)
        reps = max(1, int(0.02 / max(1e-9, _once(dyn, Q, G))))
        runs = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for _ in range(reps):
                dyn.christoffel_batch(Q, out=G)
            runs.append((time.perf_counter() - t0) / reps / args.T * 1e6)
        parents = [int(p) for p in dyn._mf[:, MF_PARENT]]
        print(
            f"{key:11s} nv={n:3d} out={n**3 * 8 / 1024:7.1f} KiB "
            f"triples={chain_triples(parents):5d}  µs/state med {np.median(runs):8.3f} "
            f"min {min(runs):8.3f} max {max(runs):8.3f}  ({args.repeats} x {reps} calls)"
        )
    print(f"load after: {os.getloadavg()}")


def _once(dyn, Q, G) -> float:
    t0 = time.perf_counter()
    dyn.christoffel_batch(Q, out=G)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
