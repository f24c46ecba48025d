"""What one tick computes, into preallocated storage that is the outgoing message (ROS-free).

`TickOutputs` owns one array.array('d') per CoriolisState float64[] field and a numpy view of
each (see conversions.float64_field). The node assigns the array.array objects to its message
once; a tick then only copies the merged state into `q`/`qd` and runs the kernels with `out=`
these views, so the hot path allocates no arrays (test_node_units pins this with tracemalloc).
"""

from __future__ import annotations

import numpy as np

from .conversions import float64_field
from .params import OUTPUT_FIELDS

MATRIX_PARAMS = (
    "publish_coriolis_matrix",
    "publish_mass_matrix",
    "publish_mass_matrix_derivative",
)
VECTOR_PARAMS = (
    "publish_coriolis_force",
    "publish_coriolis_transpose_force",
    "publish_momentum",
)


class TickOutputs:
    """Result storage of one model (n velocity DoF, nq coordinates) and a tick's kernel calls."""

    def __init__(self, n: int, nq: int | None = None):
        self.n = n
        self.nq = n if nq is None else nq
        self.storage: dict = {}
        self.view: dict = {}
        for field_name, shape in (
            ("position", (self.nq,)),
            ("velocity", (n,)),
            ("coriolis_matrix", (n, n)),
            ("mass_matrix", (n, n)),
            ("mass_matrix_derivative", (n, n)),
            ("coriolis_force", (n,)),
            ("coriolis_transpose_force", (n,)),
            ("gravity_force", (n,)),
            ("momentum", (n,)),
            ("effort", (n,)),  # filled by the node from the input (zero for a floating base)
            ("external_effort", (n,)),  # filled by the node from its observer
        ):
            self.storage[field_name], self.view[field_name] = float64_field(*shape)
        v = self.view
        self.q, self.qd = v["position"], v["velocity"]
        # The kernels' output order: coriolis -> (M, Mdot, C), coriolis_vectors -> (C qd,
        # C^T qd, M qd).
        self.matrices = (v["mass_matrix"], v["mass_matrix_derivative"], v["coriolis_matrix"])
        self.vectors = (v["coriolis_force"], v["coriolis_transpose_force"], v["momentum"])
        self.g = v["gravity_force"]
        self.scratch = np.zeros((n, n))
        self.need_matrices = self.need_vectors = self.need_gravity = True
        self.published = {name: True for name, _, _ in OUTPUT_FIELDS}
        # Each field flattened, and as much of the scratch: |values| go there for the check.
        flat = self.scratch.reshape(-1)
        self._checks = {
            name: (view.reshape(-1), flat[: view.size]) for name, view in v.items() if view.size
        }

    def set_flags(self, flags: dict) -> dict:
        """Which kernels run, from the publish_* flags; returns {field: published?}."""
        self.need_matrices = any(flags[p] for p in MATRIX_PARAMS)
        self.need_vectors = any(flags[p] for p in VECTOR_PARAMS)
        self.need_gravity = bool(flags["publish_gravity"])
        self.published = {f: bool(flags[param]) for f, param, _ in OUTPUT_FIELDS}
        return dict(self.published)

    def nonfinite(self, effort: bool = False, external_effort: bool = False) -> list[str]:
        """The fields a message would carry now (the published ones, position and velocity,
        effort and external_effort when asked) that hold NaN or an infinity; [] when all are
        finite. Allocation-free when they are."""
        names = ["position", "velocity"]
        names += [name for name, on in self.published.items() if on]
        if effort:
            names.append("effort")
        if external_effort:
            names.append("external_effort")
        return [name for name in names if not self.finite(name)]

    def finite(self, name: str) -> bool:
        check = self._checks.get(name)
        if check is None:  # an empty field
            return True
        values, scratch = check
        np.abs(values, out=scratch)
        return bool(scratch.max() < np.inf)  # NaN compares False

    def compute(self, dyn, matrices: bool = False) -> None:
        """The kernels the flags need (and the matrices when `matrices`) at (q, qd)."""
        q, qd = self.q, self.qd
        if self.need_matrices or matrices:
            dyn.coriolis(q, qd, out=self.matrices)
        if self.need_vectors:
            dyn.coriolis_vectors(q, qd, out=self.vectors)
        if self.need_gravity:
            dyn.gravity(q, out=self.g)

    def residual(self) -> tuple[float, float]:
        """(‖Ṁ − C − Cᵀ‖_F, ‖Ṁ‖_F) of the last matrices computed (self-check)."""
        _, Mdot, C = self.matrices
        np.subtract(Mdot, C, out=self.scratch)
        self.scratch -= C.T
        return float(np.linalg.norm(self.scratch)), float(np.linalg.norm(Mdot))
