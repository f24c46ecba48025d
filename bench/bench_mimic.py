"""Coupled models against the same models with every joint independent: Γ and C per call.

    python bench/bench_mimic.py [--runs 3]

A model whose mimic joints follow (Talos full: 12 of 44 joints; Panda: the second finger),
or whose geared rotors follow their links (arm7_rotors), computes Γ and C over its
independent coordinates (Algorithm 2 and Algorithm 1 writing each entry through the constant
map A); the peer in the same run is the same tree with every joint a coordinate of its own
(``mimic="independent"``, or the arm without rotors), whose Γ is larger (n^3 entries).  Each
run: ``timeit`` best of 7 repeats (each ~20 ms), the two models' repeats interleaved, output
preallocated; the table gives the median over runs and, in brackets, the range.
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

CASES = [  # label, URDF (example-robot-data or bundled), follow kwargs, peer kwargs / URDF
    ("talos_full", "talos_data/robots/talos_full_v2.urdf", {}, {"mimic": "independent"}),
    ("panda", "panda_description/urdf/panda.urdf", {}, {"mimic": "independent"}),
    ("arm7_rotors", "bundled:arm7_rotors", {}, "bundled:arm7"),
]


def _path(spec: str) -> str:
    if spec.startswith("bundled:"):
        from coriolis_ros.robots import robot_path

        return str(robot_path(spec.split(":", 1)[1]))
    return str(bl.erd_robots_dir() / spec)


def _time(f) -> float:
    f()
    number = max(1, int(0.02 / max(timeit.timeit(f, number=1), 1e-7)))
    return min(timeit.repeat(f, number=number, repeat=1)) / number * 1e6


def one_run() -> dict:
    from coriolis_ros.dynamics import Dynamics

    out = {}
    for label, spec, kw, peer in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = Dynamics.from_urdf(_path(spec), **kw)
            b = (
                Dynamics.from_urdf(_path(spec), **peer)
                if isinstance(peer, dict)
                else Dynamics.from_urdf(_path(peer))
            )
        calls = {}
        for name, d in (("coupled", a), ("peer", b)):
            rng = np.random.default_rng(0)
            q = d.integrate(d.neutral(), rng.normal(size=d.nv) * 0.3)
            qd = rng.normal(size=d.nv)
            G = np.empty((d.nv,) * 3)
            M3 = tuple(np.empty((d.nv, d.nv)) for _ in range(3))
            calls[(name, "gamma")] = lambda d=d, q=q, G=G: d.christoffel(q, out=G)
            calls[(name, "C")] = lambda d=d, q=q, qd=qd, M3=M3: d.coriolis(q, qd, out=M3)
        best = {key: float("inf") for key in calls}
        for _ in range(7):  # interleaved repeats
            for key, f in calls.items():
                best[key] = min(best[key], _time(f))
        out[label] = (a.nv, b.nv, best)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one run (a smoke test)")
    parser.add_argument("--markdown", action="store_true", help="(the output is Markdown)")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs = 1
    runs = [one_run() for _ in range(args.runs)]
    print(f"load average {os.getloadavg()[0]:.2f}; {args.runs} runs; µs per call, median (range)")
    print("| model | nv (peer) | Γ coupled | Γ peer | ratio | C coupled | C peer | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for label, *_ in CASES:
        nv, nvp = runs[0][label][0], runs[0][label][1]
        cells = []
        for what in ("gamma", "C"):
            mine = [r[label][2][("coupled", what)] for r in runs]
            peer = [r[label][2][("peer", what)] for r in runs]
            ratio = [m / p for m, p in zip(mine, peer, strict=True)]
            for xs in (mine, peer, ratio):
                fmt = "{:.3g}"
                cells.append(
                    f"{fmt.format(np.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"
                )
        print(f"| {label} | {nv} ({nvp}) | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
