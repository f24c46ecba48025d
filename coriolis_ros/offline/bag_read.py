"""One bag in, its rows out: :func:`read_recording` (storage checks, topics, the model, the
messages through :class:`~coriolis_ros.offline.bag_rows.RowStream`)."""

from __future__ import annotations

import os
from pathlib import Path

from coriolis_ros.dynamics import Dynamics, URDFError
from coriolis_ros.stream.base_state import BASE_SIZES, BaseStateBuffer

from .bag_rows import RowStream
from .bag_storage import (
    ODOMETRY,
    BagError,
    JointStateDecoder,
    check_counts,
    check_storage,
    decode_odometry,
    open_reader,
    pick_joint_states,
    pick_odometry,
    recorded_urdf,
    typestore,
)

MIMIC_MODES = ("follow", "independent")


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
    mimic: str = "follow",
    mimic_tolerance: float = 1e-3,
    observer: tuple | None = (50.0, 0.1),
    strict: bool = False,
    model_check=None,
    model_options: dict | None = None,
):
    """(Dynamics, Recording) of one bag (a rosbag2 directory, or a .db3 / .mcap file).

    ``urdf`` (XML text or a file path) overrides the recorded description.  ``root_joint``
    "floating" or "planar" attaches the root link to the world by such a joint, whose state
    comes from the bag's odometry (``odometry_topic``, default ``/odom`` or the only one),
    paired as the node pairs it (its ``base_state_timeout``).  ``mimic``, ``mimic_tolerance``:
    as the node's parameters.  ``observer``: (gain, max_gap) of the momentum observer (the
    node's ``observer_gain``, ``observer_max_gap``), None for none.  ``strict``: a bad message
    is an error instead of being counted and skipped.  ``model_check``: a function of the
    model, called before the messages are read, that raises :class:`BagError` for options
    the model cannot serve (e.g. an unknown task-space frame).

    Raises :class:`BagError` naming the file for an unreadable, truncated or damaged bag, a bag
    without joint states, without a description (and no ``urdf``) or, for a floating or planar
    base, without odometry, a URDF the library rejects, and a bag that yields no row (naming
    the joints it lacks).  ``model_options``: more keyword arguments of
    :meth:`~coriolis_ros.dynamics.Dynamics.from_urdf` (rotors, rotor_model,
    independent_joints), as the node's rotors_file and rotor_model give them.
    """
    if root_joint not in ("fixed", "floating", "planar"):
        raise ValueError(f"root_joint must be fixed, floating or planar, got {root_joint!r}")
    if mimic not in MIMIC_MODES:
        raise ValueError(f"mimic must be follow or independent, got {mimic!r}")
    path = Path(bag)
    options = dict(
        topic=joint_states_topic, description_topic=robot_description_topic, gravity=gravity,
        progress=progress, root_joint=root_joint, odometry_topic=odometry_topic,
        timeout=base_state_timeout, mimic=mimic, mimic_tolerance=mimic_tolerance,
        observer=observer, strict=strict, model_check=model_check,
        model_options=dict(model_options or {}),
    )  # fmt: skip
    try:
        return _read(path, urdf, **options)
    except BagError:
        raise
    except URDFError as exc:
        raise BagError(f"{path}: unusable URDF: {exc}") from None
    except Exception as exc:  # corrupt or truncated storage: rosbags, sqlite3, mcap
        raise BagError(f"{path}: cannot read the bag: {type(exc).__name__}: {exc}") from None


def _read(path, urdf, *, topic, description_topic, gravity, progress, root_joint,
          odometry_topic, timeout, mimic, mimic_tolerance, observer, strict,
          model_check, model_options):  # fmt: skip
    store = typestore()
    reader = open_reader(path)
    try:
        check_storage(path)
        notes: list[str] = []
        conns = pick_joint_states(reader, path, topic)
        if urdf is not None:
            text, source = urdf, "--urdf"
        else:
            text, notes = recorded_urdf(reader, store, path, description_topic)
            source = description_topic
        try:
            dyn = Dynamics.from_urdf(
                text, gravity=gravity, mimic=mimic, root_joint=root_joint, **model_options
            )
        except URDFError:
            raise
        except ValueError as exc:  # the model options: an unknown joint for a rotor, ...
            raise BagError(f"{path}: unusable model: {exc}") from None
        _check_single_dof(dyn)
        if model_check is not None:
            model_check(dyn)
        base, odom = None, []
        if root_joint != "fixed":
            odom = pick_odometry(reader, path, odometry_topic, root_joint)
            base = BaseStateBuffer(root_joint, dyn.root_link, timeout)
        stream = RowStream(dyn, base, observer, mimic_tolerance, strict, str(path))
        _feed(reader, store, [*conns, *odom], stream, progress)
        check_counts(path, [*conns, *odom], stream.counts)
    finally:
        reader.close()
    if not stream.rows["stamp"]:
        raise BagError(f"{path}: {stream.no_rows_reason()}")
    rec = stream.recording()
    rec.urdf, rec.urdf_source = text, source
    rec.notes[:0] = notes
    return dyn, rec


def _check_single_dof(dyn) -> None:
    nqb, nvb = BASE_SIZES[dyn.root_joint]
    if tuple(dyn.position_names[nqb:]) != tuple(dyn.joint_names[nvb:]):  # one coordinate each
        raise BagError(f"model {dyn.name}: joints with several coordinates are not supported")


def _feed(reader, store, conns, stream: RowStream, progress) -> None:
    """Every message of ``conns`` in recording order into ``stream``; undecodable ones are
    counted and skipped (fatal with strict)."""
    decode = JointStateDecoder(store)
    total = sum(c.msgcount for c in conns)
    counts: dict[int, int] = {}
    stream.counts = counts
    done = 0
    # (rosbags yields the messages of all connections in recording order)
    for conn, log_time, raw in reader.messages(connections=conns):
        done += 1
        counts[conn.id] = counts.get(conn.id, 0) + 1
        stream.messages = done
        if progress is not None and done % 1000 == 0:
            progress(done, total)
        kind = conn.msgtype.rsplit("/", 1)[-1]
        try:
            fields = decode_odometry(raw, store) if conn.msgtype == ODOMETRY else decode(raw)
        except Exception as exc:  # noqa: BLE001 - a bad message, counted (or fatal: strict)
            stream.skip(f"undecodable {kind} message ({type(exc).__name__})", bad=True)
            continue
        if conn.msgtype == ODOMETRY:
            stream.odometry(fields)
        else:
            stream.joint_state(*fields, log_time)
    if progress is not None:
        progress(done, total)
