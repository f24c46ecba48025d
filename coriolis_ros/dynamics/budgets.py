"""Memory budgets checked before the library allocates what grows with the model's size.

* ``max_dof`` (model loading): the tree's velocity rows, coupled joints included.  The
  default, :data:`DEFAULT_MAX_DOF` = 2048, is twenty times the largest robots described in
  URDF (humanoids with hands, ~100 DoF) and keeps one state's three n x n matrices
  (M, Mdot, C: 24 n^2 bytes) at 100 MB, so that they, the copies a message of them takes
  and the workspace fit in 1 GiB together; a URDF with more (a generated or hostile file)
  is refused by name before the model's arrays exist.
* ``max_christoffel_bytes`` (:meth:`~.api.Dynamics.christoffel`): Gamma has n^3 entries,
  8 n^3 bytes (1 GiB at n = 512, 12.9 GiB at n = 1200).  Above the budget (default
  :data:`DEFAULT_MAX_CHRISTOFFEL_BYTES` = 1 GiB) ``christoffel`` raises a ``ValueError``
  naming the size in GiB and the argument that raises the limit, before allocating
  anything.  A model with coupled joints also fills the full tree's Gamma in its workspace
  (:mod:`.kernels.coordinate_change`): both count.
"""

from __future__ import annotations

DEFAULT_MAX_DOF = 2048
DEFAULT_MAX_CHRISTOFFEL_BYTES = 1 << 30  # 1 GiB
_GIB = float(1 << 30)


def check_limit(value, name: str) -> int:
    """``value`` as a positive int; ValueError naming the argument otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def check_dof(n: int, max_dof: int) -> None:
    """ValueError naming the count and the limit when the model has more than max_dof rows."""
    if n > max_dof:
        raise ValueError(
            f"the model has {n} degrees of freedom (velocity rows of the tree, coupled joints "
            f"included), more than max_dof={max_dof}; pass a larger max_dof to load it "
            f"(Dynamics.from_urdf(..., max_dof={n}); coriolis-ros: --max-dof {n})"
        )


def christoffel_bytes(nv: int, tree_nv: int | None = None, states: int = 1) -> int:
    """Bytes of the n^3 arrays ``christoffel`` needs: ``states`` outputs of nv^3 doubles, plus
    the full tree's tree_nv^3 in the workspace of a model with coupled joints."""
    extra = 0 if tree_nv is None else tree_nv**3
    return 8 * (states * nv**3 + extra)


def christoffel_refusal(size: int, limit: int, what: str = "Gamma") -> str:
    """The message of a refused Christoffel computation ('' when within the budget)."""
    if size <= limit:
        return ""
    return (
        f"{what} needs {size / _GIB:.3g} GiB ({size} bytes of n^3 float64 entries), more "
        f"than max_christoffel_bytes={limit} ({limit / _GIB:.3g} GiB); raise the limit with "
        f"Dynamics.from_urdf(..., max_christoffel_bytes={size}) (coriolis-ros: "
        f"--max-christoffel-bytes {size})"
    )
