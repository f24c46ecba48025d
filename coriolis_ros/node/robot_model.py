"""One robot model and everything a tick needs, and how a description becomes one (ROS-free).

:class:`RobotModel` is swapped into the node as a whole: the Dynamics of the tick and the
services' own copy, the JointState buffer, the base state, the mimic check, the observer and
the result storage (:class:`~coriolis_ros.node.tick.TickOutputs`). The outgoing message is
the node's (``output``, see :mod:`coriolis_ros.node.output_message`): this module imports no
ROS.
"""

from __future__ import annotations

import threading

from coriolis_ros.dynamics.errors import URDFError
from coriolis_ros.dynamics.xacro_files import expand_xacro, is_xacro_path
from coriolis_ros.stream.base_state import BASE_SIZES, BaseStateBuffer
from coriolis_ros.stream.joint_state_buffer import JointStateBuffer, name_list
from coriolis_ros.stream.loop_check import LoopCheck
from coriolis_ros.stream.mimic_check import MimicCheck, continuous_joints

from .tick import TickOutputs

NOT_XML = (
    "not URDF XML (a robot description is XML text; a file is read only from the "
    "robot_description_file parameter)"
)


class ModelError(ValueError):
    """A robot description that cannot be used; the message says why."""


def description_problem(text: str) -> str | None:
    """None for text that may be URDF XML, else why it is refused (empty, or not XML: the
    description is data, never read as a path)."""
    if not text.strip():
        return "empty robot description"
    if not text.lstrip("\ufeff \t\r\n").startswith("<"):
        return NOT_XML
    return None


def read_description_file(path: str) -> str:
    """The text of a URDF file, or of a ``.xacro`` file expanded by xacro (ModelError naming
    the file when it cannot be read, expanded, or is not XML)."""
    if is_xacro_path(path):
        try:
            text = expand_xacro(path)
        except URDFError as exc:
            raise ModelError(str(exc)) from None
    else:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f"cannot read {path}: {exc}") from None
    problem = description_problem(text)
    if problem is not None:
        raise ModelError(f"{path}: {problem}")
    return text


def load_dynamics(urdf: str, params: dict, gravity):
    """The Dynamics of `urdf` with the node's model parameters (root_joint, mimic,
    locked_joints/locked_positions, rotors_file, rotor_model, velocity_representation);
    ModelError saying why it cannot be used."""
    from coriolis_ros.dynamics import Dynamics, URDFError
    from coriolis_ros.dynamics.couplings import load_rotors

    problem = description_problem(urdf)
    if problem is not None:
        raise ModelError(problem)
    root_joint = params["root_joint"]
    try:
        locked = dict(zip(params["locked_joints"], params["locked_positions"], strict=True))
        rotors_file = params["rotors_file"]
        dyn = Dynamics.from_urdf(
            urdf,
            gravity=gravity,
            root_joint=root_joint,
            mimic=params["mimic"],
            locked_joints=locked or None,
            rotors=load_rotors(rotors_file) if rotors_file else None,
            rotor_model=params.get("rotor_model", "exact"),
            velocity_representation=params.get("velocity_representation", "body"),
        )
    except (URDFError, ValueError, OSError) as exc:  # ValueError: a locked joint it lacks
        raise ModelError(str(exc) or type(exc).__name__) from None
    skip = BASE_SIZES[root_joint][1]  # the rows of the node's own root joint
    types = zip(dyn.joint_names[skip:], dyn.model.joint_types[skip:], strict=True)
    multi_dof = sorted({n.rsplit("/", 1)[0] for n, t in types if t in ("floating", "planar")})
    if multi_dof:
        raise ModelError(
            f"joint(s) {', '.join(repr(n) for n in multi_dof)} are floating or planar: the "
            "node reads single-DoF joints from joint_states, and a floating or planar base "
            "only through the root_joint parameter (with odometry)"
        )
    return dyn


class RobotModel:
    """One robot model with everything a tick needs (see the module docstring)."""

    def __init__(self, dyn, service_dyn, urdf: str, base_state_timeout: float,
                 mimic_tolerance: float):  # fmt: skip
        self.dyn = dyn
        self.service_dyn = service_dyn  # separate instance: services never touch dyn
        self.service_lock = threading.Lock()
        self.urdf = urdf
        self.name = dyn.name
        self.joint_names = tuple(dyn.joint_names)
        self.n = dyn.nv
        self.tree_depth = dyn.tree_depth
        # A floating or planar root leads q and v: its state comes from odometry (`base`),
        # the joints' from joint_states (`buffer`), each written into its part of q and qd.
        self.root_joint = dyn.root_joint
        self.nqb, self.nvb = nqb, nvb = BASE_SIZES[self.root_joint]
        self.position_names = tuple(dyn.position_names) if nvb else ()
        self.measured_names = self.joint_names[nvb:]  # the joints read from joint_states
        # Joints that follow their leader (mimic joints, geared rotors): tracked in
        # joint_states, checked, never used.
        self.mimic = dyn.coupled_joints if dyn.closed is None else {}
        # A closed chain's dependent joints (its followers too): tracked likewise, checked
        # against the closure.
        self.dependent = dyn.dependent_joints
        extra = tuple(self.mimic) + self.dependent
        self.buffer = JointStateBuffer(self.measured_names, extra_names=extra)
        self.mimic_check = (
            MimicCheck(self.buffer, self.mimic, mimic_tolerance, continuous_joints(dyn))
            if self.mimic
            else None
        )
        self.loop_check = (
            LoopCheck(self.buffer, self.dependent, mimic_tolerance, continuous_joints(dyn),
                      dyn.closed.follower_joints)
            if self.dependent
            else None
        )
        self.base = (
            BaseStateBuffer(self.root_joint, dyn.root_link, base_state_timeout) if nvb else None
        )
        self.warning = ""  # what is wrong with the model itself (a singular M), for diagnostics
        self.out = TickOutputs(self.n, dyn.nq)
        self.q_joints, self.qd_joints = self.out.q[nqb:], self.out.qd[nvb:]
        self.effort_joints = self.out.view["effort"][nvb:]  # a floating base's stay zero
        self.feed = None  # the momentum observer (ObserverFeed) when observer_enabled
        self.contact = None  # collision flag and contact wrenches (node.contact) when set
        self.output = None  # the outgoing message (the node's OutputMessage)

    def summary(self, odom_topic: str) -> str:
        """How the model is attached and which joints follow (the "ready" line's tail)."""
        if self.base is None:
            text = f"root link '{self.dyn.root_link}' fixed to the world"
        else:
            text = (
                f"root link '{self.dyn.root_link}' on a {self.root_joint} joint "
                f"(base state from {odom_topic}, nav_msgs/Odometry)"
            )
        if self.mimic:
            text += (
                f"; {len(self.mimic)} mimic or coupled joint(s) follow their leader (left out of "
                f"joint_names; checked in joint_states, never used): {name_list(self.mimic)}"
            )
        if self.dependent:
            loops = ", ".join(loop.name for loop in self.dyn.loops)
            source = f"closed loop(s) {loops}" if loops else "couplings to sums of joints"
            text += (
                f"; {source}: {len(self.dependent)} joint(s) follow from the "
                f"closure (left out of joint_names; checked in joint_states, never used): "
                f"{name_list(self.dependent)}"
            )
        return text
