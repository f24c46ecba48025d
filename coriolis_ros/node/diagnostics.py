"""Decide the diagnostic status of the node from a snapshot of its state (ROS-free).

The node publishes the result as a diagnostic_msgs/DiagnosticArray on /diagnostics
(diagnostic_updater is not available from PyPI).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from coriolis_ros.stream.joint_state_buffer import name_list

OK, WARN, ERROR, STALE = 0, 1, 2, 3  # diagnostic_msgs/DiagnosticStatus levels

# ‖Ṁ − C − Cᵀ‖ / max(1, ‖Ṁ‖) above this is reported (it is rounding-level when all is well).
RESIDUAL_TOLERANCE = 1e-8


@dataclass
class Snapshot:
    robot: str | None = None  # None: no model yet
    dof: int = 0
    tree_depth: int = 0
    model_error: str = ""  # last robot_description rejection, '' if none since the last model
    building: bool = False  # a new description is being built
    missing: tuple = ()  # model joints without a position yet
    stale: tuple = ()
    no_velocity: tuple = ()
    stale_velocity: tuple = ()  # joints whose velocity in use is older than the timeout
    zero_stamps: int = 0  # joint_states with a zero stamp, since start
    future_stamps: int = 0  # joint_states stamped ahead of the node's clock, since start
    input_rate: float = 0.0
    output_rate: float = 0.0
    compute_mean: float = math.nan  # s per tick over the last period
    compute_max: float = math.nan
    residual: float = math.nan  # ‖Ṁ − C − Cᵀ‖_F, first tick after the previous report
    residual_scale: float = 1.0  # ‖Ṁ‖_F on the same tick
    counters: dict = field(default_factory=dict)
    last_rejection: str = ""
    update_rate: float = 0.0
    root_joint: str = "fixed"
    odometry_received: int = 0  # floating/planar base: odometry messages, since the model
    odometry_rejected: int = 0  # ... of which rejected (wrong frame, bad values)
    nonfinite: int = 0  # results withheld or refused because not finite, since start
    nonfinite_recent: int = 0  # ... in the period of this snapshot
    last_nonfinite: str = ""  # what the last one was
    model_warning: str = ""  # what is wrong with the model itself (M singular at neutral)


def _fmt(value) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def evaluate(s: Snapshot) -> tuple[int, str, list[tuple[str, str]]]:
    """(level, message, [(key, value), ...]) for the snapshot."""
    values = [
        ("robot", s.robot or ""),
        ("dof", s.dof),
        ("tree_depth", s.tree_depth),
        ("root_joint", s.root_joint),
        ("mode", f"timer {s.update_rate:g} Hz" if s.update_rate > 0 else "every message"),
        ("input_rate_hz", s.input_rate),
        ("output_rate_hz", s.output_rate),
        ("compute_time_mean_ms", s.compute_mean * 1e3),
        ("compute_time_max_ms", s.compute_max * 1e3),
    ]
    values += [(name, s.counters.get(name, 0)) for name in sorted(s.counters)]
    values += [
        ("stale_joints", name_list(s.stale) if s.stale else ""),
        ("missing_joints", name_list(s.missing) if s.missing else ""),
        ("joints_without_velocity", name_list(s.no_velocity) if s.no_velocity else ""),
        ("joints_with_old_velocity", name_list(s.stale_velocity) if s.stale_velocity else ""),
        *(
            [("odometry_received", s.odometry_received), ("odometry_rejected", s.odometry_rejected)]
            if s.root_joint != "fixed"
            else []
        ),
        ("zero_stamp_messages", s.zero_stamps),
        ("future_stamp_messages", s.future_stamps),
        ("self_check_residual", s.residual),
        ("last_rejected_input", s.last_rejection),
        ("last_rejected_description", s.model_error),
        ("nonfinite_results", s.nonfinite),
        ("last_nonfinite_result", s.last_nonfinite),
        ("model_warning", s.model_warning),
    ]
    values = [(k, _fmt(v)) for k, v in values]

    if s.robot is None:
        message = "no robot model"
        if s.building:
            message += " (building one)"
        if s.model_error:
            message += f"; robot_description rejected: {s.model_error}"
        return ERROR, message, values
    relative = s.residual / max(1.0, s.residual_scale)
    if not math.isnan(relative) and relative > RESIDUAL_TOLERANCE:
        return ERROR, f"self-check failed: |Mdot - C - C^T| = {s.residual:.3g}", values
    warnings = []
    if s.nonfinite_recent:
        warnings.append(
            f"{s.nonfinite_recent} non-finite result(s) withheld: {s.last_nonfinite}"
        )
    if s.missing:
        warnings.append(f"waiting for joints: {name_list(s.missing)}")
    if s.stale:
        warnings.append(f"stale joints: {name_list(s.stale)}")
    if s.no_velocity:
        warnings.append(f"no velocity (using 0) for: {name_list(s.no_velocity)}")
    if s.stale_velocity:
        warnings.append(f"velocity older than the timeout for: {name_list(s.stale_velocity)}")
    if s.model_error:
        warnings.append(f"robot_description rejected, old model kept: {s.model_error}")
    if s.model_warning:
        warnings.append(s.model_warning)
    if warnings:
        return WARN, "; ".join(warnings), values
    return OK, f"{s.robot}: {s.dof} DoF, {s.output_rate:.4g} Hz", values
