"""Shared helpers for the coriolis_ros benchmarks (bench/*.py).

* Import paths: by default the repository root goes first on ``sys.path`` so the benchmarks
  measure the working tree's ``coriolis_ros.dynamics`` (uncommitted edits included; a stale
  installed copy would be misleading).  ``CORIOLIS_BENCH_CODE=installed`` measures the
  installed package instead, ``CORIOLIS_BENCH_CODE=<git revision>`` (e.g. HEAD) a snapshot of
  that commit's ``coriolis_ros/`` (``git archive`` into a temp dir).  ``test/`` is added for
  ``random_trees``.
* Timing: :func:`measure_group` uses :mod:`timeit` (GC disabled while timing) on statement
  strings, after a warm-up, with the loop count calibrated so that one repeat lasts about
  ``target_s`` (short, so that many repeats run without being preempted on a busy machine);
  the repeats of the statements compared with each other are interleaved so they share the
  background load; it reports the median and the minimum per-call time, in µs.
* Pinocchio: :class:`PinRobot` loads the same URDF (fixed base, or with a free-flyer root)
  and maps our joint order / coordinates to Pinocchio's (continuous joints are (cos, sin)).
* Tables: :func:`table` renders aligned plain text or Markdown.

Pinocchio and example-robot-data are benchmark dependencies only.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import timeit
import unicodedata
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS = BENCH_DIR / "results"
CODE_ENV = "CORIOLIS_BENCH_CODE"


def _snapshot(rev: str) -> Path:
    """``coriolis_ros/`` of git revision ``rev`` extracted (read-only git use) to a temp dir."""
    import io
    import tarfile
    import tempfile

    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", rev + "^{commit}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    root = Path(tempfile.gettempdir()) / f"coriolis_bench_src_{os.getuid()}" / sha[:12]
    if not (root / "coriolis_ros" / "dynamics" / "__init__.py").is_file():
        root.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="extract-", dir=root.parent))
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha, "coriolis_ros"],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        try:
            tmp.rename(root)
        except OSError:  # another process won the race
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def _code_root() -> Path | None:
    """Where coriolis_ros is imported from: $CORIOLIS_BENCH_CODE = worktree (default: the
    repository's working tree, uncommitted edits included), installed (whatever the
    interpreter finds without the repository on sys.path) or a git revision (HEAD, a sha...)."""
    code = os.environ.get(CODE_ENV, "worktree").strip() or "worktree"
    if code == "worktree":
        return REPO
    if code == "installed":
        return None
    return _snapshot(code)


_code = _code_root()
for _p in [str(REPO / "test")] + ([str(_code)] if _code else []):
    if _p in sys.path:
        sys.path.remove(_p)
    sys.path.insert(0, _p)
if _code is None and str(REPO) in sys.path:
    sys.path.remove(str(REPO))

import numpy as np  # noqa: E402

SHARED_MACHINE_NOTE = (
    "Note: this machine is shared with other processes (2 cores); timings are noisy. "
    "The min over repeats is the most robust figure, the median shows typical cost."
)


# ----------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Timing:
    median: float  # µs per call
    min: float  # µs per call
    number: int  # calls per repeat
    repeats: int

    def fmt(self) -> str:
        return f"{fmt_us(self.median)} / {fmt_us(self.min)}"


@dataclass(frozen=True)
class Settings:
    repeats: int
    target_s: float  # duration of one repeat
    warmup_calls: int = 20

    @classmethod
    def for_mode(cls, quick: bool) -> Settings:
        return cls(repeats=7, target_s=0.001) if quick else cls(repeats=41, target_s=0.002)


def _calibrated(stmt: str, namespace: dict, settings: Settings) -> tuple[timeit.Timer, int]:
    """A warmed-up timer and the loop count that makes one repeat last about target_s."""
    timer = timeit.Timer(stmt, globals=namespace)
    timer.timeit(settings.warmup_calls)
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= settings.target_s / 4 or number >= 1 << 22:
            break
        number *= 4 if elapsed < settings.target_s / 40 else 2
    # The min over a few tries: calibration must not be fooled by one preemption.
    elapsed = min([elapsed] + [timer.timeit(number) for _ in range(2)])
    return timer, max(1, int(round(number * settings.target_s / max(elapsed, 1e-9))))


def measure_group(items: dict[str, tuple[str, dict]], settings: Settings) -> dict[str, Timing]:
    """Time several ``name: (statement, namespace)`` with their repeats interleaved (a, b, a, b).

    Interleaving exposes every statement to the same background load, so ratios between them
    (ours vs Pinocchio) stay meaningful on a shared machine.  Returns µs per call.
    """
    timers = {name: _calibrated(stmt, ns, settings) for name, (stmt, ns) in items.items()}
    runs: dict[str, list[float]] = {name: [] for name in items}
    for _ in range(settings.repeats):
        for name, (timer, number) in timers.items():
            runs[name].append(timer.timeit(number) / number * 1e6)
    return {
        name: Timing(float(np.median(r)), float(np.min(r)), timers[name][1], settings.repeats)
        for name, r in runs.items()
    }


def measure(stmt: str, namespace: dict, settings: Settings) -> Timing:
    """Median and min time per execution of ``stmt`` (µs) over ``settings.repeats`` repeats."""
    return measure_group({"x": (stmt, namespace)}, settings)["x"]


def timing_note(settings: Settings, quick: bool) -> str:
    return (f"Timing: timeit, {settings.repeats} repeats of ~{settings.target_s * 1e3:.0f} ms "
            "after warm-up, repeats of the compared calls interleaved; med/min = median/min over "
            f"the repeats of the time per call{' (--quick)' if quick else ''}.")


def fmt_us(x: float) -> str:
    if x != x:  # NaN
        return "-"
    if x >= 1000:
        return f"{x:.0f}"
    if x >= 100:
        return f"{x:.1f}"
    if x >= 10:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_ratio(x: float) -> str:
    if x != x:
        return "-"
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


# ----------------------------------------------------------------------------- machine


def machine_info() -> list[str]:
    """Lines describing the machine, software versions and the code measured."""
    import numba
    import pinocchio

    import coriolis_ros.dynamics as dyn_pkg

    cpu, family, model = "unknown CPU", "?", "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "model name" and cpu == "unknown CPU":
                cpu = value
            elif key == "cpu family" and family == "?":
                family = value
            elif key == "model" and model == "?":
                model = value
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"Machine: {cpu} (cpu family {family}, model {model}), nproc={affinity} "
        f"(os.cpu_count={os.cpu_count()}), load average at start: {load}",
        f"Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"pinocchio {pinocchio.__version__}",
        f"coriolis_ros.dynamics from {Path(dyn_pkg.__file__).parent} ({code_description()})",
        SHARED_MACHINE_NOTE,
    ]


def code_description() -> str:
    code = os.environ.get(CODE_ENV, "worktree").strip() or "worktree"
    if code == "worktree":
        return f"working tree, git {git_revision()}"
    if code == "installed":
        return "installed package"
    return f"git revision {code} = {_code.name}"


def git_revision() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "coriolis_ros/dynamics"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown revision"
    return head + (" + uncommitted changes in coriolis_ros/dynamics" if dirty else "")


# ----------------------------------------------------------------------------- robots


def erd_robots_dir() -> Path:
    """example-robot-data's ``robots`` directory (shipped in the cmeel prefix)."""
    import pinocchio

    candidates = []
    for parent in Path(pinocchio.__file__).resolve().parents:
        if parent.name == "cmeel.prefix":
            candidates.append(parent / "share" / "example-robot-data" / "robots")
            break
    for entry in sys.path:
        candidates.append(Path(entry) / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
    for cand in candidates:
        if cand.is_dir():
            return cand
    raise FileNotFoundError(
        "example-robot-data robots directory not found (pip install example-robot-data)"
    )


# ----------------------------------------------------------------------------- pinocchio


class PinRobot:
    """A Pinocchio model of a URDF with our joint order mapped onto Pinocchio's coordinates."""

    def __init__(self, urdf: str, joint_names, free_flyer: bool = False):
        import pinocchio as pin

        self.pin = pin
        is_file = not urdf.lstrip().startswith("<")
        if free_flyer:
            root = pin.JointModelFreeFlyer()
            self.model = (pin.buildModelFromUrdf(urdf, root) if is_file
                          else pin.buildModelFromXML(urdf, root))
        else:
            self.model = pin.buildModelFromUrdf(urdf) if is_file else pin.buildModelFromXML(urdf)
        self.data = self.model.createData()
        self.free_flyer = free_flyer
        self.nv = self.model.nv
        names = list(joint_names)
        index = {name: k for k, name in enumerate(names)}
        self._map = []  # (our index, idx_q, nq, idx_v)
        perm = np.empty(len(names), dtype=np.int64)
        offset = 6 if free_flyer else 0
        for j in range(1, self.model.njoints):
            name = self.model.names[j]
            jm = self.model.joints[j]
            if name not in index:
                if free_flyer and j == 1:
                    continue
                raise ValueError(f"Pinocchio joint {name!r} not in our model")
            if jm.nv != 1:
                raise ValueError(f"Pinocchio joint {name!r} has nv={jm.nv}")
            k = index[name]
            self._map.append((k, jm.idx_q, jm.nq, jm.idx_v))
            perm[jm.idx_v - offset] = k
        if self.nv != len(names) + offset:
            raise ValueError(f"Pinocchio nv={self.nv}, ours {len(names)} (+{offset})")
        self.perm = perm  # pin joint velocity slot (after the base) -> our index

    def q(self, q_ours: np.ndarray) -> np.ndarray:
        qp = self.pin.neutral(self.model)
        for k, iq, nq, _ in self._map:
            if nq == 1:
                qp[iq] = q_ours[k]
            else:  # continuous / unbounded revolute: (cos, sin)
                qp[iq] = np.cos(q_ours[k])
                qp[iq + 1] = np.sin(q_ours[k])
        return qp

    def v(self, v_ours: np.ndarray, base=None) -> np.ndarray:
        vp = np.zeros(self.nv)
        if self.free_flyer:
            vp[:6] = 0.0 if base is None else base
        for k, _, _, iv in self._map:
            vp[iv] = v_ours[k]
        return vp

    def to_ours(self, mat: np.ndarray) -> np.ndarray:
        """Pinocchio n×n joint-space matrix (fixed base) in our joint order."""
        out = np.empty_like(mat)
        out[np.ix_(self.perm, self.perm)] = mat
        return out


def pin_christoffel_loop(pin, model, data, q, eye, out):
    """Γ by nv calls of computeCoriolisMatrix with unit velocities: out[k] = C(q, e_k)."""
    for k in range(model.nv):
        out[k] = pin.computeCoriolisMatrix(model, data, q, eye[k])
    return out


# ----------------------------------------------------------------------------- tables


def table(headers: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(_width(h), *(_width(r[c]) for r in rows)) for c, h in enumerate(headers)]

    def line(cells):
        out = []
        for c, (cell, w) in enumerate(zip(cells, widths)):
            pad = " " * (w - _width(cell))
            out.append(cell + pad if c == 0 else pad + cell)
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), sep] + [line(r) for r in rows])


def _width(text: str) -> int:
    """Display width: combining marks (the dot of q̇) take no column."""
    return sum(0 if unicodedata.combining(ch) else 1 for ch in text)


def heading(text: str, markdown: bool, level: int = 3) -> str:
    return ("#" * level + " " + text) if markdown else f"{text}\n{'=' * _width(text)}"
