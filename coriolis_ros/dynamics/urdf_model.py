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
from .urdf_followers import (
    check_locked_argument,
    followers,
    lock_sums,
    resolve_locks,
    resolve_mimics,
    sum_followers,
)
from .urdf_geometry import align_z, compose, joint_axis, locked_pose, pose
from .xacro_files import expand_xacro, is_xacro_path

SUPPORTED_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
ROOT_JOINTS = ("fixed", "floating", "planar")
ROOT_JOINT_NAME = "root_joint"
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
MIMIC_MODES = ("follow", "independent")

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
    locked = check_locked_argument(locked_joints)
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
        raise URDFError(f"gravity must be 3 finite numbers, got {g.tolist()!r}")
    if not np.all(np.abs(g) <= MAX_GRAVITY):
        raise URDFError(
            f"gravity must be within ±{MAX_GRAVITY:g} m/s^2 per component, got {g.tolist()!r}"
        )
    return g


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
    rot, com = pose(inertial.origin, what)
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
    mimics = resolve_mimics(by_name) if follow_mimic else {}
    one, several = _couplings.resolve_couplings(
        list(couplings), by_name, parent_joint, independent or {}
    )
    coupled = followers(mimics, one)
    sums = sum_followers(several, coupled, mimics)
    mimics = {name: tag for name, tag in coupled.items() if name in mimics}
    if root_joint != "fixed" and ROOT_JOINT_NAME in (locked or {}):
        raise ValueError(
            f"locked_joints: joint '{ROOT_JOINT_NAME}' is {root_joint}; locking multi-DoF "
            "joints is not supported (use root_joint='fixed' to weld the root)"
        )
    welded = resolve_locks(by_name, locked or {}, coupled)
    sums, one_left, all_locked = lock_sums(sums, welded)
    welded.update(all_locked)
    coupled.update(one_left)
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
            in_body[joint.child] = compose(
                in_body[link_name], locked_pose(joint, welded[joint.name])
            )
            continue
        origin = pose(joint.origin, urdf_checks.joint_path(joint.name))
        joint_pose = compose(in_body[link_name], origin)
        if joint.type == "fixed":
            owner[joint.child] = owner[link_name]
            in_body[joint.child] = joint_pose
            continue
        # a free flyer's frame is the joint frame itself (its velocities are expressed
        # there); the other joints' frames are turned so that their axis is z
        align = np.eye(3) if joint.type == "floating" else align_z(joint_axis(joint))
        tree = compose(joint_pose, (align, np.zeros(3)))
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
        sums=tuple((name, *sums[name]) for name in rows.names if name in sums),
        locked_joints=tuple(sorted(welded.items())),
        frame_names=tuple(frame_order),
        fm=fm,
    )
