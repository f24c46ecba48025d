"""Recorded ROS 2 bags in, every CoriolisState term per joint state out (no ROS needed).

The steps are pure functions of files and arrays, usable on their own (and under Dask,
see :mod:`coriolis_ros.offline.distributed`):

``read_recording(bag, urdf=None)``
    the URDF (``--urdf`` or the bag's first ``/robot_description``) and the joint states
    as arrays in model order (:class:`Recording`);
``compute_terms(dyn, Q, V)``
    the ``CoriolisState`` fields for every row, with the batched kernels;
``process_bag(bag, output, ...)``
    both, then ``.npz`` or Parquet (:mod:`.parquet`), and optionally a bag of
    ``CoriolisState`` messages and PNGs.

A floating or planar base (``root_joint``) takes its state from the recorded
``nav_msgs/Odometry`` (``/odom`` by default) as the node does: each joint state is paired with
the newest odometry before it in the recording, whose stamp must be within
``base_state_timeout`` of the joint state's; rows without such odometry are skipped and counted
(:class:`coriolis_ros.stream.base_state.BaseStateBuffer` does the pairing and the validation).
``joint_names`` then starts with the base's velocity DoF and ``position_names`` (the
configuration's coordinates, base pose first) is written too.

Joint states are merged as the node does: joints are mapped by name, partial messages from
several publishers fill in the latest value per joint, and a row is produced for every
JointState message once every model joint has a position.  A message without velocities
keeps the last known velocity (zero before the first).  Messages whose lengths disagree
(names vs positions, or a non-empty velocity of another length) or with NaN/inf or values
beyond ±1e50 are skipped and counted, like the node's rejections.

Output keys are the ``CoriolisState`` field names, one row per joint state:
``header.stamp`` (int64 ns, the JointState's stamp), ``joint_names`` (n,), ``position``,
``velocity``, ``coriolis_force``, ``coriolis_transpose_force``, ``gravity_force``,
``momentum`` (T, n), ``coriolis_matrix``, ``mass_matrix``, ``mass_matrix_derivative``
(T, n, n: ``reshape(T, n * n)`` gives the message's row-major layout); plus ``log_time``
(int64 ns, when the bag recorded the JointState), and ``effort`` (T, n; NaN where a joint's
effort was never recorded) when the bag has efforts.  An output named ``*.parquet`` is a
Parquet file with the same keys as columns, one row per joint state (:mod:`.parquet`).

The momentum observer's estimate, ``external_effort``, plugs in through
:func:`observer_estimate`: it runs ``coriolis_ros.dynamics.MomentumObserver``
(``MomentumObserver(dyn, gain)``, ``update(t, q, qd, tau)``) over the rows whose efforts are
complete, in recording order; rows without a complete effort, or whose stamp does not
increase, are NaN.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from coriolis_ros.dynamics import Dynamics, MomentumObserver, URDFError
from coriolis_ros.dynamics.kernels.kinematics import MAX_ABS
from coriolis_ros.offline import parquet
from coriolis_ros.stream.base_state import UNIT_TOLERANCE, BaseStateBuffer
from coriolis_ros.stream.odometry_wire import parse_little_endian

JOINT_STATE = "sensor_msgs/msg/JointState"
ODOMETRY = "nav_msgs/msg/Odometry"
STRING = "std_msgs/msg/String"
CORIOLIS_STATE = "coriolis_ros/msg/CoriolisState"

# Computed CoriolisState fields (message field names), vectors then matrices.
VECTOR_FIELDS = ("coriolis_force", "coriolis_transpose_force", "gravity_force", "momentum")
MATRIX_FIELDS = ("coriolis_matrix", "mass_matrix", "mass_matrix_derivative")
TERM_FIELDS = MATRIX_FIELDS + VECTOR_FIELDS

CHUNK = 2048  # rows per batched call: a progress step, and bounded temporaries


class BagError(Exception):
    """A bag that cannot be processed; the message names the file."""


@dataclass
class Recording:
    """Joint states of one bag in model order."""

    urdf: str
    urdf_source: str  # "--urdf" or the topic it was recorded on
    joint_names: tuple[str, ...]
    stamp: np.ndarray  # (T,) int64 ns, header.stamp
    log_time: np.ndarray  # (T,) int64 ns, bag receive time
    position: np.ndarray  # (T, nq): a floating or planar base's pose first
    velocity: np.ndarray  # (T, n)
    effort: np.ndarray | None  # (T, n), NaN where unknown; None if no effort at all
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    unknown_joints: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    position_names: tuple[str, ...] = ()  # the nq coordinates; only with a floating/planar base


# --------------------------------------------------------------------------- reading


def _typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_KILTED)


def _open_reader(path: Path):
    try:
        from rosbags.rosbag2 import Reader
    except ImportError as exc:  # pragma: no cover - the extra is part of the test venv
        raise BagError(f"reading bags needs rosbags: pip install coriolis_ros[bag] ({exc})")
    if not path.exists():
        raise BagError(f"{path}: no such file or directory")
    reader = Reader(path)
    reader.open()
    return reader


def _pick(reader, path: Path, msgtype: str, topic: str | None, default: str, option: str,
          why: str = "") -> list:  # fmt: skip
    """The connections of ``msgtype`` on ``topic``, or on the bag's only topic of that type,
    or on ``default`` among several; a BagError naming the file otherwise (``option``: the
    command-line option that chooses, ``why``: what the messages are needed for)."""
    conns = [c for c in reader.connections if c.msgtype == msgtype]
    topics = sorted({c.topic for c in conns})
    kind = msgtype.rsplit("/", 1)[-1]
    if topic is not None:
        chosen = [c for c in conns if c.topic == topic]
        if not chosen:
            raise BagError(
                f"{path}: no {msgtype} on {topic} ({kind} topics: {topics or 'none'}){why}"
            )
        return chosen
    if not topics:
        raise BagError(f"{path}: no {msgtype} messages{why}")
    if len(topics) > 1:
        if default in topics:
            return [c for c in conns if c.topic == default]
        raise BagError(f"{path}: several {kind} topics {topics}: choose one with {option}")
    return conns


def _pick_joint_states(reader, path: Path, topic: str | None) -> list:
    return _pick(reader, path, JOINT_STATE, topic, "/joint_states", "--joint-states-topic")


def _pick_odometry(reader, path: Path, topic: str | None, root_joint: str) -> list:
    why = (
        f"; a {root_joint} base takes its state from the recorded odometry"
        + ("" if topic else " (--odometry-topic names its topic)")
    )
    return _pick(reader, path, ODOMETRY, topic, "/odom", "--odometry-topic", why)


def decode_odometry(raw, typestore):
    """(stamp_ns, frame_id, child_frame_id, pose (7,), twist (6,)) of a recorded Odometry:
    little-endian CDR read directly (the node's parser), anything else by rosbags."""
    fields = parse_little_endian(bytes(raw))
    if fields is not None:
        return fields
    msg = typestore.deserialize_cdr(raw, ODOMETRY)
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
    pose = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
    twist = (lin.x, lin.y, lin.z, ang.x, ang.y, ang.z)
    return stamp, msg.header.frame_id, msg.child_frame_id, pose, twist


def _recorded_urdf(reader, typestore, path: Path, topic: str) -> tuple[str, list[str]]:
    conns = [c for c in reader.connections if c.topic == topic and c.msgtype == STRING]
    texts = []
    # (an empty connection list would mean "every message" to rosbags)
    for conn, _, raw in reader.messages(connections=conns) if conns else ():
        texts.append(typestore.deserialize_cdr(raw, conn.msgtype).data)
    if not texts:
        raise BagError(
            f"{path}: no robot description: the bag has no {STRING} on {topic}; "
            "pass the URDF with --urdf"
        )
    notes = []
    if any(t != texts[0] for t in texts[1:]):
        notes.append(f"{topic} changes during the bag: the first description is used")
    return texts[0], notes


_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iII")  # sec, nanosec, then the length of frame_id


class JointStateDecoder:
    """sensor_msgs/JointState from CDR, several times faster than a generic deserializer.

    Little-endian CDR (what ROS 2 records on x86 and ARM) is read directly: the stamp, the
    names (decoded once per distinct name list: the encoded list is compared byte for byte
    with the previous one), and the three float64 sequences as NumPy views.  Anything else
    (big-endian data, or bytes that do not parse) goes to rosbags' deserializer, which raises
    on corrupt data.  Returns (sec, nanosec, names, position, velocity, effort).
    """

    def __init__(self, typestore):
        self.typestore = typestore
        self.names_raw = None
        self.names: tuple[str, ...] = ()

    def __call__(self, raw, msgtype: str = JOINT_STATE):
        b = bytes(raw)
        if len(b) >= 16 and b[0] == 0 and b[1] == 1:
            try:
                return self._little_endian(b)
            except (struct.error, ValueError, UnicodeDecodeError):
                pass
        msg = self.typestore.deserialize_cdr(raw, msgtype)
        stamp = msg.header.stamp
        return stamp.sec, stamp.nanosec, tuple(msg.name), msg.position, msg.velocity, msg.effort

    def _little_endian(self, b: bytes):
        # Offsets are relative to the payload after the 4-byte encapsulation header.
        sec, nanosec, frame_len = _STAMP.unpack_from(b, 4)
        start = (12 + frame_len + 3) & ~3
        known = self.names_raw
        if known is not None and b.startswith(known, 4 + start):
            pos, names = start + len(known), self.names
        else:
            (count,) = _U32.unpack_from(b, 4 + start)
            pos, decoded = start + 4, []
            for _ in range(count):
                pos = (pos + 3) & ~3
                (size,) = _U32.unpack_from(b, 4 + pos)
                if size < 1 or 4 + pos + 4 + size > len(b):
                    raise ValueError("bad string length")
                decoded.append(b[4 + pos + 4 : 4 + pos + 3 + size].decode())
                pos += 4 + size
            names = tuple(decoded)
            self.names_raw, self.names = b[4 + start : 4 + pos], names
        arrays = []
        for _ in range(3):
            pos = (pos + 3) & ~3
            (count,) = _U32.unpack_from(b, 4 + pos)
            pos += 4
            if count:
                pos = (pos + 7) & ~7
            arrays.append(np.frombuffer(b, "<f8", count, 4 + pos))  # ValueError if short
            pos += 8 * count
        if 4 + pos > len(b):
            raise ValueError("truncated")
        return (sec, nanosec, names, *arrays)


def _is_bad(x: np.ndarray) -> bool:
    return not bool(np.all(np.abs(x) <= MAX_ABS))


def read_recording(
    bag: str | os.PathLike,
    urdf: str | None = None,
    *,
    joint_states_topic: str | None = None,
    robot_description_topic: str = "/robot_description",
    gravity=(0.0, 0.0, -9.81),
    progress=None,
    root_joint: str = "fixed",
    odometry_topic: str | None = None,
    base_state_timeout: float = 0.1,
):
    """(Dynamics, Recording) of one bag (a rosbag2 directory, or a .db3 / .mcap file).

    ``urdf`` (XML text or a file path) overrides the recorded description.  ``root_joint``
    "floating" or "planar" attaches the root link to the world by such a joint, whose state
    comes from the bag's odometry (``odometry_topic``, default ``/odom`` or the only one),
    paired as the node pairs it (its ``base_state_timeout``).  Raises :class:`BagError`
    naming the file for an unreadable bag, a bag without joint states, without a description
    (and no ``urdf``) or, for a floating or planar base, without odometry, or a URDF the
    library rejects.
    """

    if root_joint not in ("fixed", "floating", "planar"):
        raise ValueError(f"root_joint must be fixed, floating or planar, got {root_joint!r}")
    path = Path(bag)
    base = (root_joint, odometry_topic, base_state_timeout)
    topics = (joint_states_topic, robot_description_topic)
    try:
        return _read(path, urdf, *topics, gravity, progress, base)
    except BagError:
        raise
    except URDFError as exc:
        raise BagError(f"{path}: unusable URDF: {exc}") from None
    except Exception as exc:  # corrupt or truncated storage: rosbags, sqlite3, mcap, cdr
        raise BagError(f"{path}: cannot read the bag: {type(exc).__name__}: {exc}") from None


def _read(path, urdf, topic, description_topic, gravity, progress, base_options):

    root_joint, odometry_topic, timeout = base_options
    typestore = _typestore()
    reader = _open_reader(path)
    try:
        notes: list[str] = []
        conns = _pick_joint_states(reader, path, topic)
        if urdf is not None:
            text, source = urdf, "--urdf"
        else:
            text, notes = _recorded_urdf(reader, typestore, path, description_topic)
            source = description_topic
        # Every recorded joint is a coordinate of its own (mimic joints included), as the
        # bag recorded them; the batched kernels this tool uses are not reduced for mimics.
        dyn = Dynamics.from_urdf(text, gravity=gravity, mimic="independent", root_joint=root_joint)
        base, odom = None, []
        if root_joint != "fixed":
            odom = _pick_odometry(reader, path, odometry_topic, root_joint)
            base = BaseStateBuffer(root_joint, dyn.root_link, timeout)
        total = sum(c.msgcount for c in conns + odom)
        rec = _merge_joint_states(reader, typestore, conns, dyn, total, progress, base, odom)
    finally:
        reader.close()
    rec.urdf, rec.urdf_source = text, source
    rec.notes[:0] = notes
    return dyn, rec


def _merge_joint_states(
    reader, typestore, conns, dyn, total, progress, base=None, odom_conns=()
) -> Recording:
    """The rows of one bag; with ``base`` (a BaseStateBuffer fed by ``odom_conns``) each row
    is [base, joints], the joints after the base's coordinates (the model's order)."""
    nqb, nvb = (base.nq, base.nv) if base is not None else (0, 0)
    joint_names = dyn.joint_names[nvb:]
    if tuple(dyn.position_names[nqb:]) != tuple(joint_names):  # one coordinate per joint
        raise BagError(f"model {dyn.name}: joints with several coordinates are not supported")
    n = len(joint_names)
    index = {name: k for k, name in enumerate(joint_names)}
    q = np.zeros(n)
    qd = np.zeros(n)
    tau = np.full(n, np.nan)
    have_q = np.zeros(n, dtype=bool)
    q_row, qd_row = np.zeros(nqb + n), np.zeros(nvb + n)
    tau_row = np.full(nvb + n, np.nan)  # a base's efforts stay unknown
    odom_topics = {c.topic for c in odom_conns}
    normalized = 0
    rows_stamp, rows_log, rows_q, rows_qd, rows_tau = [], [], [], [], []
    any_effort = False
    skipped: dict[str, int] = {}
    unknown: set[str] = set()
    maps: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    decode = JointStateDecoder(typestore)
    done = 0

    def skip(reason):
        skipped[reason] = skipped.get(reason, 0) + 1

    # (rosbags yields the messages of all connections in recording order)
    for conn, log_time, raw in reader.messages(connections=[*conns, *odom_conns]):
        done += 1
        if progress is not None and done % 1000 == 0:
            progress(done, total)
        if conn.msgtype == ODOMETRY and conn.topic in odom_topics:
            stamp, frame, child, pose, twist = decode_odometry(raw, typestore)
            ok, why = base.update(child, frame, pose[:3], pose[3:], twist[:3], twist[3:], stamp)
            if not ok:
                skip(f"odometry rejected: {why}")
            elif why:
                normalized += 1
            continue
        sec, nanosec, names, pos, vel, eff = decode(raw, conn.msgtype)
        m = len(names)
        if len(pos) != m:
            skip("names and positions differ in length")
            continue
        if len(vel) not in (0, m):
            skip("names and velocities differ in length")
            continue
        if _is_bad(pos) or _is_bad(vel):
            skip("NaN, infinite or huge (beyond ±1e50) position or velocity")
            continue
        mapping = maps.get(names)
        if mapping is None:
            src = [k for k, nm in enumerate(names) if nm in index]
            unknown.update(nm for nm in names if nm not in index)
            dst = [index[names[k]] for k in src]
            mapping = (np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64))
            maps[names] = mapping
        src, dst = mapping
        if not len(dst):
            skip("no joint of the model")
            continue
        q[dst] = pos[src]
        have_q[dst] = True
        if len(vel):
            qd[dst] = vel[src]
        if len(eff) == m and not _is_bad(eff):
            tau[dst] = eff[src]
            any_effort = True
        if not have_q.all():
            skip("before every joint had a position")
            continue
        stamp = sec * 1_000_000_000 + nanosec
        if base is not None:
            if base.fill(q_row, qd_row, stamp):
                skip(
                    "before the first accepted odometry"
                    if base.stamp_ns is None
                    else f"odometry more than base_state_timeout {base.timeout:g} s apart"
                )
                continue
        q_row[nqb:], qd_row[nvb:], tau_row[nvb:] = q, qd, tau
        rows_stamp.append(stamp)
        rows_log.append(log_time)
        rows_q.append(q_row.copy())
        rows_qd.append(qd_row.copy())
        rows_tau.append(tau_row.copy())
    if progress is not None:
        progress(done, total)

    def stack(rows, width):
        return np.array(rows, dtype=np.float64).reshape(len(rows), width)

    notes = []
    if normalized:
        notes.append(
            f"odometry orientations off unit norm by more than {UNIT_TOLERANCE:g}, used "
            f"normalized: {normalized}"
        )
    return Recording(
        urdf="",
        urdf_source="",
        joint_names=tuple(dyn.joint_names),
        stamp=np.array(rows_stamp, dtype=np.int64),
        log_time=np.array(rows_log, dtype=np.int64),
        position=stack(rows_q, nqb + n),
        velocity=stack(rows_qd, nvb + n),
        effort=stack(rows_tau, nvb + n) if any_effort else None,
        skipped=skipped,
        unknown_joints=tuple(sorted(unknown)),
        notes=notes,
        position_names=tuple(dyn.position_names) if base is not None else (),
    )


# --------------------------------------------------------------------------- computing


def compute_terms(dyn, Q, V, fields=TERM_FIELDS, progress=None, chunk: int = CHUNK) -> dict:
    """Every requested CoriolisState term for each row of Q, V (a pure function of its inputs).

    Returns {field name: array}: vectors (T, n), matrices (T, n, n); equal, row by row and
    bitwise, to the library's single-state calls (``coriolis``, ``coriolis_vectors``,
    ``gravity``) on that row.
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
    want_matrices = any(f in out for f in MATRIX_FIELDS)
    want_vectors = any(f in out for f in ("coriolis_force", "coriolis_transpose_force", "momentum"))
    scratch_m = [None] * 3
    scratch_v = [None] * 3
    for a in range(0, T, chunk):
        b = min(T, a + chunk)
        q, v = Q[a:b], V[a:b]
        if want_matrices:
            mats = []
            for k, name in enumerate(("mass_matrix", "mass_matrix_derivative", "coriolis_matrix")):
                if name in out:
                    mats.append(out[name][a:b])
                else:
                    if scratch_m[k] is None or scratch_m[k].shape[0] != b - a:
                        scratch_m[k] = np.empty((b - a, n, n))
                    mats.append(scratch_m[k])
            dyn.coriolis_batch(q, v, out=tuple(mats))
        if want_vectors:
            vecs = []
            names = ("coriolis_force", "coriolis_transpose_force", "momentum")
            for k, name in enumerate(names):
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


def observer_estimate(dyn, stamp_ns, Q, V, effort, gain) -> tuple[np.ndarray | None, str]:
    """The momentum observer's external-torque estimate per row, and a note.

    Runs ``coriolis_ros.dynamics.MomentumObserver(dyn, gain)`` over the rows whose efforts
    are complete (``update(t, q, qd, tau)``, t in seconds from the stamps), in order; other
    rows, and rows whose stamp does not increase (the observer needs increasing stamps), are
    NaN.  Returns (None, reason) when no efforts were recorded.
    """
    if effort is None:
        return None, "no efforts recorded: no external_effort"
    if dyn.root_joint != "fixed":  # as in the node
        return None, (
            f"no external_effort: the momentum observer supports fixed-base models only "
            f"(root_joint is {dyn.root_joint})"
        )

    observer = MomentumObserver(dyn, gain)
    out = np.full(effort.shape, np.nan)
    complete = np.isfinite(effort).all(axis=1)
    t0 = int(stamp_ns[0]) if len(stamp_ns) else 0
    last, used = None, 0
    for t in np.flatnonzero(complete):
        if last is not None and int(stamp_ns[t]) <= last:
            continue
        last = int(stamp_ns[t])
        out[t] = observer.update((last - t0) * 1e-9, Q[t], V[t], effort[t])
        used += 1
    return out, f"external_effort on {used} of {len(complete)} rows"


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
        "msg/CoriolisState.msg not found under share/coriolis_ros/msg of "
        f"{', '.join(prefixes)}"
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
    """A new bag with one CoriolisState per row; fields the arrays lack are left empty."""
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
    gravity=(0.0, 0.0, -9.81),
    joint_states_topic: str | None = None,
    robot_description_topic: str = "/robot_description",
    fields=TERM_FIELDS,
    write_bag_storage: str | None = None,
    plot: bool = False,
    observer_gain: float = 50.0,
    progress=None,
    root_joint: str = "fixed",
    odometry_topic: str | None = None,
    base_state_timeout: float = 0.1,
) -> BagResult:
    """Read, compute, write one bag; never raises for a bad bag (``BagResult.ok`` is False).

    Files written: ``output`` (Parquet if it ends in ``.parquet``, else .npz; default
    ``<bag>.coriolis.npz`` beside the bag), with
    ``write_bag_storage`` ("sqlite3" or "mcap") a bag ``<output stem>_bag`` of CoriolisState
    messages, with ``plot`` PNGs ``<output stem>_<field>.png``.
    """
    out_path = Path(output) if output is not None else default_output(bag)
    result = BagResult(bag=str(bag), ok=False, output=str(out_path))
    stage = progress or (lambda *_: None)
    try:
        t0 = time.perf_counter()
        dyn, rec = read_recording(
            bag,
            urdf,
            joint_states_topic=joint_states_topic,
            robot_description_topic=robot_description_topic,
            gravity=gravity,
            progress=lambda d, t: stage("read", d, t),
            root_joint=root_joint,
            odometry_topic=odometry_topic,
            base_state_timeout=base_state_timeout,
        )
        t1 = time.perf_counter()
        terms = compute_terms(
            dyn, rec.position, rec.velocity, fields, progress=lambda d, t: stage("compute", d, t)
        )
        extra = {}
        estimate, note = observer_estimate(
            dyn, rec.stamp, rec.position, rec.velocity, rec.effort, observer_gain
        )
        if estimate is not None:
            extra["external_effort"] = estimate
        if rec.effort is not None:
            rec.notes.append(note)
        t2 = time.perf_counter()
        arrays = result_arrays(rec, terms, extra)
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
    result.ok = True
    result.rows = len(rec.stamp)
    result.skipped = dict(rec.skipped)
    result.notes = list(rec.notes)
    if rec.unknown_joints:
        result.notes.append(f"joints not in the model, ignored: {', '.join(rec.unknown_joints)}")
    result.files = files
    result.seconds = {"read": t1 - t0, "compute": t2 - t1, "write": t3 - t2}
    if len(rec.stamp) > 1:
        result.duration = (int(rec.stamp[-1]) - int(rec.stamp[0])) * 1e-9
    return result


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
