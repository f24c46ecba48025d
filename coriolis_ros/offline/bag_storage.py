"""Reading recorded bags: storage checks, topic choice, message decoding (no ROS needed).

Storage is checked before a row is computed, so a damaged recording is named, never read as
numbers:

* SQLite (``.db3``): the header's page count times the page size must be the file's size (a
  file cut short reads back as zeros past its end, silently, without this check), and
  ``PRAGMA quick_check`` must pass;
* MCAP: rosbags refuses a file without its end magic (cut short, or still being written);
* every connection must yield as many messages as ``metadata.yaml`` says it recorded.

A directory that is not a bag itself (no ``metadata.yaml``, no storage file) but holds bags is
read as those bags, in natural order (``run_2`` before ``run_10``): :func:`expand_bags`.
"""

from __future__ import annotations

import re
import sqlite3
import struct
from pathlib import Path

import numpy as np

from coriolis_ros.stream.odometry_wire import parse_little_endian

JOINT_STATE = "sensor_msgs/msg/JointState"
ODOMETRY = "nav_msgs/msg/Odometry"
STRING = "std_msgs/msg/String"
STORAGE_SUFFIXES = (".db3", ".mcap")


class BagError(Exception):
    """A bag that cannot be processed; the message names the file."""


def typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_KILTED)


# --------------------------------------------------------------------------- finding bags


def _natural_key(path: Path):
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def is_bag(path: Path) -> bool:
    """A rosbag2 directory (with metadata.yaml) or a storage file."""
    if path.is_dir():
        return (path / "metadata.yaml").is_file()
    return path.suffix in STORAGE_SUFFIXES


def expand_bags(paths) -> list[str]:
    """Each argument as given, except a directory that is not a bag but holds bags (rosbag2
    directories or storage files): those, in natural order. A directory holding neither
    stays as it is (reading it is then the error that names it)."""
    out = []
    for arg in paths:
        path = Path(arg)
        if path.is_dir() and not is_bag(path):
            inner = sorted((p for p in path.iterdir() if is_bag(p)), key=_natural_key)
            if inner:
                out.extend(str(p) for p in inner)
                continue
        out.append(str(arg))
    return out


# --------------------------------------------------------------------------- storage checks


def check_sqlite(file: Path) -> None:
    """BagError when ``file`` is shorter (or longer) than its header says, or fails
    SQLite's quick_check."""
    with open(file, "rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise BagError(f"{file}: not an SQLite database (no SQLite header)")
    (page_size,) = struct.unpack_from(">H", header, 16)
    page_size = 65536 if page_size == 1 else page_size
    (pages,) = struct.unpack_from(">I", header, 28)
    counter_matches = header[24:28] == header[92:96]  # the page count is valid then
    size = file.stat().st_size
    wal = file.with_name(file.name + "-wal")
    if counter_matches and not wal.exists() and size != pages * page_size:
        raise BagError(
            f"{file}: storage truncated or damaged: the SQLite header says {pages} pages of "
            f"{page_size} bytes ({pages * page_size} bytes), the file has {size} bytes"
        )
    try:
        con = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
        try:
            result = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise BagError(f"{file}: storage damaged: SQLite: {exc}") from None
    if result != [("ok",)]:
        problems = "; ".join(str(row[0]) for row in result[:3])
        raise BagError(f"{file}: storage damaged: SQLite quick_check: {problems}")


def check_storage(path: Path) -> None:
    """The SQLite checks on every storage file of the bag at ``path`` (a rosbag2 directory or
    a storage file); MCAP's are rosbags' own."""
    files = [path] if path.is_file() else sorted(path.glob("*.db3")) if path.is_dir() else []
    for file in files:
        if file.suffix == ".db3":
            check_sqlite(file)


def check_counts(path: Path, conns, counts: dict) -> None:
    """BagError when a connection yielded fewer messages than the metadata recorded."""
    for conn in conns:
        got = counts.get(conn.id, 0)
        if got < conn.msgcount:
            raise BagError(
                f"{path}: storage truncated or damaged: {conn.topic} has {got} of the "
                f"{conn.msgcount} messages metadata.yaml records"
            )


# --------------------------------------------------------------------------- topics


def open_reader(path: Path):
    try:
        from rosbags.rosbag2 import Reader
    except ImportError as exc:  # pragma: no cover - the extra is part of the test venv
        raise BagError(f"reading bags needs rosbags: pip install coriolis_ros[bag] ({exc})")
    if not path.exists():
        raise BagError(f"{path}: no such file or directory")
    reader = Reader(path)
    reader.open()
    return reader


def pick(reader, path: Path, msgtype: str, topic: str | None, default: str, option: str,
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


def pick_joint_states(reader, path: Path, topic: str | None) -> list:
    return pick(reader, path, JOINT_STATE, topic, "/joint_states", "--joint-states-topic")


def pick_odometry(reader, path: Path, topic: str | None, root_joint: str) -> list:
    why = (
        f"; a {root_joint} base takes its state from the recorded odometry"
        + ("" if topic else " (--odometry-topic names its topic)")
    )
    return pick(reader, path, ODOMETRY, topic, "/odom", "--odometry-topic", why)


def recorded_urdf(reader, store, path: Path, topic: str) -> tuple[str, list[str]]:
    conns = [c for c in reader.connections if c.topic == topic and c.msgtype == STRING]
    texts = []
    # (an empty connection list would mean "every message" to rosbags)
    for conn, _, raw in reader.messages(connections=conns) if conns else ():
        texts.append(store.deserialize_cdr(raw, conn.msgtype).data)
    if not texts:
        raise BagError(
            f"{path}: no robot description: the bag has no {STRING} on {topic}; "
            "pass the URDF with --urdf"
        )
    notes = []
    if any(t != texts[0] for t in texts[1:]):
        notes.append(f"{topic} changes during the bag: the first description is used")
    return texts[0], notes


# --------------------------------------------------------------------------- decoding


def decode_odometry(raw, store):
    """(stamp_ns, frame_id, child_frame_id, pose (7,), twist (6,)) of a recorded Odometry:
    little-endian CDR read directly (the node's parser), anything else by rosbags."""
    fields = parse_little_endian(bytes(raw))
    if fields is not None:
        return fields
    msg = store.deserialize_cdr(raw, ODOMETRY)
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
    pose = (p.x, p.y, p.z, o.x, o.y, o.z, o.w)
    twist = (lin.x, lin.y, lin.z, ang.x, ang.y, ang.z)
    return stamp, msg.header.frame_id, msg.child_frame_id, pose, twist


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

    def __init__(self, store):
        self.typestore = store
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
