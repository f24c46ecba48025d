"""Task-space terms per row of a bag (``coriolis-ros bag --task-frame FRAME``).

For every row and every chosen frame, the library's ``Dynamics.task_space`` at the row's
(q, q̇): the task-space inertia Λ, the task-space Coriolis matrix μ, the frame Jacobian J and
its rate J̇ of the chosen task rows in the chosen reference, with the options and the names of
the node's ``get_task_space`` service (``srv/GetTaskSpace.srv``: frame, reference, rows,
damping; response fields ``task_inertia``, ``task_coriolis``, ``jacobian``,
``jacobian_dot``), and the frame's world placement (``Dynamics.frame_placement``).

Output keys (``.npz`` arrays, Parquet columns), m task rows, n DoF, T rows:

* ``task_space.<frame>.task_inertia``, ``task_space.<frame>.task_coriolis``: (T, m, m);
* ``task_space.<frame>.jacobian``, ``task_space.<frame>.jacobian_dot``: (T, m, n), columns in
  ``joint_names`` order;
* ``task_space.<frame>.placement``: (T, 4, 4), the homogeneous world pose;
* once per file (:data:`CONSTANT_KEYS`): ``task_space.frames`` (the frames, in the order
  given), ``task_space.rows`` (int32 (m,), the task rows used: 0-2 linear x, y, z, 3-5
  angular), ``task_space.reference`` and ``task_space.damping`` (0-d).

A row where the task is singular (J M⁻¹ Jᵀ rank-deficient without damping, e.g. at a
kinematic singularity) is handled as the bag reader handles any bad row: left out of every
output and counted by reason, fatal with ``strict``.  Options that cannot work on the model
(an unknown frame, a model with closed loops, a singular mass matrix) fail the bag before
its messages are read (:func:`check_model`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from coriolis_ros.dynamics.frames import REFERENCES

from .bag_storage import BagError

PREFIX = "task_space"
# The node's GetTaskSpace response fields, in its order; then the frame's placement.
TERMS = ("task_inertia", "task_coriolis", "jacobian", "jacobian_dot")
PLACEMENT = "placement"
DEFAULT_REFERENCE = "local_world_aligned"
REFERENCE_NAMES = ("local_world_aligned", "local", "world")  # the library's REFERENCES
ALL_ROWS = (0, 1, 2, 3, 4, 5)
# Keys that hold one value per file, not one per row.
CONSTANT_KEYS = (
    f"{PREFIX}.frames", f"{PREFIX}.rows", f"{PREFIX}.reference", f"{PREFIX}.damping",
)  # fmt: skip


def key(frame: str, term: str) -> str:
    """The output key of ``term`` (a :data:`TERMS` name or ``placement``) at ``frame``."""
    return f"{PREFIX}.{frame}.{term}"


def parse_rows(text: str) -> tuple[int, ...]:
    """``"0,1,2"`` -> (0, 1, 2): distinct task rows 0..5, at least one; ValueError naming
    the problem otherwise."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        rows = tuple(int(p) for p in parts)
    except ValueError:
        rows = None
    if rows is None or not rows:
        raise ValueError(f"--task-rows must be comma-separated integers 0..5, got {text!r}")
    return check_rows(rows, f"--task-rows {text}")


def check_rows(rows, label: str = "rows") -> tuple[int, ...]:
    rows = tuple(rows)
    bad = [
        r
        for r in rows
        if isinstance(r, bool) or not (isinstance(r, (int, np.integer)) and 0 <= r <= 5)
    ]
    if not rows or bad:
        raise ValueError(
            f"{label}: task rows are 0..5 (0-2 linear x, y, z; 3-5 angular x, y, z), at "
            f"least one; got {', '.join(map(repr, bad)) or 'none'}"
        )
    twice = sorted({r for r in rows if rows.count(r) > 1})
    if twice:
        raise ValueError(f"{label}: task rows given twice: {', '.join(map(str, twice))}")
    return tuple(int(r) for r in rows)


@dataclass(frozen=True)
class TaskSpec:
    """The task-space terms to add to every row: the node's GetTaskSpace options, one set for
    every frame.  ``rows`` None: all six.  ValueError naming the option when one is bad."""

    frames: tuple[str, ...]
    reference: str = DEFAULT_REFERENCE
    rows: tuple[int, ...] | None = None
    damping: float = 0.0

    def __post_init__(self):
        frames = tuple(self.frames)
        if not frames:
            raise ValueError("task space: no frame given (--task-frame FRAME)")
        for frame in frames:
            if not isinstance(frame, str) or not frame:
                raise ValueError(f"--task-frame must be a link name, got {frame!r}")
        twice = sorted({f for f in frames if frames.count(f) > 1})
        if twice:
            raise ValueError(f"--task-frame given twice: {', '.join(twice)}")
        object.__setattr__(self, "frames", frames)
        if self.reference not in REFERENCES:
            raise ValueError(
                f"--task-reference must be one of {', '.join(REFERENCE_NAMES)}, "
                f"got {self.reference!r}"
            )
        if self.rows is not None:
            object.__setattr__(self, "rows", check_rows(self.rows, "--task-rows"))
        damping = float(self.damping)
        if not (math.isfinite(damping) and damping >= 0.0):
            raise ValueError(f"--task-damping must be finite and >= 0, got {self.damping!r}")
        object.__setattr__(self, "damping", damping)

    @property
    def used_rows(self) -> tuple[int, ...]:
        return ALL_ROWS if self.rows is None else self.rows

    def constants(self) -> dict:
        """The once-per-file keys (:data:`CONSTANT_KEYS`)."""
        return {
            f"{PREFIX}.frames": np.array(self.frames, dtype=str),
            f"{PREFIX}.rows": np.array(self.used_rows, dtype=np.int32),
            f"{PREFIX}.reference": np.array(self.reference, dtype=str),
            f"{PREFIX}.damping": np.array(self.damping, dtype=np.float64),
        }


# --------------------------------------------------------------------------- the CLI


def add_arguments(parser) -> None:
    """``coriolis-ros bag``'s task-space options."""
    parser.add_argument(
        "--task-frame", action="append", metavar="FRAME",
        help="also write the task-space terms of this URDF link per row (repeatable): "
        "task_space.<FRAME>.task_inertia (Lambda, m x m), .task_coriolis (mu, m x m), "
        ".jacobian (J, m x n), .jacobian_dot (Jdot, m x n), .placement (4 x 4 world pose), "
        "as the node's get_task_space service; a row where the task is singular is skipped "
        "and counted (fatal with --strict)",
    )  # fmt: skip
    parser.add_argument(
        "--task-reference", choices=REFERENCE_NAMES, default=None,
        help=f"the reference of J (default {DEFAULT_REFERENCE}: frame-origin velocity and "
        "angular velocity in world axes; local: the same in the frame's axes; world: the "
        "spatial velocity at the world origin)",
    )  # fmt: skip
    parser.add_argument(
        "--task-rows", metavar="ROWS",
        help="task rows in the order wanted, comma-separated: 0-2 linear x, y, z, 3-5 "
        "angular x, y, z (default: all six)",
    )  # fmt: skip
    parser.add_argument(
        "--task-damping", type=float, default=None, metavar="D",
        help="Lambda = (J M^-1 J^T + D 1)^-1 (default 0: none, a singular task is skipped)",
    )  # fmt: skip


def spec_from_args(args) -> TaskSpec | None:
    """The TaskSpec of the parsed options, None without --task-frame; ValueError (its message
    for the user) when they are bad or given without --task-frame."""
    if not args.task_frame:
        given = [
            option
            for option, value in (
                ("--task-reference", args.task_reference),
                ("--task-rows", args.task_rows),
                ("--task-damping", args.task_damping),
            )
            if value is not None
        ]
        if given:
            raise ValueError(f"{', '.join(given)} needs --task-frame")
        return None
    rows = None if args.task_rows is None else parse_rows(args.task_rows)
    return TaskSpec(
        frames=tuple(args.task_frame),
        reference=args.task_reference or DEFAULT_REFERENCE,
        rows=rows,
        damping=0.0 if args.task_damping is None else args.task_damping,
    )


# --------------------------------------------------------------------------- computing


def check_model(dyn, spec: TaskSpec, where: str) -> None:
    """BagError naming the cause if ``spec`` cannot work on the model at all: an unknown frame,
    a model with closed loops, a singular mass matrix (tried at the neutral configuration,
    with damping so that the task's rank does not matter)."""
    q, v = dyn.neutral(), np.zeros(dyn.nv)
    for frame in spec.frames:
        try:
            dyn.task_space(q, v, frame, spec.reference, spec.rows, max(spec.damping, 1.0))
        except ValueError as exc:
            raise BagError(f"{where}: --task-frame {frame}: {exc}") from None


def task_terms(dyn, spec: TaskSpec, Q, V, progress=None):
    """(arrays, ok, first, reasons): the task-space keys for every row of Q, V (rows where
    ``dyn.task_space`` refuses the state hold zeros), ``ok`` (T,) bool, the first refusal
    as (row, frame, message) or None, and {reason: refused rows} (each row counted once)."""
    T, n, m = len(Q), dyn.nv, len(spec.used_rows)
    arrays = {}
    ok = np.ones(T, dtype=bool)
    first = None
    reasons: dict[str, int] = {}
    step = max(1, T // 100)
    for frame in spec.frames:
        out = {
            "task_inertia": np.zeros((T, m, m)),
            "task_coriolis": np.zeros((T, m, m)),
            "jacobian": np.zeros((T, m, n)),
            "jacobian_dot": np.zeros((T, m, n)),
            PLACEMENT: np.zeros((T, 4, 4)),
        }
        lam, mu, jac, jdot, pose = (out[k] for k in (*TERMS, PLACEMENT))
        for t in range(T):
            q, v = Q[t], V[t]
            try:
                dyn.task_space(
                    q, v, frame, spec.reference, spec.rows, spec.damping,
                    out=(lam[t], mu[t], jac[t], jdot[t]),
                )  # fmt: skip
            except ValueError as exc:
                if ok[t]:
                    ok[t] = False
                    reason = f"{str(exc).split(':', 1)[0]}: not published"
                    reasons[reason] = reasons.get(reason, 0) + 1
                if first is None:
                    first = (t, frame, str(exc))
                for a in (lam, mu, jac, jdot):
                    a[t] = 0.0
                continue
            dyn.frame_placement(q, frame, out=pose[t])
            if progress is not None and t % step == 0:
                progress(t, T)
        for term, value in out.items():
            arrays[key(frame, term)] = value
    if progress is not None:
        progress(T, T)
    return arrays, ok, first, reasons


def add_task_space(dyn, spec: TaskSpec, arrays: dict, rec, *, strict: bool, where: str,
                   progress=None) -> tuple[dict, np.ndarray]:  # fmt: skip
    """``arrays`` with the task-space keys added, and the (T,) rows to keep: a row where a
    frame's task is refused (singular) is counted in ``rec.skipped`` by reason, a note names
    the first one; with ``strict`` it is a BagError naming it instead."""
    terms, ok, first, reasons = task_terms(
        dyn, spec, arrays["position"], arrays["velocity"], progress
    )
    if first is not None:
        t, frame, message = first
        stamp = int(arrays["header.stamp"][t])
        at = f"the joint state stamped {stamp} ns (row {t})"
        if strict:
            raise BagError(f"{where}: {at}: --task-frame {frame}: {message} (--strict)")
        if not ok.any():
            raise BagError(
                f"{where}: no rows: the task space refuses every row; first: {at}: {message}"
            )
        for reason, count in reasons.items():
            rec.skipped[reason] = rec.skipped.get(reason, 0) + count
        rec.notes.append(f"task space: first row refused: {at}: {message}")
    out = dict(arrays)
    out.update(terms)
    out.update(spec.constants())
    return out, ok
