"""Build a :class:`~coriolis_ros.dynamics.model.Model` from a URDF.

Fixed joints are merged into the body of their parent; links without
``<inertial>`` are massless.  revolute, continuous (the angle itself) and
prismatic joints become one degree of freedom each, floating joints six and
planar joints three, in depth-first order of the URDF's joints.  The root link is
welded to the world unless ``root_joint`` attaches it by a free-flyer
(``"floating"``) or a planar joint in the world's x-y plane (``"planar"``), named
``root_joint``; its coordinates then come first.  Everything else is rejected
with a :class:`URDFError` that names the problem.

Mimic joints (``<mimic joint= multiplier= offset=>``, defaults 1 and 0): with
``mimic="follow"`` (the default) each mimic joint's chain of leaders is resolved
to an independent joint, q_mimic = multiplier q_leader + offset, and recorded in
:attr:`Model.mimic`; the rows stay in the tree and
:class:`~coriolis_ros.dynamics.mimic.MimicDynamics` reduces every output to the
independent coordinates.  A cycle, an unknown leader, a fixed leader or a
floating/planar joint on either side is a :class:`URDFError`.  With
``mimic="independent"`` the tags are ignored and mimic joints are DoF of their own.

Locked joints (``locked_joints={name: position}``) are welded at the given
position before the tree is built, as Pinocchio's ``buildReducedModel`` does: the
joint becomes a fixed joint whose origin includes the displacement, so its child
is merged into its parent body.  In ``"follow"`` mode the mimic joints of a
locked leader are locked with it.

Names: ``joint_names`` has one entry per velocity DoF and ``position_names`` one
per configuration coordinate.  A single-DoF joint is named as in the URDF in
both; a multi-DoF joint ``J`` contributes ``J/linear_x``, ``J/linear_y``,
``J/linear_z``, ``J/angular_x``, ``J/angular_y``, ``J/angular_z`` (velocities,
child frame) and ``J/x``, ``J/y``, ``J/z``, ``J/qx``, ``J/qy``, ``J/qz``, ``J/qw``
(configuration) for a free flyer; ``J/linear_x``, ``J/linear_y``,
``J/angular_z`` and ``J/x``, ``J/y``, ``J/theta`` for a planar joint.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Mapping, Sequence

import numpy as np

from . import couplings as _couplings
from . import loops as _loops
from . import urdf_checks
from .armature import armature_model, check_rotor_model
from .budgets import DEFAULT_MAX_DOF, check_dof, check_limit
from .errors import URDFError
from .model import (
    FM_BODY,
    FM_R,
    FM_T,
    FM_WIDTH,
    FREE,
    MF_C,
    MF_I,
    MF_M,
    MF_PARENT,
    MF_Q,
    MF_R,
    MF_SUB,
    MF_T,
    MF_TYPE,
    MF_WIDTH,
    PLANAR,
    PRISMATIC,
    REVOLUTE,
    Model,
)
from .xacro_files import expand_xacro, is_xacro_path

SUPPORTED_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
ROOT_JOINTS = ("fixed", "floating", "planar")
ROOT_JOINT_NAME = "root_joint"
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
MIMIC_MODES = ("follow", "independent")
# A locked mimic joint must sit where its leader's lock puts it, to this tolerance.
LOCK_TOLERANCE = 1e-9

_KIND = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC,
         "floating": FREE, "planar": PLANAR}  # fmt: skip
# Per-row velocity and per-coordinate configuration name suffixes of the multi-DoF joints.
_V_SUFFIXES = {
    FREE: ("linear_x", "linear_y", "linear_z", "angular_x", "angular_y", "angular_z"),
    PLANAR: ("linear_x", "linear_y", "angular_z"),
}
_Q_SUFFIXES = {FREE: ("x", "y", "z", "qx", "qy", "qz", "qw"), PLANAR: ("x", "y", "theta")}


def model_from_urdf(
    urdf: str | os.PathLike,
    gravity: Sequence[float] = DEFAULT_GRAVITY,
    root_joint: str = "fixed",
    mimic: str = "follow",
    locked_joints: Mapping[str, float] | None = None,
    rotors: Mapping[str, Mapping] | None = None,
    max_dof: int = DEFAULT_MAX_DOF,
    rotor_model: str = "exact",
) -> Model:
    """Parse ``urdf`` (an XML string or a file path) into a :class:`Model`.

    ``root_joint``: ``"fixed"`` (the root link is welded to the world),
    ``"floating"`` (a free-flyer) or ``"planar"`` (world x-y plane).
    ``mimic``: ``"follow"`` (mimic joints follow their leader) or ``"independent"``.
    ``locked_joints``: joint name -> position (rad or m) of joints to weld.
    ``rotors``: joint name -> datasheet rotor (:mod:`.couplings`), added as coupled bodies.
    ``max_dof``: more velocity rows than this is a ``ValueError`` (:mod:`.budgets`).
    ``rotor_model``: ``"exact"`` or ``"armature"`` (:mod:`.armature`).
    """
    max_dof = check_limit(max_dof, "max_dof")
    check_rotor_model(rotor_model)
    if root_joint not in ROOT_JOINTS:
        raise ValueError(f"root_joint must be one of {', '.join(ROOT_JOINTS)}, got {root_joint!r}")
    if mimic not in MIMIC_MODES:
        raise ValueError(f"mimic must be one of {', '.join(MIMIC_MODES)}, got {mimic!r}")
    locked = _check_locked_argument(locked_joints)
    robot, couplings, independent, loops = _parse(_read(urdf), rotors)
    model = _build(
        robot, _check_gravity(gravity), root_joint, mimic == "follow", locked,
        couplings, independent, max_dof,
    )
    if rotor_model == "armature":
        model = armature_model(model)
    if not loops:
        return model
    flags = tuple(sorted((independent or {}).items()))
    return dataclasses.replace(model, loops=tuple(loops), independent_flags=flags)


# ----------------------------------------------------------------------------- parsing


def _read(urdf) -> str:
    if isinstance(urdf, bytes):
        urdf = urdf.decode("utf-8", errors="replace")
    if isinstance(urdf, str):
        # robot_state_publisher serves a description with a byte-order mark or blank lines
        # before the XML declaration; the XML parser does not take them.
        text = urdf.lstrip("\ufeff \t\r\n")
        if text.startswith("<"):
            return text
    if isinstance(urdf, (str, os.PathLike)):
        path = os.fspath(urdf)
        if not path.strip():
            raise URDFError("empty robot description")
        if is_xacro_path(path):
            return expand_xacro(path).lstrip()
        try:
            with open(path, encoding="utf-8-sig") as f:
                return f.read().lstrip()
        except OSError as exc:
            raise URDFError(f"not a URDF XML string, and cannot read it as a file: {exc}") from None
    raise URDFError(f"expected a URDF XML string or a file path, got {type(urdf).__name__}")


@contextlib.contextmanager
def _quiet_parser(messages: list[str]):
    """urdf_parser_py prints unknown tags to stderr; collect them instead."""
    from urdf_parser_py.xml_reflection import core

    saved = core.on_error
    core.on_error = messages.append
    try:
        yield
    finally:
        core.on_error = saved


def _parse(xml: str, rotors: Mapping | None = None):
    """(urdf_parser_py robot, couplings, joints' ``independent`` flags) of a URDF string;
    ``rotors`` (datasheet entries) are added to the tree first."""
    import xml.etree.ElementTree as ET

    from urdf_parser_py.urdf import URDF

    # xacro's own output often keeps xmlns:xacro: alone it is only a hint for other errors.
    hint = urdf_checks.XACRO_DECLARED_HINT if urdf_checks.declares_xacro(xml) else ""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        urdf_checks.reject_xacro(None, xml)
        raise URDFError(f"malformed XML: {exc}{hint}") from None
    _drop_default_namespace(root)
    urdf_checks.reject_xacro(root)
    if root.tag != "robot":
        raise URDFError(f"/{root.tag}: the root element is <{root.tag}>, expected <robot>{hint}")
    _check_duplicates(root)
    urdf_checks.check_numbers(root)
    couplings = _couplings.read_couplings(root) + _couplings.add_rotors(root, rotors)
    if rotors:
        urdf_checks.check_numbers(root)  # the rotors' links: masses and inertias bounded too
    independent = _couplings.independent_flags(root)
    loops = _loops.read_loops(root)
    messages: list[str] = []
    try:
        with _quiet_parser(messages):
            robot = URDF.from_xml_string(ET.tostring(_dynamics_only(root), encoding="unicode"))
    except Exception as exc:  # urdf_parser_py raises bare Exceptions and AssertionErrors
        raise URDFError(urdf_checks.parser_error_message(exc) + hint) from None
    if not robot.links:
        raise URDFError(f"/robot: the URDF has no <link>{hint}")
    return robot, couplings, independent, loops


def _drop_default_namespace(root) -> None:
    """<robot xmlns="..."> puts every URDF element in a namespace; urdfdom ignores it, so do we."""
    if not root.tag.startswith("{"):
        return
    prefix = root.tag[: root.tag.index("}") + 1]
    for elem in root.iter():
        if isinstance(elem.tag, str) and elem.tag.startswith(prefix):
            elem.tag = elem.tag[len(prefix) :]


def _dynamics_only(root):
    """A copy of the <robot> tree with only what dynamics reads.

    Visuals, collisions, materials, transmissions and plugins neither change the
    dynamics nor should their quirks (a texture without a file name, say) stop
    a controller from getting its Coriolis matrix.
    """
    import xml.etree.ElementTree as ET

    keep = {"link": ("inertial",), "joint": ("origin", "axis", "parent", "child", "limit", "mimic")}
    robot = ET.Element("robot", name=root.get("name") or "robot")
    for elem in root:
        if elem.tag in keep:
            copy = ET.SubElement(robot, elem.tag, dict(elem.attrib))
            copy.extend(child for child in elem if child.tag in keep[elem.tag])
    return robot


def _check_duplicates(root) -> None:
    for tag in ("link", "joint"):
        seen = set()
        for index, elem in enumerate(root.findall(tag), start=1):
            name = elem.get("name")
            if name is None:
                raise URDFError(f"/robot/{tag}[{index}]: a <{tag}> has no name attribute")
            if name in seen:
                path = urdf_checks.element_path("robot", f"{tag}[@name='{name}']")
                raise URDFError(f"{path}: duplicate {tag} name '{name}'")
            seen.add(name)


# |gravity| bound per component, m/s^2 (the Sun's surface has 274; a centrifuge ~1e5).
MAX_GRAVITY = 1e6


def _check_gravity(gravity) -> np.ndarray:
    try:
        g = np.array(gravity, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise URDFError(f"gravity must be 3 finite numbers, got {gravity!r}") from None
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise URDFError(f"gravity must be 3 finite numbers, got {gravity!r}")
    if not np.all(np.abs(g) <= MAX_GRAVITY):
        raise URDFError(
            f"gravity must be within ±{MAX_GRAVITY:g} m/s^2 per component, got {gravity!r}"
        )
    return g


# ----------------------------------------------------------------------------- geometry


def rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def align_z(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``axis``."""
    if axis[2] > 1.0 - 1e-15:
        return np.eye(3)
    if axis[2] < -1.0 + 1e-15:
        return np.diag([1.0, -1.0, -1.0])
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - helper.dot(axis) * axis
    x /= np.linalg.norm(x)
    y = np.cross(axis, x)
    return np.column_stack([x, y, axis])


def _pose(origin, what: str) -> tuple[np.ndarray, np.ndarray]:
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = np.array(origin.xyz if origin.xyz is not None else (0, 0, 0), dtype=float)
    rpy = np.array(origin.rpy if origin.rpy is not None else (0, 0, 0), dtype=float)
    if xyz.shape != (3,) or rpy.shape != (3,) or not np.all(np.isfinite(np.r_[xyz, rpy])):
        raise URDFError(f"{what}/origin: non-finite or malformed <origin> (xyz={xyz}, rpy={rpy})")
    return rpy_matrix(rpy), xyz


def _compose(a: tuple, b: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Pose composition a * b of (rotation, translation) pairs."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]


# ----------------------------------------------------------------------------- inertia


def _link_inertia(link) -> tuple[float, np.ndarray, np.ndarray] | None:
    """(mass, centre of mass, inertia about the CoM) in the link frame, or None if massless."""
    inertial = link.inertial
    if inertial is None:
        return None
    what = urdf_checks.link_path(link.name, "inertial")
    mass = inertial.mass
    if mass is None:
        raise URDFError(f"{what}: <inertial> has no <mass>")
    mass = float(mass)
    if not math.isfinite(mass):
        raise URDFError(f"{what}/mass: mass is not finite ({mass})")
    if mass < 0.0:
        raise URDFError(f"{what}/mass: negative mass {mass}")
    tensor = inertial.inertia
    inertia = np.zeros((3, 3)) if tensor is None else np.array(tensor.to_matrix(), dtype=float)
    if not np.all(np.isfinite(inertia)):
        raise URDFError(f"{what}/inertia: inertia is not finite")
    rot, com = _pose(inertial.origin, what)
    if mass == 0.0 and not np.any(inertia):
        return None
    # Real URDFs carry point masses and round-off in their tensors: accept positive
    # semi-definite ones, reject a principal moment that is negative beyond round-off.
    eig = np.linalg.eigvalsh(inertia)
    if eig[0] < -(1e-6 * abs(eig[2]) + 1e-7):
        raise URDFError(
            f"{what}/inertia: inertia is not positive definite (principal moments "
            f"{np.array2string(eig, precision=6)})"
        )
    urdf_checks.warn_if_not_rigid_body(urdf_checks.link_path(link.name), eig)
    return mass, com, rot @ inertia @ rot.T


class _BodyInertia:
    """Accumulates link inertias expressed in one body frame."""

    def __init__(self):
        self.mass = 0.0
        self.first = np.zeros(3)  # sum m c
        self.second = np.zeros((3, 3))  # inertia about the body origin

    def add(self, mass: float, com: np.ndarray, inertia_com: np.ndarray) -> None:
        self.mass += mass
        self.first += mass * com
        self.second += inertia_com + mass * (com.dot(com) * np.eye(3) - np.outer(com, com))

    def about_com(self) -> tuple[float, np.ndarray, np.ndarray]:
        if self.mass == 0.0:  # rotational inertia without mass, as some URDFs give
            return 0.0, np.zeros(3), 0.5 * (self.second + self.second.T)
        c = self.first / self.mass
        inertia = self.second - self.mass * (c.dot(c) * np.eye(3) - np.outer(c, c))
        return self.mass, c, 0.5 * (inertia + inertia.T)


# ----------------------------------------------------------------------------- tree


class _Rows:
    """The model's rows as they are laid out: one per velocity DoF."""

    def __init__(self):
        self.names, self.types, self.body_links, self.parents = [], [], [], []
        self.kinds, self.trees, self.q_index, self.sub = [], [], [], []
        self.position_names: list[str] = []

    def add_joint(self, name: str, urdf_type: str, child: str, parent_row: int, tree) -> int:
        """Append the rows of one joint; returns the row that carries the child body."""
        kind = _KIND[urdf_type]
        first_q = len(self.position_names)
        if kind in _V_SUFFIXES:
            v_names = [f"{name}/{suffix}" for suffix in _V_SUFFIXES[kind]]
            self.position_names.extend(f"{name}/{suffix}" for suffix in _Q_SUFFIXES[kind])
        else:
            v_names = [name]
            self.position_names.append(name)
        for sub, v_name in enumerate(v_names):
            self.parents.append(parent_row if sub == 0 else len(self.names) - 1)
            self.names.append(v_name)
            self.types.append(urdf_type)
            self.body_links.append(child)
            self.kinds.append(kind)
            self.trees.append(tree)
            self.q_index.append(first_q)
            self.sub.append(sub)
        return len(self.names) - 1


def _joint_axis(joint) -> np.ndarray:
    axis = np.array(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    norm = float(np.linalg.norm(axis)) if np.all(np.isfinite(axis)) else float("nan")
    if axis.shape != (3,) or not math.isfinite(norm) or norm < 1e-12:
        raise URDFError(f"{urdf_checks.joint_path(joint.name, 'axis')}: invalid axis {axis}")
    return axis / norm


def _check_locked_argument(locked_joints) -> dict[str, float]:
    """{name: finite position}; ValueError naming the joint otherwise."""
    if locked_joints is None:
        return {}
    if not isinstance(locked_joints, Mapping):
        raise ValueError(
            "locked_joints must be a mapping of joint name to position, "
            f"got {type(locked_joints).__name__}"
        )
    out = {}
    for name, value in locked_joints.items():
        if not isinstance(name, str):
            raise ValueError(f"locked_joints: joint names must be strings, got {name!r}")
        try:
            position = float(value)
        except (TypeError, ValueError):
            raise ValueError(
                f"locked_joints: the position of joint '{name}' must be a number, got {value!r}"
            ) from None
        if not math.isfinite(position):
            raise ValueError(f"locked_joints: the position of joint '{name}' is not finite")
        if abs(position) > urdf_checks.MAX_LENGTH:
            raise ValueError(
                f"locked_joints: the position of joint '{name}' is beyond the bound "
                f"±{urdf_checks.MAX_LENGTH:g} (rad or m), got {position!r}"
            )
        out[name] = position
    return out


def _mimic_tag(joint) -> tuple[str, float, float]:
    """(leader, multiplier, offset) of a <mimic> tag, defaults 1 and 0."""
    tag = joint.mimic
    multiplier = 1.0 if tag.multiplier is None else float(tag.multiplier)
    offset = 0.0 if tag.offset is None else float(tag.offset)
    if not (math.isfinite(multiplier) and math.isfinite(offset)):
        raise URDFError(
            f"joint '{joint.name}' has a <mimic> with a non-finite multiplier or offset"
        )
    return tag.joint, multiplier, offset


def _resolve_mimics(joints: dict) -> dict[str, tuple[str, float, float]]:
    """Mimic joint -> (independent leader, multiplier, offset), chains resolved.

    A <mimic> on a fixed joint is ignored (nothing moves: Talos' URDFs carry such
    tags); a leader that is unknown, fixed, floating or planar, a floating or
    planar mimic joint and a cycle are URDFErrors naming the joints.
    """
    direct = {}
    for joint in joints.values():
        if joint.mimic is None or joint.type == "fixed":
            continue
        leader, multiplier, offset = _mimic_tag(joint)
        if joint.type in ("floating", "planar"):
            raise URDFError(
                f"joint '{joint.name}' is {joint.type} and has a <mimic>: only revolute, "
                "continuous and prismatic joints can mimic"
            )
        if leader not in joints:
            raise URDFError(f"joint '{joint.name}' mimics unknown joint '{leader}'")
        kind = joints[leader].type
        if kind == "fixed":
            raise URDFError(f"joint '{joint.name}' mimics fixed joint '{leader}'")
        if kind in ("floating", "planar"):
            raise URDFError(
                f"joint '{joint.name}' mimics {kind} joint '{leader}': only revolute, "
                "continuous and prismatic joints can be mimicked"
            )
        direct[joint.name] = (leader, multiplier, offset)
    resolved = {}
    for name in direct:
        path = [name]
        leader, multiplier, offset = direct[name]
        while leader in direct:  # q_a = m1 (m2 q_c + o2) + o1
            if leader in path:
                cycle = " -> ".join(f"'{p}'" for p in [*path[path.index(leader) :], leader])
                raise URDFError(f"mimic joints form a cycle: {cycle}")
            path.append(leader)
            nxt, m2, o2 = direct[leader]
            multiplier, offset = multiplier * m2, multiplier * o2 + offset
            leader = nxt
        resolved[name] = (leader, multiplier, offset)
    return resolved


def _followers(
    mimics: dict[str, tuple[str, float, float]], coupled: dict[str, tuple[str, float]]
) -> dict[str, tuple[str, float, float]]:
    """Every joint that follows another (mimic joints and coupled joints) -> (independent
    leader, multiplier, offset), through each other's chains; URDFError for a joint that is
    both, or a leader that is a follower of the other kind in a cycle."""
    both = sorted(set(mimics) & set(coupled))
    if both:
        raise URDFError(f"joint '{both[0]}' has a <mimic> and is coupled by a <coupling>")
    direct = dict(mimics)
    direct.update({name: (leader, ratio, 0.0) for name, (leader, ratio) in coupled.items()})
    out = {}
    for name, (leader, multiplier, offset) in direct.items():
        seen = {name}
        while leader in direct:  # q = m1 (m2 q_c + o2) + o1
            if leader in seen:
                raise URDFError(f"mimic joints and couplings form a cycle through '{leader}'")
            seen.add(leader)
            nxt, m2, o2 = direct[leader]
            multiplier, offset, leader = multiplier * m2, multiplier * o2 + offset, nxt
        _check_resolved(name, leader, multiplier, offset)
        out[name] = (leader, multiplier, offset)
    return out


def _check_resolved(name: str, leader: str, multiplier: float, offset: float) -> None:
    """A joint that follows another through a chain moves within the bounds of one tag."""
    bound = urdf_checks.MAX_MULTIPLIER
    if not abs(multiplier) <= bound or not abs(offset) <= urdf_checks.MAX_LENGTH:
        raise URDFError(
            f"{urdf_checks.joint_path(name)}: follows '{leader}' through a chain of mimic "
            f"joints or couplings with multiplier {multiplier!r} and offset {offset!r}: beyond "
            f"the bounds ±{bound:g} and ±{urdf_checks.MAX_LENGTH:g} of a single one"
        )


def _resolve_locks(
    joints: dict, locked: dict[str, float], mimics: dict[str, tuple[str, float, float]]
) -> dict[str, float]:
    """Every joint to weld, with its position: the requested ones plus their mimic joints."""
    for name, position in locked.items():
        if name not in joints:
            raise ValueError(f"locked_joints: unknown joint '{name}'")
        kind = joints[name].type
        if kind == "fixed":
            raise ValueError(f"locked_joints: joint '{name}' is fixed already")
        if kind in ("floating", "planar"):
            raise ValueError(
                f"locked_joints: joint '{name}' is {kind}; locking multi-DoF joints is not "
                "supported (use root_joint='fixed' to weld the root, or lock single-DoF joints)"
            )
    out = dict(locked)
    for name, (leader, multiplier, offset) in mimics.items():
        if leader in locked:
            position = multiplier * locked[leader] + offset
            if name in locked and abs(locked[name] - position) > LOCK_TOLERANCE * max(
                1.0, abs(position)
            ):
                raise ValueError(
                    f"locked_joints: joint '{name}' mimics '{leader}' and must be locked at "
                    f"{position!r} (multiplier x {locked[leader]!r} + offset), not {locked[name]!r}"
                )
            out[name] = position
        elif name in locked:
            raise ValueError(
                f"locked_joints: joint '{name}' follows '{leader}', which is not locked; lock "
                f"'{leader}' (the joints that follow it are locked with it)"
                + (" or use mimic='independent'" if joints[name].mimic is not None else "")
            )
    return out


def _locked_pose(joint, position: float) -> tuple[np.ndarray, np.ndarray]:
    """The fixed pose parent -> child of a joint welded at ``position``."""
    origin = _pose(joint.origin, f"joint '{joint.name}'")
    axis = _joint_axis(joint)
    if joint.type == "prismatic":
        return _compose(origin, (np.eye(3), axis * position))
    return _compose(origin, (_axis_rotation(axis, position), np.zeros(3)))


def _axis_rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues: rotation by ``angle`` about the unit vector ``axis``."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _build(
    robot,
    gravity: np.ndarray,
    root_joint: str = "fixed",
    follow_mimic: bool = False,
    locked: dict[str, float] | None = None,
    couplings: Sequence[_couplings.Coupling] = (),
    independent: Mapping[str, bool] | None = None,
    max_dof: int = DEFAULT_MAX_DOF,
) -> Model:
    links = {link.name: link for link in robot.links}
    children: dict[str, list] = {}
    parent_joint: dict[str, str] = {}
    for joint in robot.joints:
        what = urdf_checks.joint_path(joint.name)
        if joint.type not in SUPPORTED_TYPES:
            raise URDFError(
                f"{what} has type '{joint.type}', which is not supported "
                f"(supported: {', '.join(SUPPORTED_TYPES)})"
            )
        if joint.parent not in links:
            raise URDFError(f"{what}/parent: refers to unknown parent link '{joint.parent}'")
        if joint.child not in links:
            raise URDFError(f"{what}/child: refers to unknown child link '{joint.child}'")
        if joint.child in parent_joint:
            raise URDFError(
                f"{what}/child: link '{joint.child}' is the child of several joints: "
                f"'{parent_joint[joint.child]}' and '{joint.name}'"
            )
        parent_joint[joint.child] = joint.name
        children.setdefault(joint.parent, []).append(joint)

    by_name = {joint.name: joint for joint in robot.joints}
    mimics = _resolve_mimics(by_name) if follow_mimic else {}
    coupled = _followers(
        mimics,
        _couplings.resolve_couplings(list(couplings), by_name, parent_joint, independent or {}),
    )
    mimics = {name: tag for name, tag in coupled.items() if name in mimics}
    if root_joint != "fixed" and ROOT_JOINT_NAME in (locked or {}):
        raise ValueError(
            f"locked_joints: joint '{ROOT_JOINT_NAME}' is {root_joint}; locking multi-DoF "
            "joints is not supported (use root_joint='fixed' to weld the root)"
        )
    welded = _resolve_locks(by_name, locked or {}, coupled)
    mimics = {name: tag for name, tag in mimics.items() if name not in welded}
    coupled = {name: tag for name, tag in coupled.items() if name not in welded}

    roots = [name for name in links if name not in parent_joint]
    if len(roots) > 1:
        raise URDFError(
            f"/robot: the URDF has several root links: {', '.join(repr(r) for r in roots)}"
        )
    if not roots:
        raise URDFError("/robot: the URDF has no root link: its joints form a cycle")
    root = roots[0]

    identity = (np.eye(3), np.zeros(3))
    rows = _Rows()
    owner = {root: -1}  # link -> row carrying its body (-1: the world)
    in_body = {root: identity}  # link -> pose of the link frame in its body frame
    frame_order = [root]  # the links as frames: root first, then depth-first like the rows
    if root_joint != "fixed":
        for joint in children.get(root, []):
            if joint.type in ("floating", "planar"):
                raise URDFError(
                    f"joint '{joint.name}' already makes the root link '{root}' {joint.type}: "
                    f"root_joint='{root_joint}' would add a second one (use root_joint='fixed')"
                )
        if ROOT_JOINT_NAME in parent_joint.values():
            raise URDFError(
                f"the URDF has a joint named '{ROOT_JOINT_NAME}', the name of the "
                f"root_joint='{root_joint}' joint; rename it"
            )
        # a planar root moves in the world's x-y plane: its axis is z, no alignment needed
        owner[root] = rows.add_joint(ROOT_JOINT_NAME, root_joint, root, -1, identity)
    stack = list(reversed(children.get(root, [])))
    while stack:  # depth-first pre-order over joints; siblings in document order
        joint = stack.pop()
        stack.extend(reversed(children.get(joint.child, [])))
        link_name = joint.parent
        frame_order.append(joint.child)
        if joint.name in welded:
            owner[joint.child] = owner[link_name]
            in_body[joint.child] = _compose(
                in_body[link_name], _locked_pose(joint, welded[joint.name])
            )
            continue
        origin = _pose(joint.origin, urdf_checks.joint_path(joint.name))
        joint_pose = _compose(in_body[link_name], origin)
        if joint.type == "fixed":
            owner[joint.child] = owner[link_name]
            in_body[joint.child] = joint_pose
            continue
        # a free flyer's frame is the joint frame itself (its velocities are expressed
        # there); the other joints' frames are turned so that their axis is z
        align = np.eye(3) if joint.type == "floating" else align_z(_joint_axis(joint))
        tree = _compose(joint_pose, (align, np.zeros(3)))
        owner[joint.child] = rows.add_joint(
            joint.name, joint.type, joint.child, owner[link_name], tree
        )
        in_body[joint.child] = (align.T, np.zeros(3))

    unreachable = sorted(set(links) - set(owner))
    if unreachable:
        raise URDFError(
            f"/robot: links not connected to the root '{root}' (a cycle?): {', '.join(unreachable)}"
        )

    n = len(rows.names)
    if n == 0:
        raise URDFError(
            "/robot: the robot has no revolute, continuous, prismatic, planar or floating joint: "
            "no dynamics to compute"
        )
    check_dof(n, max_dof)
    bodies = [_BodyInertia() for _ in range(n)]
    for link_name, link in links.items():
        props = _link_inertia(link)
        body = owner[link_name]
        if props is None or body < 0:
            continue  # massless, or fixed to the base
        mass, com, inertia = props
        rot, trans = in_body[link_name]
        bodies[body].add(mass, rot @ com + trans, rot @ inertia @ rot.T)

    mf = np.zeros((n, MF_WIDTH))
    for i, ((rot, trans), body) in enumerate(zip(rows.trees, bodies, strict=True)):
        mass, com, inertia = body.about_com()
        mf[i, MF_R : MF_R + 9] = rot.reshape(-1)
        mf[i, MF_T : MF_T + 3] = trans
        mf[i, MF_M] = mass
        mf[i, MF_C : MF_C + 3] = com
        mf[i, MF_I : MF_I + 9] = inertia.reshape(-1)
        mf[i, MF_PARENT] = rows.parents[i]
        mf[i, MF_TYPE] = rows.kinds[i]
        mf[i, MF_Q] = rows.q_index[i]
        mf[i, MF_SUB] = rows.sub[i]
    fm = np.zeros((len(frame_order), FM_WIDTH))
    for f, link_name in enumerate(frame_order):
        rot, trans = in_body[link_name]
        fm[f, FM_BODY] = owner[link_name]
        fm[f, FM_R : FM_R + 9] = rot.reshape(-1)
        fm[f, FM_T : FM_T + 3] = trans
    return Model(
        name=robot.name or "robot",
        joint_names=tuple(rows.names),
        joint_types=tuple(rows.types),
        body_links=tuple(rows.body_links),
        root_link=root,
        mf=mf,
        gravity=gravity,
        position_names=tuple(rows.position_names),
        root_joint=root_joint,
        mimic=tuple((name, *mimics[name]) for name in rows.names if name in mimics),
        couplings=tuple(
            (name, *coupled[name]) for name in rows.names if name in coupled and name not in mimics
        ),
        locked_joints=tuple(sorted(welded.items())),
        frame_names=tuple(frame_order),
        fm=fm,
    )
