"""Recorded ROS 2 bags in, every CoriolisState term per joint state out (no ROS needed).

The steps are pure functions of files and arrays, usable on their own (and under Dask,
see :mod:`coriolis_ros.offline.distributed`):

``read_recording(bag, urdf=None)``
    the URDF (``--urdf`` or the bag's first ``/robot_description``) and the joint states
    as arrays in model order (:class:`Recording`), storage checked first
    (:mod:`.bag_storage`), the messages taken as the node takes them (:mod:`.bag_rows`);
``compute_terms(dyn, Q, V)``
    the ``CoriolisState`` fields for every row, with the batched kernels;
``process_bag(bag, output, ...)``
    both, rows that are not finite refused as the node refuses them, then ``.npz`` or
    Parquet (:mod:`.parquet`), and optionally a bag of ``CoriolisState`` messages and PNGs
    (:mod:`.bag_output`).

A floating or planar base (``root_joint``) takes its state from the recorded
``nav_msgs/Odometry`` (``/odom`` by default) as the node does: each joint state is paired with
the newest odometry before it in the recording, whose stamp must be within
``base_state_timeout`` of the joint state's; rows without such odometry are skipped and counted
(:class:`coriolis_ros.stream.base_state.BaseStateBuffer` does the pairing and the validation).
``joint_names`` then starts with the base's velocity DoF and ``position_names`` (the
configuration's coordinates, base pose first) is written too.

Joint states are taken exactly as the node takes them, by the same code
(:mod:`coriolis_ros.stream`, see :mod:`.bag_rows`): names mapped per exact name list, partial
messages from several publishers merged, the last velocity kept when a message has none, a
joint's effort forgotten when a message names it without one, a message with lengths that
disagree with its names (positions, velocities or efforts), duplicate names, NaN/inf or values
beyond ±1e50 rejected as a whole.  Mimic joints follow their leader by default (``mimic``):
they are left out of the rows and their recorded values are checked against the leader, as
are geared rotors'.  A row is produced for every joint state that brings a new state once
every model joint has a position.  Messages not turned into rows are counted by reason; a
bad one (undecodable, rejected) is fatal with ``strict``.  A bag that yields no row is an
error naming the joints it lacks.

Output keys are the ``CoriolisState`` field names, one row per joint state:
``header.stamp`` (int64 ns, the JointState's stamp), ``joint_names`` (n,), ``position``,
``velocity``, ``coriolis_force``, ``coriolis_transpose_force``, ``gravity_force``,
``momentum`` (T, n), ``coriolis_matrix``, ``mass_matrix``, ``mass_matrix_derivative``
(T, n, n: ``reshape(T, n * n)`` gives the message's row-major layout); plus ``log_time``
(int64 ns, when the bag recorded the JointState), ``effort`` (T, n; NaN where a joint's
effort was never recorded) when the bag has efforts, and with ``task`` the task-space terms
of its frames (``task_space.<frame>.task_inertia`` and so on, :mod:`.bag_task_space`).  An
output named ``*.parquet`` is a Parquet file with the same keys as columns, one row per joint
state (:mod:`.parquet`).

The momentum observer's estimate, ``external_effort``, is the node's
(:class:`~coriolis_ros.stream.observer_feed.ObserverFeed`, gain and largest stamp gap as the
node's ``observer_gain`` and ``observer_max_gap``), fed on every accepted joint state in
recording order: NaN where it has no estimate (efforts missing, before the first).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coriolis_ros.offline import parquet

from .bag_output import (  # noqa: F401 - the module's public names
    CHUNK,
    CORIOLIS_STATE,
    MATRIX_FIELDS,
    TERM_FIELDS,
    VECTOR_FIELDS,
    compute_terms,
    coriolis_typestore,
    find_msg_definition,
    finite_rows,
    model_rows,
    output_stem,
    result_arrays,
    take_rows,
    write_bag,
    write_npz,
    write_output,
    write_plots,
)
from .bag_closed import closed_terms
from .bag_read import read_recording
from .bag_rows import Recording, RowStream  # noqa: F401
from .bag_task_space import TaskSpec, add_task_space, check_model
from .bag_storage import (  # noqa: F401
    JOINT_STATE,
    ODOMETRY,
    STRING,
    BagError,
    JointStateDecoder,
    decode_odometry,
    expand_bags,
)


# --------------------------------------------------------------------------- one bag


@dataclass
class BagResult:
    bag: str
    ok: bool
    error: str = ""
    output: str = ""
    rows: int = 0
    skipped: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    files: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)  # read, compute, write
    duration: float = 0.0  # span of the joint-state stamps (s)


def default_output(
    bag: str | os.PathLike, output_dir: str | os.PathLike | None = None, fmt: str = "npz"
) -> Path:
    """``<bag>.coriolis.npz`` (or ``.parquet``), beside the bag or in ``output_dir``."""
    path = Path(bag)
    stem = path.stem if path.is_file() else path.name
    directory = Path(output_dir) if output_dir is not None else path.resolve().parent
    return directory / f"{stem}.coriolis.{fmt}"


def process_bag(
    bag: str | os.PathLike,
    output: str | os.PathLike | None = None,
    *,
    urdf: str | None = None,
    fields=TERM_FIELDS,
    write_bag_storage: str | None = None,
    plot: bool = False,
    observer_gain: float | None = 50.0,
    observer_max_gap: float = 0.1,
    task: TaskSpec | None = None,
    progress=None,
    **read_options,
) -> BagResult:
    """Read, compute, write one bag; never raises for a bad bag (``BagResult.ok`` is False).

    ``read_options``: those of :func:`read_recording` (gravity, topics, root_joint,
    base_state_timeout, mimic, mimic_tolerance, strict); ``observer_gain`` None runs no
    observer.  Files written: ``output`` (Parquet if it ends in ``.parquet``, else .npz;
    default ``<bag>.coriolis.npz`` beside the bag), with ``write_bag_storage`` ("sqlite3" or
    "mcap") a bag ``<output stem>_bag`` of CoriolisState messages, with ``plot`` PNGs
    ``<output stem>_<field>.png``.  Rows with a value that is not finite are refused (counted
    in ``skipped``), as the node refuses to publish them.  ``task``: the task-space terms of
    its frames per row (:mod:`.bag_task_space`; rows where a task is singular are counted
    and left out, fatal with ``strict``).
    """
    out_path = Path(output) if output is not None else default_output(bag)
    result = BagResult(bag=str(bag), ok=False, output=str(out_path))
    stage = progress or (lambda *_: None)
    observer = None if observer_gain is None else (observer_gain, observer_max_gap)
    if task is not None:
        read_options["model_check"] = lambda dyn: check_model(dyn, task, str(bag))
    try:
        t0 = time.perf_counter()
        dyn, rec = read_recording(
            bag, urdf, progress=lambda d, t: stage("read", d, t), observer=observer,
            **read_options,
        )  # fmt: skip
        t1 = time.perf_counter()
        arrays = _terms(dyn, rec, fields, lambda d, t: stage("compute", d, t), bag)
        if task is not None:
            arrays, ok = add_task_space(
                dyn, task, arrays, rec, strict=bool(read_options.get("strict")), where=str(bag),
                progress=lambda d, t: stage("task space", d, t),
            )  # fmt: skip
            if not ok.all():
                arrays = take_rows(arrays, ok)
        keep = finite_rows(arrays)
        if not keep.all():
            bad = int((~keep).sum())
            rec.skipped["values not finite (overflow): not published"] = bad
            if bad == len(keep):
                raise BagError(f"{bag}: no rows: every row has values that are not finite")
            arrays = take_rows(arrays, keep)
        if rec.effort is not None:
            rec.notes.append(_observer_note(arrays))
        t2 = time.perf_counter()
        write_output(out_path, arrays)
        files = [str(out_path)]
        stem = output_stem(out_path)
        if write_bag_storage:
            bag_out = Path(stem + "_bag")
            if bag_out.exists():
                raise BagError(f"{bag_out} exists already, not overwriting")
            write_bag(bag_out, arrays, storage=write_bag_storage)
            files.append(str(bag_out))
        if plot:
            files += write_plots(stem, arrays)
        t3 = time.perf_counter()
    except BagError as exc:
        result.error = str(exc)
        return result
    except parquet.ParquetUnavailable as exc:  # asked for Parquet without pyarrow
        result.error = f"{bag}: {exc}"
        return result
    except Exception as exc:  # a failure while writing, named with the bag
        result.error = f"{bag}: {type(exc).__name__}: {exc}"
        return result
    stamps = arrays["header.stamp"]
    result.ok = True
    result.rows = len(stamps)
    result.skipped = dict(rec.skipped)
    result.notes = list(rec.notes)
    if rec.unknown_joints:
        result.notes.append(f"joints not in the model, ignored: {', '.join(rec.unknown_joints)}")
    result.files = files
    result.seconds = {"read": t1 - t0, "compute": t2 - t1, "write": t3 - t2}
    if len(stamps) > 1:
        result.duration = (int(stamps[-1]) - int(stamps[0])) * 1e-9
    return result


def _terms(dyn, rec, fields, progress, bag) -> dict:
    """result_arrays with the terms; rows the model refuses are left out and counted (the
    node's tick fails on such a state and publishes nothing)."""
    if dyn.closed is not None:  # row after row, as the node's tick (bag_closed)
        terms, keep = closed_terms(dyn, rec, fields, progress)
        if not keep.any():
            raise BagError(f"{bag}: no rows: the model refuses every state ({rec.notes[-1]})")
        return take_rows(result_arrays(rec, terms), keep)
    try:
        return result_arrays(rec, compute_terms(dyn, rec.position, rec.velocity, fields,
                                                progress=progress))  # fmt: skip
    except ValueError:
        keep = model_rows(dyn, rec.position, rec.velocity)
    if not keep.any():
        raise BagError(f"{bag}: no rows: the model refuses every state (its input check)")
    rec.skipped["refused by the model (its input check): not published"] = int((~keep).sum())
    arrays = take_rows(result_arrays(rec, {}), keep)
    arrays.update(compute_terms(dyn, arrays["position"], arrays["velocity"], fields,
                                progress=progress))  # fmt: skip
    return arrays


def _observer_note(arrays: dict) -> str:
    estimate = arrays.get("external_effort")
    if estimate is None:
        return "no external_effort (no momentum observer)"
    used = int(np.isfinite(estimate).all(axis=1).sum()) if estimate.size else 0
    return f"external_effort on {used} of {len(estimate)} rows"


# --------------------------------------------------------------------------- many bags


class Progress:
    """A one-line progress display on stderr, updated at most every 0.2 s (off if not a tty)."""

    def __init__(self, bags: int, stream=None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.bags = bags
        self.state: dict[int, tuple[str, int, int]] = {}
        self.finished = 0
        self.last = 0.0

    def update(self, index: int, stage: str, done: int, total: int) -> None:
        self.state[index] = (stage, done, total)
        self.draw()

    def finish(self, index: int) -> None:
        self.state.pop(index, None)
        self.finished += 1
        self.draw(force=True)

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self.last < 0.2):
            return
        self.last = now
        parts = [f"bags {self.finished}/{self.bags}"]
        for index, (stage, done, total) in sorted(self.state.items()):
            frac = done / total if total else 1.0
            bar = "#" * int(20 * frac)
            parts.append(f"[{index + 1}] {stage} [{bar:<20}] {done}/{total}")
        self.stream.write("\r" + "  ".join(parts)[:200] + "\033[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _worker_init(threads: int) -> None:
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def _run_one(index: int, bag: str, output: str | None, options: dict, queue) -> BagResult:
    def report(stage, done, total):
        if queue is not None:
            queue.put((index, stage, done, total))

    return process_bag(bag, output, progress=report, **options)


def process_bags(
    bags: list[str],
    outputs: list[str | None],
    options: dict,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> list[BagResult]:
    """Process every bag, several at a time in worker processes; one bad bag spoils no other.

    ``jobs`` worker processes (default: the CPU count, at most one per bag), each with
    Numba's threads shared out among them; a single bag runs in this process.
    """
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(bags)))
    if jobs == 1:
        results = []
        for index, (bag, out) in enumerate(zip(bags, outputs, strict=True)):

            def report(stage, done, total, index=index):
                if progress is not None:
                    progress.update(index, stage, done, total)

            results.append(process_bag(bag, out, progress=report, **options))
            if progress is not None:
                progress.finish(index)
        return results

    import multiprocessing
    import queue as queue_module
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: a forked child of a process whose OpenMP threads ran can hang.
    context = multiprocessing.get_context("spawn")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    results: list[BagResult | None] = [None] * len(bags)
    with context.Manager() as manager:
        events = manager.Queue()
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_worker_init, initargs=(threads,)
        ) as pool:
            futures = {
                pool.submit(_run_one, k, bag, out, options, events): k
                for k, (bag, out) in enumerate(zip(bags, outputs, strict=True))
            }
            pending = set(futures)
            while pending:
                try:
                    index, stage, done, total = events.get(timeout=0.1)
                    if progress is not None:
                        progress.update(index, stage, done, total)
                except queue_module.Empty:
                    pass
                for fut in [f for f in pending if f.done()]:
                    pending.discard(fut)
                    k = futures[fut]
                    try:
                        results[k] = fut.result()
                    except Exception as exc:  # a worker that died: name its bag
                        results[k] = BagResult(
                            bag=bags[k], ok=False, error=f"{bags[k]}: worker failed: {exc!r}"
                        )
                    if progress is not None:
                        progress.finish(k)
    return [r for r in results if r is not None]
