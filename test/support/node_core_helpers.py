"""The node's ROS-free core wired as the node wires it, without ROS: for unit tests."""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from coriolis_ros.node.builder import ModelBuilder
from coriolis_ros.node.intake import Intake
from coriolis_ros.node.params import PARAMETERS
from coriolis_ros.node.reports import Reporter
from coriolis_ros.node.scheduler import Scheduler
from coriolis_ros.node.services import Services
from coriolis_ros.node.state import NodeState
from coriolis_ros.node.ticker import Ticker


class ListLog:
    """A logger that keeps its lines: [(level, text)]."""

    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(("info", text))

    def warning(self, text):
        self.lines.append(("warning", text))

    def error(self, text):
        self.lines.append(("error", text))

    def text(self) -> str:
        return "\n".join(t for _, t in self.lines)


class DictOutput:
    """Stands for the node's OutputMessage: the payload is a dict of copies of the fields."""

    def __init__(self, model):
        self.model = model
        self.flags_version = -1

    def apply_flags(self, flags, version, frame_id):
        self.published = self.model.out.set_flags(flags)
        self.flags_version = version
        return ""

    def payload(self, has_effort, has_estimate, stamp):
        view = self.model.out.view
        fields = {"position": view["position"].copy(), "velocity": view["velocity"].copy()}
        fields.update((f, view[f].copy()) for f, on in self.published.items() if on)
        if has_effort:
            fields["effort"] = view["effort"].copy()
        if has_estimate:
            fields["external_effort"] = view["external_effort"].copy()
        return stamp, fields


def stamp(ns: int):
    return SimpleNamespace(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class Core:
    """NodeState, Reporter, ModelBuilder, Scheduler, Ticker, Intake and Services of one node."""

    def __init__(self, urdf: str | None = None, **params):
        self.p = {spec.name: spec.default for spec in PARAMETERS}
        self.p.update(params)
        self.log = ListLog()
        self.state = NodeState(time.monotonic())
        self.reporter = Reporter(self.log, self.p["warning_period"])
        gravity = tuple(self.p["gravity"])
        self.builder = ModelBuilder(self.state, self.log, self.p, gravity, DictOutput, "/odom")
        self.published = []
        self.scheduler = Scheduler(self._tick, self.p["inline_tick_share"])
        self.ticker = Ticker(
            self.state, self.reporter, self.p, self.published.append,
            self.scheduler.tick_cost, lambda: False,
        )  # fmt: skip
        self.intake = Intake(self.state, self.reporter, self.scheduler, self.p, time.time_ns)
        self.services = Services(self.state, self.log, self.p, lambda: stamp(time.time_ns()))
        if urdf is not None:
            self.builder.build(urdf, "test")

    def _tick(self, since, inline):
        self.ticker.tick(since, inline)

    @property
    def model(self):
        return self.state.model

    def joint_state(self, names, position, velocity=(), effort=(), stamp_ns=None):
        """One message through the intake and, when it brings a new state, one tick inline."""
        stamp_ns = time.time_ns() if stamp_ns is None else stamp_ns
        enter = time.perf_counter()
        due = self.intake.joint_state(
            list(names), np.asarray(position, float), np.asarray(velocity, float),
            np.asarray(effort, float), stamp(stamp_ns), enter,
        )  # fmt: skip
        if due:
            self.ticker.tick(enter, True)
        return due
