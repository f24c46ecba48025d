"""One node parameter's declaration: name, default, description, range (ROS-free)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParamSpec:
    name: str
    default: object
    description: str
    read_only: bool = False
    minimum: float | int | None = None
    maximum: float | int | None = None
    constraints: str = ""
    dynamic_typing: bool = False  # the value may change type (observer_gain: double or list)
    array_type: str = ""  # an array parameter whose default is empty: "string", "double", ...
