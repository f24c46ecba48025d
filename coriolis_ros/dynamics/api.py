"""The public entry point: :class:`Dynamics`, a model plus its preallocated workspace."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np

from . import budgets as _budgets
from . import velocity_representation as _velrep
from .closed_chain import METHODS as CLOSED_CHAIN_METHODS
from .api_batches import BatchMethods
from .api_frames import FrameMethods
from .api_parameters import SLOTINE_LI_INPUTS, ParameterMethods
from .batch import outputs
from .closed_chain import ClosedChain, spanning_tree
from .configuration import integrate as _integrate
from .configuration import neutral as _neutral
from .engine import Engine
from .kernels.kinematics import MAX_ABS
from .kernels.safeea import is_serial_chain
from .model import Model
from .urdf_model import DEFAULT_GRAVITY, model_from_urdf

_TIMES_NAMES = ("q", "qd", "x")


class Dynamics(FrameMethods, ParameterMethods, BatchMethods):
    """Rigid-body dynamics of one robot: M, Mdot, C (Algorithm 1), Gamma (Algorithm 2), g, RNEA;
    in O(N) without forming C: C qd, C^T qd, M qd, C x and the Slotine-Li torque.

    Joint-space quantities follow :attr:`joint_names` (nv velocity DoF), configurations
    :attr:`position_names` (nq coordinates; nq = nv without a free flyer, whose
    orientation is a quaternion: see :mod:`coriolis_ros.dynamics.model` for the
    conventions).  Every method validates its
    inputs (shape, finite values: ``ValueError`` naming the problem) and returns
    new arrays that belong to the caller; pass ``out=`` (arrays in the order the
    method returns them: float64, C-contiguous, the right shape) to have them
    filled in place without allocating, e.g. ``dyn.coriolis(q, qd, out=(M, Mdot, C))``.

    An instance owns one workspace, so it is not safe to call one instance from
    several threads at once; :meth:`clone` gives another instance of the same
    model with its own workspace.  ``coriolis``, ``christoffel`` and ``mass_matrix``
    release the GIL while they run; the O(N) methods keep it (releasing it would cost a
    tenth of their time).
    """

    def __init__(
        self,
        model: Model,
        max_christoffel_bytes: int = _budgets.DEFAULT_MAX_CHRISTOFFEL_BYTES,
        independent_joints: Sequence[str] | None = None,
        velocity_representation: str = _velrep.DEFAULT,
    ):
        limit = _budgets.check_limit(max_christoffel_bytes, "max_christoffel_bytes")
        self.max_christoffel_bytes = limit
        rep = _velrep.check(velocity_representation, model.root_joint)
        self._source = (model, limit, independent_joints, rep)
        self.closed = None  # the closed-chain reduction (dynamics.closed_chain), if any
        self.velocity_representation = rep  # the floating base's (velocity_representation.py)
        if rep != _velrep.DEFAULT:  # a body-representation Dynamics, changed by the variant's
            inner = Dynamics(model, limit, independent_joints)
            self.__dict__.update(inner.__dict__, _source=self._source, velocity_representation=rep)
            variant = _velrep.VelocityRepresentation(rep, inner)
            for name in _velrep.METHODS:
                setattr(self, name, getattr(variant, name))
            return
        if model.loops or model.sums:
            if independent_joints is not None and not model.loops:
                raise ValueError(
                    "independent_joints is for models with closed loops; this has none"
                )
            tree_dynamics = Dynamics(spanning_tree(model), limit)
            closed = ClosedChain(model, tree_dynamics, independent_joints)
            self._bind_closed_chain(closed, tree_dynamics)
            return
        if independent_joints is not None:
            raise ValueError("independent_joints is for models with closed loops; this has none")
        engine = Engine(model)
        self.engine = engine  # the internal interface of batch and the observer
        self.model = engine.model  # the coordinates the caller uses
        self.tree = engine.tree  # the tree the kernels run on (the model itself if uncoupled)
        self.map = engine.cmap  # q = phi(qbar), qdot = A qbardot; None without couplings
        # bound once: the methods below read them on every call
        self._k = engine.kernels
        self._mf = engine.mf
        self._gravity = engine.gravity
        self._ws = engine.ws
        self._retry = engine.retry
        self._fail = engine.fail
        self._coerce = engine.coerce
        n = engine.nv
        self._vec, self._mat, self._ten = (n,), (n, n), (n, n, n)
        # Gamma's n^3 doubles (and the full tree's, in the workspace, with coupled joints)
        self._tree_nv = engine.tree.nv if engine.coupled else None
        size = _budgets.christoffel_bytes(n, self._tree_nv)
        self._christoffel_refusal = _budgets.christoffel_refusal(size, limit)

    def _bind_closed_chain(self, closed, tree_dynamics) -> None:
        """A closed-chain model answers through :class:`.closed_chain.ClosedChain`: its methods
        are bound on the instance, so the tree path pays nothing for the choice."""
        self.closed = closed
        self.engine = tree_dynamics.engine  # the spanning tree's (batch and observer read it)
        self.model = closed.model
        self.tree = closed.tree
        self.map = None
        n = closed.nv
        self._vec, self._mat, self._ten = (n,), (n, n), (n, n, n)
        for name in CLOSED_CHAIN_METHODS:
            setattr(self, name, getattr(closed, name))

    @classmethod
    def from_urdf(
        cls,
        urdf: str | os.PathLike,
        gravity: Sequence[float] = DEFAULT_GRAVITY,
        root_joint: str = "fixed",
        mimic: str = "follow",
        locked_joints: Mapping[str, float] | None = None,
        rotors: Mapping[str, Mapping] | None = None,
        independent_joints: Sequence[str] | None = None,
        max_dof: int = _budgets.DEFAULT_MAX_DOF,
        max_christoffel_bytes: int = _budgets.DEFAULT_MAX_CHRISTOFFEL_BYTES,
        rotor_model: str = "exact",
        velocity_representation: str = _velrep.DEFAULT,
    ) -> Dynamics:
        """Build from a URDF XML string or a file path; ``URDFError`` if it is unusable.

        ``root_joint`` attaches the URDF's root link to the world: ``"fixed"`` (welded),
        ``"floating"`` (a free flyer, for legged robots and humanoids) or ``"planar"``
        (moving in the world's x-y plane).  Its coordinates come first in q and v.

        ``mimic="follow"`` (default): URDF mimic joints follow their leader and every
        input and output is over the independent coordinates only (``joint_names``
        leaves the mimic joints out; see :mod:`coriolis_ros.dynamics.coordinates`);
        ``mimic="independent"``: mimic joints are DoF of their own.
        ``locked_joints={name: position}`` welds those revolute, continuous or
        prismatic joints at the given position (rad or m), as Pinocchio's
        ``buildReducedModel`` does; ``ValueError`` for an unknown, fixed or
        multi-DoF joint or a non-finite position.

        Geared rotors: the URDF's ``<coupling>`` elements, and ``rotors={joint: {"gear_ratio":
        N, "inertia": [ixx, iyy, izz, ixy, ixz, iyz], "mass": m}}`` for rotors given by their
        datasheet (inertia about the rotor's centre, in the joint's frame; the rotor sits on
        the joint's parent link at the joint's origin and spins about its axis).  A rotor is a
        body of the tree whose joint follows its link's, q_rotor = N q_link: not a coordinate
        (:attr:`tree_joint_names` lists it, :attr:`joint_names` does not), and every output
        includes its inertia and gyroscopic terms (see :mod:`coriolis_ros.dynamics.couplings`).
        ``rotor_model="armature"`` replaces each rotor by N^2 I_axis on M's diagonal and its
        mass and transverse inertia welded to its parent, leaving out the gyroscopic terms
        (:mod:`coriolis_ros.dynamics.armature`); an unknown value is a ``ValueError``.

        Closed loops: the URDF's ``<loop>`` elements (:mod:`coriolis_ros.dynamics.loops`).  The
        coordinates are then ``independent_joints`` (tree joints; default: the joints'
        ``independent`` attributes, else the joints of each loop nearest the root), every
        method closes the loops first (Newton from the last solution; :meth:`close_loops`)
        and answers in those coordinates (:mod:`coriolis_ros.dynamics.closed_chain`).

        Budgets (:mod:`coriolis_ros.dynamics.budgets`): a tree of more than ``max_dof``
        velocity rows (default 2048) is refused with a ``ValueError`` naming the count;
        :meth:`christoffel` refuses when its n^3 doubles exceed ``max_christoffel_bytes``
        (default 1 GiB, n = 512).

        ``velocity_representation`` (floating base only): the base's velocity in v and every
        result, ``"body"`` (default: its twist in the base frame), ``"mixed"`` (the base
        origin's velocity and the angular velocity in world axes) or ``"inertial"`` (its
        spatial twist in the world frame at the world origin); see
        :mod:`coriolis_ros.dynamics.velocity_representation`.
        """
        _budgets.check_limit(max_christoffel_bytes, "max_christoffel_bytes")
        _velrep.check(velocity_representation, root_joint)
        model = model_from_urdf(
            urdf, gravity, root_joint, mimic, locked_joints, rotors, max_dof, rotor_model
        )
        return Dynamics(model, max_christoffel_bytes, independent_joints, velocity_representation)

    def clone(self) -> Dynamics:
        """Another instance on the same (immutable) model, with its own workspace and a copy
        of the current inertial parameters (:meth:`set_inertial_parameters`); a closed chain's
        copy continues from this one's last closure (the same assembly branch)."""
        return _rebuilt(*self._blueprint())

    def __reduce__(self):
        """Pickling (dask, multiprocessing) and ``copy.deepcopy`` give a :meth:`clone`: the
        instance's arrays are views of one another (the kernels' read-only model arrays of
        the parameters' store; the closure's workspace and its ``last``, ``A``, ``dA``), which
        pickling each array would separate, leaving a copy whose answers no longer follow its
        closure or :meth:`set_inertial_parameters`."""
        return (_rebuilt, self._blueprint())

    def _blueprint(self) -> tuple:
        """(source, tree, parameters' store, closure state) of :func:`_rebuilt`."""
        closure = None
        if self.closed is not None:
            # the workspace (last closure, A, dA, the QR of K_z for the next chord step) and
            # ci, which holds that QR's column permutation
            closure = (self.closed.closure.ci, self.closed.closure.cw)
        tree = None if self.closed is not None else self.tree
        return (self._source, tree, self.engine.mf_store, closure)

    def velocity_from_body(self, q, v, out=None) -> np.ndarray:
        """v (nv) in :attr:`velocity_representation`, from v whose floating base's rows are
        its body twist (as odometry gives it); a copy of v in the body representation."""
        return _velrep.identity(self.nq, self.nv, q, v, out)

    def velocity_to_body(self, q, v, out=None) -> np.ndarray:
        """The inverse of :meth:`velocity_from_body`."""
        return _velrep.identity(self.nq, self.nv, q, v, out)

    # ------------------------------------------------------------------ closed loops

    @property
    def loops(self) -> tuple:
        """The model's closed loops (:class:`.loops.Loop`); empty for a tree."""
        return () if self.closed is None else self.closed.closure.loops

    @property
    def dependent_joints(self) -> tuple[str, ...]:
        """The tree joints that follow from closing the loops (not coordinates): the loops'
        dependent joints and, on a closed chain, the joints that follow a leader (mimic
        joints, geared rotors: also in :attr:`coupled_joints`); empty without loops."""
        return () if self.closed is None else self.closed.dependent_joints

    def close_loops(self, y, guess=None, dependent=None) -> np.ndarray:
        """The tree configuration (``tree_joint_names``' positions, dependent joints included)
        that closes every loop at the independent configuration ``y``, by Newton from
        ``guess`` (a tree configuration), or from the last solution with the
        :attr:`dependent_joints` at the measured positions ``dependent`` (followers' entries
        not used); default: the last solution.  Later calls start from the result.
        ``ValueError`` if the model has no loop, or naming the loop that does not close."""
        if self.closed is None:
            raise ValueError(f"{self.name} has no closed loops")
        return self.closed.close_loops(y, guess, dependent)

    def velocity_map(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(A, dA) at q: the tree's velocity A @ qd, and dA[:, j, k] = dA[:, j]/dq_k (zero for a
        model without loops: A is then the constant map of the coupled joints)."""
        if self.closed is not None:
            return self.closed.velocity_map(q)
        q = self._coerce(q, "q")
        self.engine.check_q(q)
        A = np.eye(self.nv) if self.map is None else self.map.matrix()
        return A, np.zeros((A.shape[0], self.nv, self.nv))

    # ------------------------------------------------------------------ description

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.model.joint_names

    @property
    def position_names(self) -> tuple[str, ...]:
        """The nq names of the configuration coordinates, the order of q."""
        return self.model.position_names

    @property
    def nv(self) -> int:
        return self.model.nv

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def root_joint(self) -> str:
        """How the URDF's root link is attached to the world: fixed, floating or planar."""
        return self.model.root_joint

    @property
    def root_link(self) -> str:
        return self.model.root_link

    def neutral(self) -> np.ndarray:
        """The neutral configuration: zero joints, identity quaternions."""
        full = _neutral(self.tree)
        return full if self.map is None else self.map.independent_positions(self.tree, full)

    def integrate(self, q, v, dt: float = 1.0) -> np.ndarray:
        """q (+) v dt on the configuration manifold (a new array of nq entries).

        A free flyer moves along the screw exp(v dt) of its body-frame twist, a
        planar joint along the planar one; other joints add v dt.  The quaternion
        is normalized first.
        """
        q = self._coerce(q, "q")
        v = self._coerce(v, "qd")
        full_q = q if self.map is None else self.full_position(q)
        status = self._k.check_position(self._mf, self._ws, full_q)  # quaternions included
        if status:
            self._fail(status, (q, v), ())
        dt = float(dt)
        if not np.isfinite(dt):
            raise ValueError(f"dt must be finite, got {dt}")
        if self.map is None:
            out = _integrate(self.tree, q, v, dt)
        else:
            full = _integrate(self.tree, full_q, self.full_velocity(v), dt)
            out = self.map.independent_positions(self.tree, full)
        if not np.all(np.abs(out) <= MAX_ABS):  # e.g. v dt beyond ±1e50
            raise ValueError(f"q (+) v dt leaves the accepted range ±{MAX_ABS:g} (v dt = {dt!r})")
        if self.map is not None:  # ... or a follower's coordinate at the result
            why = self.map.refusal(out, f"q (+) v dt (dt = {dt!r})", position=True)
            if why is not None:
                raise ValueError(why)
        return out

    @property
    def tree_depth(self) -> int:
        return self.model.tree_depth

    @property
    def gravity_vector(self) -> np.ndarray:
        """The world gravity acceleration used by :meth:`gravity` and :meth:`inverse_dynamics`."""
        return self.model.gravity.copy()

    def __repr__(self) -> str:
        nq = f", nq={self.nq}" if self.nq != self.nv else ""
        return f"Dynamics({self.name!r}{nq}, nv={self.nv}, tree_depth={self.tree_depth})"

    # ------------------------------------------------------------------ algorithms

    def coriolis(self, q, qd, out=None):
        """(M, Mdot, C) at (q, qd), Algorithm 1; C is Christoffel-consistent: Mdot = C + C^T."""
        if out is None:
            out = (np.empty(self._mat), np.empty(self._mat), np.empty(self._mat))
        try:
            a, b, c = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 3 arrays") from None
        try:
            status = self._k.coriolis(self._mf, q, qd, self._ws, a, b, c)
        except TypeError:
            status = self._retry(self._k.coriolis, [self._mf, q, qd, self._ws, *out], (1, 2), out)
        if status:
            self._fail(status, (q, qd), out)
        return out

    def christoffel(self, q, out=None, method: str = "algorithm2"):
        """Gamma (n, n, n) at q: Gamma[i, j, k] = dC_ij/dqd_k = Gamma[i, k, j].

        ``method="algorithm2"`` (default): Echeandia & Wensing's Algorithm 2, any tree,
        O(Nd^2); ``"safeea"``: Safeea et al.'s recursion, serial chains of revolute
        and prismatic joints only, O(n^3) (:mod:`.kernels.safeea`).

        ``ValueError`` naming the size in GiB when the n^3 doubles exceed the instance's
        ``max_christoffel_bytes`` (see :meth:`from_urdf`); nothing is allocated then.
        """
        if self._christoffel_refusal:
            raise ValueError(self._christoffel_refusal)
        k = self._k
        kernel = k.christoffel_safeea if self._christoffel_method(method) else k.christoffel
        if out is None:
            out = np.empty(self._ten)
        try:
            status = kernel(self._mf, q, self._ws, out)
        except TypeError:
            status = self._retry(kernel, [self._mf, q, self._ws, out], (1,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def coriolis_christoffel(self, q, qd, out=None):
        """(M, Mdot, C, Gamma) at (q, qd): :meth:`coriolis` and :meth:`christoffel`
        (Algorithm 2) in one call, for a controller that needs both each tick.  On a closed
        chain the loops are closed once and C comes from Gamma (C_ij = sum_k Gamma_ijk
        qd_k), in one compiled call; on other models the two kernels run one after the
        other.  ``out``: four arrays (M, Mdot, C, Gamma)."""
        if self._christoffel_refusal:  # before anything is computed
            raise ValueError(self._christoffel_refusal)
        if out is None:
            M, Mdot, C = self.coriolis(q, qd)
            return M, Mdot, C, self.christoffel(q)
        out = outputs(out, [self._mat] * 3 + [self._ten])
        self.coriolis(q, qd, out=out[:3])
        self.christoffel(q, out=out[3])
        return out

    def mass_matrix(self, q, out=None):
        """M(q), composite-rigid-body algorithm."""
        if out is None:
            out = np.empty(self._mat)
        try:
            status = self._k.mass_matrix(self._mf, q, self._ws, out)
        except TypeError:
            status = self._retry(self._k.mass_matrix, [self._mf, q, self._ws, out], (1,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def gravity(self, q, out=None):
        """g(q), the generalized gravity force (the tau that holds the robot still)."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = self._k.gravity(self._mf, self._gravity, q, self._ws, out)
        except TypeError:
            args = [self._mf, self._gravity, q, self._ws, out]
            status = self._retry(self._k.gravity, args, (2,), (out,))
        if status:
            self._fail(status, (q,), (out,))
        return out

    def inverse_dynamics(self, q, qd, qdd, out=None):
        """tau = M qdd + C qd + g, recursive Newton-Euler."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = self._k.inverse_dynamics(self._mf, self._gravity, q, qd, qdd, self._ws, out)
        except TypeError:
            args = [self._mf, self._gravity, q, qd, qdd, self._ws, out]
            status = self._retry(self._k.inverse_dynamics, args, (2, 3, 4), (out,))
        if status:
            self._fail(status, (q, qd, qdd), (out,))
        return out

    def coriolis_vectors(self, q, qd, out=None):
        """(C qd, C^T qd, M qd) in O(N) without forming C."""
        if out is None:
            out = (np.empty(self._vec), np.empty(self._vec), np.empty(self._vec))
        try:
            a, b, c = out
        except (TypeError, ValueError):
            raise ValueError("out must be a tuple of 3 arrays") from None
        try:
            status = self._k.coriolis_vectors(self._mf, q, qd, self._ws, a, b, c)
        except TypeError:
            args = [self._mf, q, qd, self._ws, *out]
            status = self._retry(self._k.coriolis_vectors, args, (1, 2), out)
        if status:
            self._fail(status, (q, qd), out)
        return out

    def coriolis_times(self, q, qd, x, out=None):
        """C(q, qd) x in O(N) without forming C, for the C of :meth:`coriolis`
        (Christoffel-consistent); with x = qd it is C qd."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = self._k.coriolis_times(self._mf, q, qd, x, self._ws, out)
        except TypeError:
            args = [self._mf, q, qd, x, self._ws, out]
            status = self._retry(self._k.coriolis_times, args, (1, 2, 3), (out,), _TIMES_NAMES)
        if status:
            self._fail(status, (q, qd, x), (out,), _TIMES_NAMES)
        return out

    def slotine_li(self, q, qd, qd_ref, qdd_ref, out=None):
        """M(q) qdd_ref + C(q, qd) qd_ref + g(q) in O(N) without forming M or C (the
        Slotine-Li control law's model terms; C as in :meth:`coriolis`)."""
        if out is None:
            out = np.empty(self._vec)
        try:
            status = self._k.slotine_li(
                self._mf, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out
            )
        except TypeError:
            args = [self._mf, self._gravity, q, qd, qd_ref, qdd_ref, self._ws, out]
            names = SLOTINE_LI_INPUTS
            status = self._retry(self._k.slotine_li, args, (2, 3, 4, 5), (out,), names)
        if status:
            self._fail(status, (q, qd, qd_ref, qdd_ref), (out,), SLOTINE_LI_INPUTS)
        return out

    # ------------------------------------------------------------------ coupled / locked joints

    @property
    def mimic_joints(self) -> dict[str, tuple[str, float, float]]:
        """Mimic joints that follow: name -> (independent leader, multiplier, offset)."""
        return {name: (leader, m, o) for name, leader, m, o in self.model.mimic}

    @property
    def coupled_joints(self) -> dict[str, tuple[str, float, float]]:
        """Every joint that follows another (mimic joints, rotors and other coupled joints):
        name -> (independent leader, multiplier, offset), q = multiplier q_leader + offset."""
        if self.closed is not None:  # on a closed chain, followers are dependent joints too
            rows = self.closed.followers
        else:
            rows = (*self.tree.mimic, *self.tree.couplings)
        return {name: (leader, m, o) for name, leader, m, o in rows}

    @property
    def summed_joints(self) -> dict[str, tuple[dict[str, float], float]]:
        """Joints that follow a sum of joints (a rotor driving a joint through another,
        :mod:`coriolis_ros.dynamics.couplings`): name -> ({independent leader: coefficient},
        offset), q = sum of coefficient q_leader + offset.  Empty for most models."""
        rows = () if self.closed is None else self.closed.sums
        return {name: (dict(terms), offset) for name, terms, offset in rows}

    @property
    def tree_joint_names(self) -> tuple[str, ...]:
        """Every velocity DoF of the tree the kernels run on, coupled joints included."""
        return self.tree.joint_names

    @property
    def locked_joints(self) -> dict[str, float]:
        """Joints welded at build time: name -> position (mimic joints of locked leaders too)."""
        return dict(self.model.locked_joints)

    def full_position(self, q) -> np.ndarray:
        """The full tree's configuration (coupled joints included) of q."""
        q = self._coerce(q, "q")
        self.engine.check_q(q)
        return q if self.map is None else self.map.position(q)

    def full_velocity(self, v) -> np.ndarray:
        """The full tree's velocity A v (coupled joints included)."""
        v = self._coerce(v, "qd")
        self.engine.check_v(v)
        return v if self.map is None else self.map.velocity(v)

    def _christoffel_method(self, method) -> int:
        """0: Algorithm 2, 1: Safeea's recursion (ValueError if it does not apply)."""
        if method == "algorithm2":
            return 0
        if method != "safeea":
            raise ValueError(f"method must be 'algorithm2' or 'safeea', got {method!r}")
        if self.model.root_joint != "fixed" or any(
            t in ("floating", "planar") for t in self.model.joint_types
        ):
            raise ValueError(
                "method='safeea' is for fixed-base serial chains of revolute and prismatic "
                "joints; this model has a floating or planar joint (use method='algorithm2')"
            )
        if not is_serial_chain(self._mf):
            raise ValueError(
                "method='safeea' is for serial chains; this model is a branched tree "
                "(use method='algorithm2', or lock the joints of the extra branches)"
            )
        return 1

    def warmup(self) -> None:
        """Compile, or load from Numba's on-disk cache, every kernel, so no later call compiles."""
        q = self.neutral()
        v = np.zeros(self.nv)
        self.coriolis(q, v)
        self.christoffel(q)
        self.mass_matrix(q)
        self.gravity(q)
        self.inverse_dynamics(q, v, v)
        self.coriolis_vectors(q, v)
        self.coriolis_times(q, v, v)
        self.slotine_li(q, v, v, v)
        # MomentumObserver's kernel: loaded, not run
        self._k.observer_step if self.map is not None else self._k.observer_update  # noqa: B018


def _rebuilt(source, tree, mf_store, closure) -> Dynamics:
    """A new :class:`Dynamics` from :meth:`Dynamics._blueprint`'s parts: the same model, a
    copy of the inertial parameters and of a closed chain's closure state."""
    if tree is None:
        other = Dynamics(*source)
    else:
        other = Dynamics(tree, source[1], None, source[3])
    if closure is not None:
        ci, cw = closure
        other.closed.closure.ci[:] = ci
        other.closed.closure.cw[:] = cw
    other.engine.mf_store[:] = mf_store
    other.engine.refold()
    return other
