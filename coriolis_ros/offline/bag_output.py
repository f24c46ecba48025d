"""Computing and writing a bag's rows: every CoriolisState term (:func:`compute_terms`,
the batched kernels), rows that are not finite refused (:func:`finite_rows`), and the outputs:
``.npz`` or Parquet (:mod:`.parquet`), a bag of ``CoriolisState`` messages, PNGs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from coriolis_ros.offline import parquet

if TYPE_CHECKING:
    from .bag_rows import Recording

from .bag_storage import typestore as _typestore
from .bag_task_space import CONSTANT_KEYS

CORIOLIS_STATE = "coriolis_ros/msg/CoriolisState"

# Computed CoriolisState fields (message field names), vectors then matrices.
VECTOR_FIELDS = ("coriolis_force", "coriolis_transpose_force", "gravity_force", "momentum")
MATRIX_FIELDS = ("coriolis_matrix", "mass_matrix", "mass_matrix_derivative")
TERM_FIELDS = MATRIX_FIELDS + VECTOR_FIELDS

# The outputs of coriolis and coriolis_vectors, in their order.
MATRIX_NAMES = ("mass_matrix", "mass_matrix_derivative", "coriolis_matrix")
VECTOR_NAMES = ("coriolis_force", "coriolis_transpose_force", "momentum")

CHUNK = 2048  # rows per batched call: a progress step, and bounded temporaries


# --------------------------------------------------------------------------- computing


def compute_terms(dyn, Q, V, fields=TERM_FIELDS, progress=None, chunk: int = CHUNK) -> dict:
    """Every requested CoriolisState term for each row of Q, V (a pure function of its inputs
    and, on a closed chain, of the closure ``dyn`` starts from).

    Returns {field name: array}: vectors (T, n), matrices (T, n, n); equal, row by row and
    bitwise, to the library's single-state calls (``coriolis``, ``coriolis_vectors``,
    ``gravity``) on that row.  On a closed chain every call closes the loops from the last
    closure, so the rows are computed one after the other in the node's order
    (:func:`tick_terms`): equal bitwise to the node's messages for the same states, and a
    refused row is a ``ValueError`` naming it.
    """
    unknown = set(fields) - set(TERM_FIELDS)
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}: choose from {list(TERM_FIELDS)}")
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    V = np.ascontiguousarray(V, dtype=np.float64)
    T, n = Q.shape[0], dyn.nv
    out = {}
    for name in fields:
        out[name] = np.empty((T, n, n) if name in MATRIX_FIELDS else (T, n))
    if dyn.closed is not None:
        _closed_rows(dyn, Q, V, out, progress, chunk)
        return out
    want_matrices = any(f in out for f in MATRIX_FIELDS)
    want_vectors = any(f in out for f in VECTOR_NAMES)
    scratch_m = [None] * 3
    scratch_v = [None] * 3
    for a in range(0, T, chunk):
        b = min(T, a + chunk)
        q, v = Q[a:b], V[a:b]
        if want_matrices:
            mats = []
            for k, name in enumerate(MATRIX_NAMES):
                if name in out:
                    mats.append(out[name][a:b])
                else:
                    if scratch_m[k] is None or scratch_m[k].shape[0] != b - a:
                        scratch_m[k] = np.empty((b - a, n, n))
                    mats.append(scratch_m[k])
            dyn.coriolis_batch(q, v, out=tuple(mats))
        if want_vectors:
            vecs = []
            for k, name in enumerate(VECTOR_NAMES):
                if name in out:
                    vecs.append(out[name][a:b])
                else:
                    if scratch_v[k] is None or scratch_v[k].shape[0] != b - a:
                        scratch_v[k] = np.empty((b - a, n))
                    vecs.append(scratch_v[k])
            dyn.coriolis_vectors_batch(q, v, out=tuple(vecs))
        if "gravity_force" in out:
            dyn.gravity_batch(q, out=out["gravity_force"][a:b])
        if progress is not None:
            progress(b, T)
    return out


def tick_terms(dyn, q, qd, matrices, vectors, g) -> None:
    """What the node's tick computes at one state, in its order: (M, Mdot, C), then
    (C qd, C^T qd, M qd) and g, which on a closed chain find the loops closed at q."""
    dyn.coriolis(q, qd, out=matrices)
    dyn.coriolis_vectors(q, qd, out=vectors)
    dyn.gravity(q, out=g)


def store_tick(out: dict, t: int, matrices, vectors, g) -> None:
    """Row t of the requested fields of ``out`` from one :func:`tick_terms`' outputs."""
    for name, value in zip(MATRIX_NAMES, matrices, strict=True):
        if name in out:
            out[name][t] = value
    for name, value in zip(VECTOR_NAMES, vectors, strict=True):
        if name in out:
            out[name][t] = value
    if "gravity_force" in out:
        out["gravity_force"][t] = g


def _closed_rows(dyn, Q, V, out: dict, progress, chunk: int) -> None:
    """A closed chain's rows of :func:`compute_terms`, one after the other (``progress``
    after every ``chunk`` rows and the last, as the batched path reports)."""
    T, n = Q.shape[0], dyn.nv
    # Q holds positions (nq), V velocities (nv): not the same width with a floating base
    if Q.ndim != 2 or V.shape != (T, n) or Q.shape[1] != dyn.nq:
        raise ValueError(
            f"Q and V must be (T, {dyn.nq}) and (T, {n}) arrays, got {Q.shape} and {V.shape}"
        )
    matrices = tuple(np.empty((n, n)) for _ in range(3))
    vectors = tuple(np.empty(n) for _ in range(3))
    g = np.empty(n)
    for t in range(T):
        try:
            tick_terms(dyn, Q[t], V[t], matrices, vectors, g)
        except ValueError as exc:
            raise ValueError(f"row {t}: {exc}") from None
        store_tick(out, t, matrices, vectors, g)
        if progress is not None and (t % chunk == chunk - 1 or t == T - 1):
            progress(t + 1, T)


def model_rows(dyn, Q, V) -> np.ndarray:
    """(T,) bool: the rows the library accepts, tried one by one (its input check: e.g. a
    geared rotor's coordinate, N times its joint's, beyond ±1e50)."""
    ok = np.ones(len(Q), dtype=bool)
    for t in range(len(Q)):
        try:
            dyn.coriolis_vectors(Q[t], V[t])
        except ValueError:
            ok[t] = False
    return ok


def finite_rows(arrays: dict, optional=("external_effort",)) -> np.ndarray:
    """(T,) bool: rows whose every value is finite, as the node checks a message before
    publishing it. ``optional`` fields are NaN where they have no value (the observer's
    estimate before it runs): a row is refused only for an infinity there."""
    ok = None
    for key, value in arrays.items():
        if not isinstance(value, np.ndarray) or value.dtype.kind != "f" or value.ndim < 2:
            continue
        flat = value.reshape(len(value), -1)
        if key in optional or key == "effort":
            row_ok = ~np.isinf(flat).any(axis=1)
        else:
            row_ok = np.isfinite(flat).all(axis=1)
        ok = row_ok if ok is None else ok & row_ok
    return ok


def take_rows(arrays: dict, keep: np.ndarray) -> dict:
    """The arrays with only the rows of ``keep`` (per-row arrays; the name lists and the
    other once-per-file keys unchanged)."""
    T = len(keep)
    out = {}
    for key, value in arrays.items():
        per_row = isinstance(value, np.ndarray) and value.ndim >= 1 and len(value) == T
        once = key in ("joint_names", "position_names") or key in CONSTANT_KEYS
        out[key] = value[keep] if per_row and not once else value
    return out


# --------------------------------------------------------------------------- writing


def result_arrays(rec: Recording, terms: dict, extra: dict | None = None) -> dict:
    """The .npz content: CoriolisState field names -> arrays (see the module docstring)."""
    out = {
        "header.stamp": rec.stamp,
        "log_time": rec.log_time,
        "joint_names": np.array(rec.joint_names, dtype=str),
        "position": rec.position,
        "velocity": rec.velocity,
    }
    if rec.position_names:
        out["position_names"] = np.array(rec.position_names, dtype=str)
    out.update(terms)
    if rec.effort is not None:
        out["effort"] = rec.effort
    if rec.external_effort is not None:
        out["external_effort"] = rec.external_effort
    out.update(extra or {})
    return out


def write_output(path: str | os.PathLike, arrays: dict) -> None:
    """Parquet if ``path`` ends in ``.parquet`` (:mod:`.parquet`), else ``.npz``."""
    if Path(path).suffix == parquet.SUFFIX:
        parquet.write_parquet(path, arrays)
    else:
        write_npz(path, arrays)


def output_stem(path: str | os.PathLike) -> str:
    """The output's name without its ``.npz`` or ``.parquet`` suffix: the bag's and PNGs' stem."""
    text = str(path)
    for suffix in (".npz", parquet.SUFFIX):
        if text.endswith(suffix):
            return text[: -len(suffix)]
    return text


def write_npz(path: str | os.PathLike, arrays: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".partial.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def find_msg_definition() -> str:
    """The text of msg/CoriolisState.msg as installed (share/coriolis_ros/msg) or in the tree."""
    prefixes = [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]
    prefixes = [p for p in prefixes if p]
    relative = Path("share", "coriolis_ros", "msg", "CoriolisState.msg")
    candidates = [Path(p) / relative for p in prefixes]
    candidates.append(Path(__file__).resolve().parents[2] / "msg" / "CoriolisState.msg")
    for candidate in candidates:
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"msg/CoriolisState.msg not found under share/coriolis_ros/msg of {', '.join(prefixes)}"
    )


def coriolis_typestore(msg_text: str | None = None):
    """A Kilted typestore with coriolis_ros/msg/CoriolisState registered from its .msg text."""
    from rosbags.typesys import get_types_from_msg

    typestore = _typestore()
    text = find_msg_definition() if msg_text is None else msg_text
    typestore.register(get_types_from_msg(text, CORIOLIS_STATE))
    return typestore


def write_bag(
    path: str | os.PathLike,
    arrays: dict,
    *,
    storage: str = "sqlite3",
    topic: str = "/coriolis_state",
    msg_text: str | None = None,
) -> int:
    """A new bag with one CoriolisState per row; fields the arrays lack are left empty, keys
    that are not message fields (``log_time``, the task-space terms) are not written."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    typestore = coriolis_typestore(msg_text)
    State = typestore.types[CORIOLIS_STATE]
    Header = typestore.types["std_msgs/msg/Header"]
    Time = typestore.types["builtin_interfaces/msg/Time"]
    fields = State.__dataclass_fields__
    names = [str(x) for x in arrays["joint_names"]]
    stamps = arrays["header.stamp"]
    log_times = arrays["log_time"]
    empty = np.zeros(0)
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    count = 0
    with Writer(Path(path), version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection(topic, CORIOLIS_STATE, typestore=typestore)
        for t in range(len(stamps)):
            values = {}
            for name in fields:
                if name in ("header", "__msgtype__"):
                    continue
                if name == "joint_names":
                    values[name] = names
                elif name == "position_names":
                    values[name] = [str(x) for x in arrays.get(name, ())]
                elif name in arrays:
                    values[name] = np.ascontiguousarray(arrays[name][t]).reshape(-1)
                else:
                    values[name] = empty
            sec, nanosec = divmod(int(stamps[t]), 1_000_000_000)
            header = Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id="")
            msg = State(header=header, **values)
            writer.write(conn, int(log_times[t]), typestore.serialize_cdr(msg, CORIOLIS_STATE))
            count += 1
    return count


def write_plots(stem: str | os.PathLike, arrays: dict) -> list[str]:
    """PNGs over time: C qd, g, and the observer's estimate when present."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stamps = arrays["header.stamp"]
    t = (stamps - stamps[0]) * 1e-9 if len(stamps) else stamps
    names = [str(x) for x in arrays["joint_names"]]
    written = []
    for key, title in (
        ("coriolis_force", "C(q, qd) qd"),
        ("gravity_force", "g(q)"),
        ("external_effort", "momentum observer: external effort"),
    ):
        if key not in arrays:
            continue
        fig, ax = plt.subplots(figsize=(10, 5))
        ax.plot(t, arrays[key], linewidth=0.8)
        ax.set_xlabel("time since the first joint state (s)")
        ax.set_ylabel(f"{key} (N m or N)")
        ax.set_title(title)
        if len(names) <= 12:
            ax.legend(names, fontsize="small", ncol=2)
        fig.tight_layout()
        out = f"{stem}_{key}.png"
        fig.savefig(out, dpi=100)
        plt.close(fig)
        written.append(out)
    return written
