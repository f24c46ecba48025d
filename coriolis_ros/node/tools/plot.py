"""``coriolis-ros plot [TOPIC]``: vector fields of ``coriolis_state`` over time (matplotlib).

With ``-o FILE`` it records for ``--duration`` seconds (or ``--count`` messages) and writes
one panel per field, one line per joint, against the stamps; without it, it draws the last
``--window`` seconds live in a window until the window is closed or Ctrl-C (a display is
needed). Default fields: ``coriolis_force`` and ``gravity_force``, and ``external_effort``
when the node's momentum observer fills it.
"""

from __future__ import annotations

import os
import time
from collections import deque

import numpy as np

from coriolis_ros.messages import VECTOR_FIELDS, state_to_numpy

from .session import EXIT_OK, EXIT_USAGE, Session, ToolError, message_class

DEFAULT_FIELDS = ("coriolis_force", "gravity_force")
PLOTTABLE = tuple(f for f in VECTOR_FIELDS if f != "position")  # position: nq on a free flyer


def _fields(args) -> tuple[str, ...]:
    fields = tuple(args.field or DEFAULT_FIELDS)
    wrong = [f for f in fields if f not in PLOTTABLE]
    if wrong:
        raise ToolError(
            f"cannot plot {', '.join(wrong)}: choose vector fields ({', '.join(PLOTTABLE)})",
            EXIT_USAGE,
        )
    return fields


def _pyplot(live: bool):
    try:
        import matplotlib
    except ImportError:
        raise ToolError("plot needs matplotlib: pip install matplotlib", EXIT_USAGE) from None
    if not live:
        matplotlib.use("Agg")
    elif not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise ToolError("no display for a live plot: give -o FILE.png", EXIT_USAGE)
    import matplotlib.pyplot as plt

    return plt


class Recording:
    """The received states' stamps and fields (the newest ``keep`` when given)."""

    def __init__(self, fields, keep: int | None = None):
        self.fields = fields
        self.t = deque(maxlen=keep)
        self.rows = {f: deque(maxlen=keep) for f in fields}
        self.names: list[str] = []

    def add(self, msg) -> None:
        s = state_to_numpy(msg)
        if s["joint_names"] != self.names:  # a new model: start again
            self.names = s["joint_names"]
            self.t.clear()
            for rows in self.rows.values():
                rows.clear()
        self.t.append(msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec)
        n = len(self.names)
        for f in self.fields:
            value = s.get(f)
            self.rows[f].append(np.full(n, np.nan) if value is None else value)

    def draw(self, plt, axes) -> None:
        t = np.asarray(self.t) - (self.t[0] if self.t else 0.0)
        for ax, f in zip(axes, self.fields):
            ax.clear()
            ax.set_ylabel(f)
            if self.t:
                ax.plot(t, np.asarray(self.rows[f]))
            ax.grid(True, alpha=0.3)
        axes[-1].set_xlabel("time since the first stamp (s)")
        if self.names and len(self.names) <= 12:
            axes[0].legend(self.names, fontsize="small", ncol=2, loc="upper right")


def plot(args) -> int:
    fields = _fields(args)
    if not (args.timeout > 0 and args.duration > 0 and args.window > 0):
        raise ToolError("--timeout, --duration and --window must be positive", EXIT_USAGE)
    if args.count is not None and args.count < 1:
        raise ToolError("--count must be at least 1", EXIT_USAGE)
    live = args.output is None
    plt = _pyplot(live)
    with Session("plot") as session:
        topic = session.resolve(args.topic)
        msg_type = message_class(session.topic_type(topic, args.timeout))
        if "joint_names" not in msg_type.get_fields_and_field_types():
            raise ToolError(f"{topic} is not a CoriolisState topic", EXIT_USAGE)
        rec = Recording(fields, keep=None if not live else 20000)
        session.node.create_subscription(msg_type, topic, rec.add, session.publisher_qos(topic))
        if not session.spin_until(lambda: len(rec.t) > 0, args.timeout):
            raise ToolError(f"no message on {topic} within {args.timeout:g} s")
        figure, axes = plt.subplots(len(fields), 1, sharex=True, squeeze=False,
                                    figsize=(10, 2.6 * len(fields)))  # fmt: skip
        axes = axes[:, 0]
        figure.suptitle(topic)
        if live:
            return _live(session, rec, plt, figure, axes, args.window)
        end = time.monotonic() + args.duration
        session.spin_until(
            lambda: time.monotonic() >= end or (args.count and len(rec.t) >= args.count), None
        )
    rec.draw(plt, axes)
    figure.savefig(args.output, dpi=100)
    print(f"wrote {args.output}: {len(rec.t)} messages of {topic}, {', '.join(fields)}")
    return EXIT_OK


def _live(session, rec, plt, figure, axes, window: float) -> int:
    plt.ion()
    figure.show()
    while plt.fignum_exists(figure.number):
        session.spin_until(lambda: False, 0.2)
        while rec.t and rec.t[-1] - rec.t[0] > window:
            rec.t.popleft()
            for rows in rec.rows.values():
                rows.popleft()
        rec.draw(plt, axes)
        plt.pause(0.01)
    return EXIT_OK
