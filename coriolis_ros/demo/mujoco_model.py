"""A fixed-base URDF robot in MuJoCo, for the closed-loop demo and as an independent oracle.

MuJoCo (the ``mujoco`` package, a test and demo dependency only, never imported by the library)
compiles URDF itself; :func:`mjcf_ready_urdf` prepares the text so that the compiled model has
exactly the URDF's rigid-body dynamics and nothing else:

* ``<visual>`` and ``<collision>`` elements are removed: the URDF's ``<inertial>`` elements
  define the masses (``inertiafromgeom`` would otherwise fill in links without one from their
  geometry), and meshes referenced by ``package://`` paths cannot be resolved here anyway;
* a ``<mujoco><compiler .../></mujoco>`` element (MuJoCo's URDF extension) sets
  ``balanceinertia="false"`` (an inertia is never altered), ``fusestatic="true"`` (bodies on fixed
  joints are merged into their parent, as the library and Pinocchio do), ``angle="radian"``;
* ``<dynamics damping friction>`` are dropped (the library's model has neither).

:class:`MujocoRobot` then zeroes every passive and constraint term MuJoCo adds on top of the
rigid body (armature, damping, stiffness, friction loss; contacts are disabled; joint limits are
kept, as physics, and :attr:`MujocoRobot.constraint_count` says when one is active) and maps the
URDF's joint names to MuJoCo's qpos / dof addresses, so that ``q``, ``q̇`` and torques are
exchanged in the library's ``joint_names`` order.

What MuJoCo computes here with its own algorithms: the joint-space inertia M (``mj_fullM``, CRB),
the bias forces C(q, q̇) q̇ + g(q) (``qfrc_bias``, RNE), the forward dynamics (Cholesky of M) and
its integration (``mjINT_RK4``), the kinetic and potential energy (``mjENBL_ENERGY``) and the
Jacobian of a point on a body (``mj_jac``), which maps a Cartesian push to joint torques.
"""

from __future__ import annotations

import math
import sys
import xml.etree.ElementTree as ET

import numpy as np

__all__ = ["MujocoRobot", "mjcf_ready_urdf"]

COMPILER = {
    "angle": "radian",
    "balanceinertia": "false",
    "fusestatic": "true",
    "discardvisual": "true",
    "boundmass": "0",
    "boundinertia": "0",
}


def _print_warning(text) -> None:
    print(f"[mujoco] warning: {text}", file=sys.stderr, flush=True)


def _quiet_log_file(mujoco) -> None:
    """MuJoCo's warnings on stderr instead of appended to MUJOCO_LOG.TXT in the working
    directory (process-wide; the demo's processes and the tests own theirs)."""
    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_print_warning)


def mjcf_ready_urdf(urdf: str) -> str:
    """The URDF text with geometry and joint damping/friction removed and MuJoCo's compiler
    options added (module docstring).  ValueError when the text is not a URDF robot."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise ValueError(f"the robot description is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise ValueError(f"the robot description's root element is <{root.tag}>, not <robot>")
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    for joint in root.findall("joint"):
        for element in joint.findall("dynamics"):
            joint.remove(element)
    for element in root.findall("mujoco"):
        root.remove(element)
    extension = ET.Element("mujoco")
    ET.SubElement(extension, "compiler", COMPILER)
    root.insert(0, extension)
    return ET.tostring(root, encoding="unicode")


class MujocoRobot:
    """A fixed-base robot compiled by MuJoCo from a URDF, in a given joint order.

    ``urdf``: the URDF text; ``joint_names``: the order of q, q̇ and τ used by every method (the
    library's ``Dynamics.joint_names``; MuJoCo's own order is the tree's, possibly different);
    ``dt``: the integration step (s); ``gravity``: world gravity (m/s²).

    Attributes: :attr:`model`, :attr:`data` (MuJoCo's), :attr:`nv`, :attr:`joint_names`.
    """

    def __init__(self, urdf: str, joint_names, dt: float = 1e-3, gravity=(0.0, 0.0, -9.81)):
        import mujoco

        if not (math.isfinite(dt) and 0 < dt <= 0.1):
            raise ValueError(f"dt must be in (0, 0.1] s, got {dt}")
        self._mj = mujoco
        _quiet_log_file(mujoco)
        w = mujoco.mjtWarning
        self._unstable = [int(w.mjWARN_BADQPOS), int(w.mjWARN_BADQVEL), int(w.mjWARN_BADQACC)]
        try:
            model = mujoco.MjModel.from_xml_string(mjcf_ready_urdf(urdf))
        except ValueError as exc:  # MuJoCo's compiler errors are ValueError too
            raise ValueError(f"MuJoCo could not compile the URDF: {exc}") from None
        if model.nq != model.nv:
            raise ValueError(
                f"MuJoCo compiled a robot with nq={model.nq} != nv={model.nv}: only fixed-base "
                "robots with revolute, continuous and prismatic joints are supported"
            )
        names = tuple(joint_names)
        mj_names = [model.joint(i).name for i in range(model.njnt)]
        if sorted(names) != sorted(mj_names) or len(set(names)) != len(names):
            raise ValueError(
                f"the joint names {list(names)} do not match MuJoCo's joints {mj_names}"
            )
        self.joint_names = names
        self.nv = len(names)
        ids = [mj_names.index(name) for name in names]
        self._qadr = np.array([model.jnt_qposadr[i] for i in ids], dtype=np.intp)
        self._vadr = np.array([model.jnt_dofadr[i] for i in ids], dtype=np.intp)
        # Nothing but the rigid body: no rotor inertia, damping, springs, friction or contacts.
        model.dof_armature[:] = 0.0
        model.dof_damping[:] = 0.0
        model.dof_frictionloss[:] = 0.0
        model.jnt_stiffness[:] = 0.0
        model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        model.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
        model.opt.integrator = int(mujoco.mjtIntegrator.mjINT_RK4)
        model.opt.timestep = float(dt)
        model.opt.gravity[:] = np.asarray(gravity, dtype=np.float64)
        self.model = model
        self.data = mujoco.MjData(model)
        self.dt = float(dt)
        n = self.nv
        self._M = np.zeros((model.nv, model.nv))
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._out = np.zeros(n)

    # ------------------------------------------------------------------ state in our order

    def set_state(self, q, qd) -> None:
        """Set q and q̇ (``joint_names`` order), clear the applied forces, and run mj_forward."""
        q = self.vector(q, "q")
        qd = self.vector(qd, "qd")
        d = self.data
        d.qpos[self._qadr] = q
        d.qvel[self._vadr] = qd
        d.qfrc_applied[:] = 0.0
        d.xfrc_applied[:] = 0.0
        self._mj.mj_forward(self.model, d)

    def q(self) -> np.ndarray:
        return self.data.qpos[self._qadr].copy()

    def qd(self) -> np.ndarray:
        return self.data.qvel[self._vadr].copy()

    def vector(self, x, name) -> np.ndarray:
        """``x`` as nv finite float64 numbers; ValueError naming ``name`` otherwise."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.nv,) or not np.all(np.isfinite(x)):
            raise ValueError(f"{name} must be {self.nv} finite numbers, got {x.tolist()!r}")
        return x

    # ------------------------------------------------------------------ MuJoCo's dynamics

    def mass_matrix(self, q) -> np.ndarray:
        """MuJoCo's M(q) (``mj_fullM``), rows and columns in ``joint_names`` order."""
        self.set_state(q, np.zeros(self.nv))
        self._mj.mj_fullM(self.model, self.data, self._M)
        return self._M[np.ix_(self._vadr, self._vadr)].copy()

    def bias(self, q, qd) -> np.ndarray:
        """MuJoCo's ``qfrc_bias`` = C(q, q̇) q̇ + g(q), in ``joint_names`` order."""
        self.set_state(q, qd)
        return self.data.qfrc_bias[self._vadr].copy()

    def energy(self) -> tuple[float, float]:
        """(potential, kinetic) energy of the current state, as MuJoCo computes it (J)."""
        return float(self.data.energy[0]), float(self.data.energy[1])

    def body_force_torque(self, body: str, force) -> np.ndarray:
        """Joint torques Jᵀ f of a world-frame force ``force`` (N) at the centre of mass of
        ``body`` in the current state (``mj_jac`` at the body's ``xipos``: where MuJoCo applies
        ``xfrc_applied``), ``joint_names`` order."""
        m, d = self.model, self.data
        bid = self.body_id(body)
        self._mj.mj_jac(m, d, self._jacp, self._jacr, d.xipos[bid], bid)
        return (self._jacp.T @ np.asarray(force, dtype=np.float64))[self._vadr]

    def body_position(self, body: str) -> np.ndarray:
        """The world position of ``body``'s centre of mass in the current state (a copy)."""
        return self.data.xipos[self.body_id(body)].copy()

    def body_id(self, body: str) -> int:
        bid = self._mj.mj_name2id(self.model, int(self._mj.mjtObj.mjOBJ_BODY), body)
        if bid <= 0:
            bodies = [self.model.body(i).name for i in range(1, self.model.nbody)]
            raise ValueError(
                f"{body!r} is not a moving body of the MuJoCo model (bodies: {bodies}; links on "
                "fixed joints are merged into their parent)"
            )
        return bid

    # ------------------------------------------------------------------ stepping

    def step(self, tau, joint_push=None, body=None, force=None) -> None:
        """One ``mj_step`` (RK4) with the actuator torque ``tau`` and the push held over it:
        ``joint_push`` (joint torques, into ``qfrc_applied`` with ``tau``) and/or a world-frame
        ``force`` on ``body``'s centre of mass (``xfrc_applied``).  Then ``mj_forward``, so that
        positions, energies and constraints are those of the new state (``mj_step`` leaves the
        ones of the state it started from)."""
        tau = self.vector(tau, "tau")
        d = self.data
        d.qfrc_applied[:] = 0.0
        d.qfrc_applied[self._vadr] = tau
        if joint_push is not None:
            d.qfrc_applied[self._vadr] += self.vector(joint_push, "joint_push")
        d.xfrc_applied[:] = 0.0
        if body is not None:
            d.xfrc_applied[self.body_id(body), :3] = np.asarray(force, dtype=np.float64)
        before = self._instabilities()
        start = float(d.time)  # MuJoCo's reset of a diverged state also resets its clock
        self._mj.mj_step(self.model, d)
        self._mj.mj_forward(self.model, d)
        if self._instabilities() != before or not (
            np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))
        ):
            raise ValueError(
                f"the MuJoCo simulation diverged in the step from t = {start:.6g} s (NaN, Inf "
                "or huge q, q̇ or q̈; MuJoCo resets the state then): the controller or the push "
                "is unstable at this step size"
            )

    def _instabilities(self) -> int:
        return sum(int(self.data.warning[i].number) for i in self._unstable)

    @property
    def constraint_count(self) -> int:
        """Active constraint rows (joint limits reached) in the last computed state."""
        return int(self.data.nefc)
