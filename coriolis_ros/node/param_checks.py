"""Parameters checked when they are set, and names the node does not know (ROS-free).

A set that would be refused later is refused when it is made: :func:`check_set` reads and
loads a new robot_description_file (or robot_description) with the node's model parameters,
and checks an observer_gain list against the model's size, so the caller gets
``successful=False`` with the reason instead of a later error in the log.
"""

from __future__ import annotations

import difflib

from .observer_feed import observer_gains
from .params import SPECS, validate
from .robot_model import ModelError, load_dynamics, read_description_file

# Parameters rclpy declares on every node (and the QoS overrides' prefix).
ROS_OWN = ("use_sim_time", "start_type_description_service")
ROS_OWN_PREFIXES = ("qos_overrides.",)


def nearest_name(name: str, names=None) -> str | None:
    """The valid parameter name closest to `name` (difflib), or None when none is close."""
    names = list(SPECS) if names is None else list(names)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_parameter_lines(given, declared) -> list[str]:
    """One warning per parameter in `given` (from a params file or -p overrides) that is
    neither declared nor one of ROS's own: its name and the nearest valid one."""
    declared = set(declared)
    lines = []
    for name in sorted(given):
        if name in declared or name in ROS_OWN or name.startswith(ROS_OWN_PREFIXES):
            continue
        near = nearest_name(name, declared - set(ROS_OWN))
        hint = f"; did you mean '{near}'?" if near else " (see config/coriolis.yaml)"
        lines.append(f"unknown parameter '{name}' ignored{hint}")
    return lines


def check_set(updates: dict, current: dict, model, gravity) -> tuple[str | None, dict]:
    """(None, loaded) when every value in `updates` {name: value} can be applied, else (the
    reason, {}). `loaded` maps robot_description_file / robot_description to (urdf text,
    Dynamics) already loaded, so applying them does not parse again. `model`: the RobotModel
    in use (None: none yet)."""
    for name, value in updates.items():
        reason = validate(name, value)
        if reason is not None:
            return reason, {}
    new = {**current, **updates}
    loaded = {}
    path = updates.get("robot_description_file")
    if path:
        try:
            urdf = read_description_file(path)
            loaded["robot_description_file"] = (urdf, load_dynamics(urdf, new, gravity))
        except ModelError as exc:
            return f"robot_description_file {path}: cannot use it: {exc}", {}
    urdf = updates.get("robot_description")
    if urdf:
        try:
            loaded["robot_description"] = (urdf, load_dynamics(urdf, new, gravity))
        except ModelError as exc:
            return f"robot_description: cannot use it: {exc}", {}
    if model is not None and new["observer_enabled"] and (
        "observer_gain" in updates or "observer_enabled" in updates
    ):
        try:
            observer_gains(new["observer_gain"], model.n)
        except ValueError as exc:
            return f"{exc} (model {model.name})", {}
    return None, loaded
