"""Run every benchmark and write the results to bench/results/ (``make bench`` calls this).

    python bench/run_all.py [--quick] [--markdown]
                            [--only dynamics,loop,paper,floating,reduction,scaling,node,batch,bag]
                            [--outdir DIR]
                            [--code worktree|installed|<git revision>]

Each benchmark runs in its own process (same interpreter), its output is echoed and written to
``<outdir>/<name>.txt`` (``.md`` with --markdown); scaling.py also writes
``<outdir>/scaling_<topology>.png``.  Default outdir: bench/results, or bench/results/quick
with --quick (git-ignored, so smoke runs do not overwrite the committed results).
bench_node.py measures the node of the *installed* package (``make bench`` installs the tree
first).  Whole run: about 4-5 minutes on 2 shared cores (--quick: about a minute).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = {
    "dynamics": ("bench_dynamics.py", "bench_dynamics"),
    "loop": ("bench_loop.py", "bench_loop"),  # C x, Slotine-Li, observer terms (issue 10)
    "paper": ("bench_paper.py", "bench_paper"),
    "floating": ("bench_floating.py", "bench_floating"),
    "reduction": ("bench_reduction.py", "bench_reduction"),  # Safeea; mimic reduction cost
    "rotors": ("bench_rotors.py", "bench_rotors"),  # geared rotors vs the Pinocchio route
    "mimic": ("bench_mimic.py", "bench_mimic"),  # coupled models vs all joints independent
    "task_space": ("bench_task_space.py", "bench_task_space"),  # frame J, Jdot; Lambda, mu
    "regressor": ("bench_regressor.py", "bench_regressor"),  # regressors, parameter updates
    "adaptive": ("bench_adaptive.py", "bench_adaptive"),  # one adaptive-control tick
    "scaling": ("scaling.py", "scaling"),
    "node": ("bench_node.py", "bench_node"),  # the installed node, end to end (about 2 min)
    "batch": ("bench_batch.py", "bench_batch"),  # batched kernels vs a Pinocchio loop
    "bag": ("bench_bag.py", "bench_bag"),  # coriolis-ros bag on a 60 s, 1 kHz Talos bag
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="short smoke run of everything")
    ap.add_argument("--markdown", action="store_true", help="Markdown tables (.md files)")
    ap.add_argument("--only", default=",".join(SCRIPTS),
                    help=f"comma-separated subset of {','.join(SCRIPTS)}")
    ap.add_argument("--outdir", default=None, help="results directory")
    ap.add_argument("--code", default=None,
                    help="coriolis_ros to measure: worktree (default), installed, or a git "
                         "revision such as HEAD (sets $CORIOLIS_BENCH_CODE)")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown or not names:
        ap.error(f"unknown benchmark(s) {unknown}; choose from {', '.join(SCRIPTS)}")
    outdir = Path(args.outdir) if args.outdir else (
        BENCH / "results" / "quick" if args.quick else BENCH / "results")
    outdir.mkdir(parents=True, exist_ok=True)
    extra = (["--quick"] if args.quick else []) + (["--markdown"] if args.markdown else [])
    env = dict(os.environ)
    if args.code:
        env["CORIOLIS_BENCH_CODE"] = args.code
    failures = []
    t0 = time.perf_counter()
    for name in names:
        script, stem = SCRIPTS[name]
        cmd = [sys.executable, str(BENCH / script), *extra]
        if name == "scaling":
            cmd += ["--outdir", str(outdir)]
        if name == "node":
            cmd += ["--no-save"]  # saved below like the others
        out_file = outdir / f"{stem}.{'md' if args.markdown else 'txt'}"
        print(f"=== {' '.join(cmd)}  ->  {out_file}", flush=True)
        lines = []
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1,
                              env=env) as proc:
            for line in proc.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()
                lines.append(line)
        if proc.returncode:
            failures.append(f"{script} exited with {proc.returncode}")
            lines.append(f"\n(FAILED: exit status {proc.returncode})\n")
        out_file.write_text("".join(lines), encoding="utf-8")
        print()
    print(f"=== results in {outdir} ({time.perf_counter() - t0:.0f} s)")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
