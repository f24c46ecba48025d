"""`coriolis-ros bag` on a 60 s, 1 kHz Talos (full v2, 44 DoF) bag: time per message, total
against the bag's duration.

    python bench/bench_bag.py [--quick] [--markdown] [--seconds 60] [--repeats 3]

The bag (JointState at 1 kHz with position and velocity for the 44 joints, plus the URDF on
/robot_description) is written once with rosbags into a temporary directory, in both storage
formats.  Each case runs the command in a fresh process (interpreter start and kernel loading
from Numba's on-disk cache included), ``--repeats`` times; the table gives the median and range
of the wall time, the time per message and the ratio of the wall time to the bag's duration,
and the read / compute / write split reported by the tool.  The last case writes Parquet
(needs pyarrow) instead of .npz.  All terms: the .npz holds
3 × 60000 × 44² doubles (2.8 GB) of matrices; the vector terms only (``--fields``): 4 × 60000 × 44.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402
import numpy as np  # noqa: E402

TALOS = "talos_data/robots/talos_full_v2.urdf"
VECTORS = "coriolis_force,coriolis_transpose_force,gravity_force,momentum"


def make_bag(path: Path, storage: str, urdf: str, seconds: float, rate: int = 1000) -> int:
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from coriolis_ros.dynamics import Dynamics

    names = Dynamics.from_urdf(urdf, mimic="independent").joint_names
    n = len(names)
    ts = get_typestore(Stores.ROS2_KILTED)
    JS, Header, Time, String = (ts.types[k] for k in (
        "sensor_msgs/msg/JointState", "std_msgs/msg/Header", "builtin_interfaces/msg/Time",
        "std_msgs/msg/String"))
    rng = np.random.default_rng(0)
    amp, freq, phase = rng.uniform(0.2, 1.0, n), rng.uniform(0.1, 1.5, n), rng.uniform(0, 6, n)
    count = int(seconds * rate)
    t0 = 1_700_000_000 * 10**9
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    tmp = path.with_name(path.name + ".partial")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    with Writer(tmp, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection("/robot_description", String.__msgtype__, typestore=ts)
        writer.write(conn, t0 - 1, ts.serialize_cdr(String(data=urdf), String.__msgtype__))
        conn = writer.add_connection("/joint_states", JS.__msgtype__, typestore=ts)
        for k in range(count):
            stamp = t0 + k * (10**9 // rate)
            s = k / rate
            q = amp * np.sin(2 * np.pi * freq * s + phase)
            v = amp * 2 * np.pi * freq * np.cos(2 * np.pi * freq * s + phase)
            msg = JS(header=Header(stamp=Time(sec=stamp // 10**9, nanosec=stamp % 10**9),
                                   frame_id=""),
                     name=list(names), position=q, velocity=v, effort=np.zeros(0))
            writer.write(conn, stamp + 200_000, ts.serialize_cdr(msg, JS.__msgtype__))
    tmp.rename(path)
    return count


def run_tool(bag: Path, out: Path, fields: str | None, threads: int | None) -> dict:
    cmd = [sys.executable, "-m", "coriolis_ros.cli", "bag", str(bag), "-o", str(out),
           "--no-progress"]
    if fields:
        cmd += ["--fields", fields]
    env = dict(os.environ)
    env["PYTHONSAFEPATH"] = "1"  # the installed package, not the source tree
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {proc.stderr}")
    match = re.search(r"(\d+) joint states \(([\d.]+) s recorded\) in ([\d.]+) s", proc.stdout)
    split = re.search(r"read ([\d.]+) s, compute ([\d.]+) s, write ([\d.]+) s", proc.stdout)
    size = out.stat().st_size
    out.unlink()
    return {"wall": wall, "rows": int(match.group(1)), "duration": float(match.group(2)),
            "inside": float(match.group(3)),
            "split": tuple(float(x) for x in split.groups()) if split else None, "bytes": size}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 2 s bag, one repeat")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workdir", default=None, help="where the bags are kept (default: tmp)")
    args = ap.parse_args(argv)
    seconds, repeats = (2.0, 1) if args.quick else (args.seconds, args.repeats)
    urdf = (bl.erd_robots_dir() / TALOS).read_text()
    work = Path(args.workdir or Path(tempfile.gettempdir()) / f"coriolis_bench_bag_{os.getuid()}")
    work.mkdir(parents=True, exist_ok=True)
    print(bl.heading(f"coriolis-ros bag: Talos full v2, {seconds:g} s at 1 kHz", args.markdown, 2))
    for line in bl.machine_info():
        print(line + ("  " if args.markdown else ""))
    bags = {}
    for storage in ("mcap", "sqlite3"):
        path = work / f"talos_{seconds:g}s_{storage}"
        if not path.exists():
            t0 = time.perf_counter()
            count = make_bag(path, storage, urdf, seconds)
            print(f"wrote {path} ({count} JointState) in {time.perf_counter() - t0:.1f} s")
        bags[storage] = path
    cases = [
        ("mcap", "all terms", None, None, ".npz"),
        ("mcap", "vector terms", VECTORS, None, ".npz"),
        ("sqlite3", "all terms", None, None, ".npz"),
        ("mcap", "all terms, 1 Numba thread", None, 1, ".npz"),
        ("mcap", "all terms, Parquet", None, None, ".parquet"),
    ]
    headers = ["input", "output", "messages", "wall time s med [min–max]", "µs per message (med)",
               "wall / bag duration", "read / compute / write s (med run)", "output size"]
    rows = []
    for storage, label, fields, threads, suffix in cases:
        out = work / f"out{suffix}"
        runs = [run_tool(bags[storage], out, fields, threads) for _ in range(repeats)]
        walls = sorted(r["wall"] for r in runs)
        med = float(np.median(walls))
        mid = min(runs, key=lambda r: abs(r["wall"] - med))
        split = mid["split"]
        rows.append([
            storage, label, str(mid["rows"]),
            f"{med:.2f} [{walls[0]:.2f}–{walls[-1]:.2f}]",
            f"{med / mid['rows'] * 1e6:.0f}",
            f"{med / mid['duration']:.3f}" if mid["duration"] else "-",
            " / ".join(f"{x:.2f}" for x in split) if split else "-",
            f"{mid['bytes'] / 1e6:.0f} MB",
        ])
        print(f"  {storage} {label}: {', '.join(f'{w:.2f}' for w in walls)} s", flush=True)
    print()
    print(bl.table(headers, rows, args.markdown))
    print(f"\nLoad average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
