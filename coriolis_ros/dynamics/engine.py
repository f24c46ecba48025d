"""What the compiled kernels of one :class:`~.api.Dynamics` read and write.

An :class:`Engine` is the internal interface between the public class and the code that
calls kernels on its behalf (the batches, the momentum observer): the model variant's
kernel table (:mod:`.kernel_table`), chosen once from the model, the packed model arrays,
the workspace, the sizes of q and v as the caller sees them, and the input checks that
turn a kernel's status code or a ``TypeError`` from its dispatcher into a ``ValueError``
naming the problem.

Variants: a tree whose rows are all coordinates runs the ``TREE`` kernels on a workspace
of n rows; a tree with coupled joints (mimic joints that follow) runs the ``COUPLED``
kernels, whose workspace carries the coordinate map and the full-size intermediates in
extra rows (:mod:`.kernels.coordinate_change`), so calls with ``out=`` allocate nothing.
"""

from __future__ import annotations

import numpy as np

from .coordinates import CoordinateMap, ReducedModel
from .kernel_table import COUPLED, TREE, KernelTable
from .kernels.coordinate_change import write_fold, write_map, ws_rows
from .kernels.kinematics import (
    BAD_Q,
    BAD_QD,
    BAD_QDD,
    BAD_QUATERNION,
    MAX_ABS,
    MIN_QUATERNION_NORM,
    OVERLAP,
    SIZE_OUT,
    SIZE_Q,
    SIZE_QD,
    SIZE_QDD,
)
from .kernels.slotine_li import BAD_ARG4, SIZE_ARG4
from .kernels.spatial import WS_WIDTH
from .model import FM_BODY, FM_R, MF_PARENT, Model
from .rotor_fold import compact, fold

_F64 = np.dtype(np.float64)


def as_vector(x, size: int, name: str) -> np.ndarray:
    """x as a new float64 vector of ``size`` entries; ValueError naming ``name`` otherwise
    (complex entries too: float64 would drop their imaginary parts)."""
    if np.iscomplexobj(x):
        raise ValueError(f"{name} must be real numbers, got complex")
    try:
        arr = np.array(x, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of {size} numbers: {exc}") from None
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}")
    return arr
NAMES = ("q", "qd", "qdd")
# Inputs the coupled kernels take as they are, not through q = phi(qbar), qdot = A qbardot.
NOT_EXPANDED = ("tau",)


class Engine:
    """One instance's kernels, model arrays and workspace (see the module docstring).

    ``tree`` is the model the kernels run on; ``model`` describes the coordinates the
    caller uses (``tree`` itself, or its :class:`~.coordinates.ReducedModel`); ``cmap``
    the coordinate map (None for a plain tree).  ``batch_workspaces`` and
    ``lane_buffers`` belong to :mod:`.batch`, which allocates them on first use.
    """

    def __init__(self, model: Model):
        # a reduced description (another instance's ``model``) stands for its tree
        tree = getattr(model, "tree", None) or model
        self.tree = tree
        # The engine's own copy of the packed model, which the kernels read through a read-only
        # view: set_inertial_parameters (dynamics.parameters) writes its inertia columns in place.
        self.mf_store = tree.mf.copy()
        self.mf = self.mf_store.view()
        self.mf.setflags(write=False)
        # E per row: its link frame in its body frame, x_body = E x_link (the inertial
        # parameters are in the link frames; dynamics.parameters), from the frames table
        rotations = np.tile(np.eye(3).ravel(), (tree.nv, 1))
        for link, frame in zip(tree.frame_names, tree.fm, strict=True):
            row = int(frame[FM_BODY])
            if 0 <= row < tree.nv and tree.body_links[row] == link:
                rotations[row] = frame[FM_R : FM_R + 9]
        rotations.setflags(write=False)
        self.link_rotations = rotations
        self.gravity = tree.gravity
        n = tree.nv
        self.batch_workspaces: np.ndarray | None = None
        if tree.mimic or tree.couplings:
            self.cmap: CoordinateMap | None = CoordinateMap(tree)
            self.model: Model = ReducedModel.of(tree, self.cmap)
            self.kernels: KernelTable = COUPLED
            # the rows after the model's hold the map, then every full-size intermediate
            self.ws = np.zeros((ws_rows(n, tree.nq), WS_WIDTH))
            rows = [tree.joint_names.index(name) for name in self.cmap.joint_names]
            write_map(self.ws[n:].ravel(), self.cmap.A, self.cmap.phi, rows, self.model.nq)
            # each row's cluster leader (the row whose walk it joins; -1: none), as the
            # kernels' coriolis_matrix.cluster_leader finds it
            self._independent_rows = rows
            parents = self.mf_store[:, MF_PARENT]
            self._leaders = np.full(n, -1, dtype=np.int64)
            self._followers = np.zeros(n, dtype=bool)
            for r in range(n):
                k = rows[int(self.cmap.A[r, 0])]
                self._followers[r] = k != r
                if k < r and parents[k] == parents[r]:
                    self._leaders[r] = k
            self.refold()
        else:
            self.cmap = None
            self.model = tree
            self.kernels = TREE
            self.ws = np.zeros((max(n, 1), WS_WIDTH))
        self.nq, self.nv = self.model.nq, self.model.nv
        self.lane_buffers: tuple | None = None

    def refold(self) -> None:
        """Write the folded tree (balanced rotors welded to their parents, :mod:`.rotor_fold`)
        into the workspace, from the current inertial parameters (after a change of them)."""
        if self.cmap is None:
            return
        n = self.tree.nv
        folded, flags, spin = fold(self.mf_store, self._leaders, self._followers)
        rows, A2, perm, identity, table = compact(
            folded, flags, spin, self.cmap.A, self.cmap.phi, self._independent_rows
        )
        write_fold(self.ws[n:].ravel(), n, self.tree.nq, rows, A2, perm, identity, table)
        self._folded = tuple(int(r) for r in np.flatnonzero(flags))
        if self.batch_workspaces is not None:  # copies of ws made by the first batch call
            self.batch_workspaces[:, n:] = self.ws[n:]

    @property
    def folded_rows(self) -> tuple[int, ...]:
        """The tree rows of the rotors folded into their parents (:mod:`.rotor_fold`)."""
        return self._folded if self.cmap is not None else ()

    @property
    def coupled(self) -> bool:
        """Whether the coordinates are a reduction of the tree's (coupled joints)."""
        return self.cmap is not None

    # ------------------------------------------------------------------ input checks

    def coerce(self, x, name: str) -> np.ndarray:
        """x as a new float64 vector of the size ``name`` has ("q": nq, else nv)."""
        return as_vector(x, self.nq if name == "q" else self.nv, name)

    def retry(self, kernel, args: list, inputs: tuple, out: tuple, names=NAMES) -> int:
        """The arguments are not the compiled types: convert the inputs, explain bad outputs."""
        for position, name in zip(inputs, names, strict=False):
            args[position] = self.coerce(args[position], name)
        for arr in out:
            if not (type(arr) is np.ndarray and arr.dtype == _F64 and arr.flags.carray):
                got = f"{type(arr).__name__} {getattr(arr, 'dtype', '')}"
                raise ValueError(f"out arrays must be writeable C-contiguous float64, got {got}")
        try:
            return kernel(*args)
        except TypeError:
            shapes = ", ".join(str(np.shape(arr)) for arr in out)
            raise ValueError(f"out arrays have the wrong shape: {shapes}") from None

    def fail(self, status: int, inputs: tuple, out: tuple, names=NAMES) -> None:
        """Raise the ValueError a kernel's nonzero status stands for."""
        if status in (BAD_Q, BAD_QD, BAD_QDD, BAD_ARG4):
            which = status - BAD_Q
            name = names[which]
            # within range itself, it can still put a follower beyond it: say which
            if self.cmap is not None and name not in NOT_EXPANDED:
                why = self.cmap.refusal(inputs[which], name, position=which == 0)
                if why is not None:
                    raise ValueError(why)
            raise ValueError(f"{name} has a NaN, infinite or huge (beyond ±{MAX_ABS:g}) entry")
        if status == BAD_QUATERNION:
            raise ValueError(
                f"q has a zero quaternion (norm below {MIN_QUATERNION_NORM:g}) for a floating joint"
            )
        if status in (SIZE_Q, SIZE_QD, SIZE_QDD, SIZE_ARG4):
            which = status - SIZE_Q
            got = np.shape(inputs[which])
            size = self.nq if which == 0 else self.nv
            raise ValueError(f"{names[which]} must have shape ({size},), got {got}")
        if status == OVERLAP:
            raise ValueError("out arrays must not share memory")
        if status == SIZE_OUT:
            shapes = ", ".join(str(np.shape(arr)) for arr in out)
            raise ValueError(f"out arrays have the wrong shape: {shapes}")
        raise RuntimeError(f"internal error: kernel status {status}")

    def check_q(self, q: np.ndarray) -> None:
        """ValueError unless q and the followers' coordinates phi(q) are within ±MAX_ABS."""
        if not np.all(np.abs(q) <= MAX_ABS):
            self.fail(BAD_Q, (q,), ())
        if self.cmap is not None and not np.all(np.abs(self.cmap.position(q)) <= MAX_ABS):
            self.fail(BAD_Q, (q,), ())

    def check_expanded(self, x, name: str) -> None:
        """ValueError naming the follower if A x puts one beyond ±MAX_ABS, for inputs that a
        coupled kernel expands without checking them (the regressors' qdd_ref and the energy
        regressor's qd); x is a vector of velocity rows or, in a batch, rows of them.  Nothing
        for a plain tree, nor for an x the kernel refuses anyway (shape, range)."""
        cmap = self.cmap
        if cmap is None:
            return
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            return
        if x.ndim not in (1, 2) or x.shape[-1] != self.nv or not np.all(np.abs(x) <= MAX_ABS):
            return
        scaled = np.abs(x) * cmap.scale  # |A x| <= MAX_ABS for every row of A, exactly
        if np.all(scaled <= MAX_ABS):
            return
        if x.ndim == 1:
            why = cmap.refusal(x, name, position=False)
        else:
            row = int(np.argmax(~np.all(scaled <= MAX_ABS, axis=1)))
            why = cmap.refusal(x[row], f"{name} row {row}", position=False)
        if why is not None:
            raise ValueError(why)

    def check_v(self, v: np.ndarray) -> None:
        """ValueError unless v and the followers' velocities A v are within ±MAX_ABS."""
        if not np.all(np.abs(v) <= MAX_ABS):
            self.fail(BAD_QD, (None, v), ())
        if self.cmap is not None and not np.all(np.abs(self.cmap.velocity(v)) <= MAX_ABS):
            self.fail(BAD_QD, (None, v), ())
