"""The CoriolisState a model publishes: the message object and its serialised forms.

The result buffers of a model (:class:`~coriolis_ros.node.tick.TickOutputs`) are numpy views
of the array.array objects stored in the message, so the kernels write straight into it; the
fast path publishes prebuilt CDR bytes (:class:`~coriolis_ros.node.wire.WireState`) instead.
"""

from __future__ import annotations

from coriolis_ros.msg import CoriolisState

from .conversions import empty_field
from .wire import WireState


class OutputMessage:
    """The outgoing message of one model (joint names, output flags, frame_id)."""

    def __init__(self, model):
        self.model = model
        out = model.out
        # check_fields=True: the setters then keep an array.array('d') by reference (without
        # it they copy), so the views in `out` stay the message's storage.
        self.msg = CoriolisState(check_fields=True)
        self.msg.joint_names = list(model.joint_names)
        self.msg.position_names = list(model.position_names)
        self.msg.position = out.storage["position"]
        self.msg.velocity = out.storage["velocity"]
        self.flags_version = -1
        # WireState per (effort published, external_effort published): the message as CDR
        # bytes, filled each tick; None: publish the message object.
        self.wires = None

    def apply_flags(self, flags: dict, version: int, frame_id: str) -> str:
        """Switch fields on/off; '' or why the serialised fast path is not used."""
        model, out = self.model, self.model.out
        published = out.set_flags(flags)
        for field_name, on in published.items():
            setattr(self.msg, field_name, out.storage[field_name] if on else empty_field())
        self.msg.header.frame_id = frame_id
        self.flags_version = version
        sizes = {"position": out.nq, "velocity": model.n}
        sizes.update((f, len(out.storage[f])) for f, on in published.items() if on)
        try:
            wires = {}
            for effort in (False, True):
                for external in (False, True):
                    more = {"effort": model.n} if effort else {}
                    if external:
                        more["external_effort"] = model.n
                    wires[effort, external] = WireState(
                        model.joint_names, {**sizes, **more}, frame_id, model.position_names
                    )
            self.wires = wires
        except Exception as exc:  # noqa: BLE001 -- publish the message object instead
            self.wires = None
            return f"{type(exc).__name__}: {exc}"
        return ""

    def payload(self, has_effort: bool, has_estimate: bool, stamp):
        """What Publisher.publish takes for the values now in the model's buffers."""
        wires, out = self.wires, self.model.out
        if wires is not None:
            wire = wires[has_effort, has_estimate]
            wire.fill(out.view, stamp.sec, stamp.nanosec)
            return wire.payload()
        msg, storage = self.msg, out.storage
        msg.header.stamp = stamp
        msg.effort = storage["effort"] if has_effort else empty_field()
        msg.external_effort = storage["external_effort"] if has_estimate else empty_field()
        return msg
