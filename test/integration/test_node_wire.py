"""WireState: the node's serialised CoriolisState reads back as rclpy's own serialisation."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for the wire format")

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

from coriolis_ros.msg import CoriolisState  # noqa: E402
from coriolis_ros.node.conversions import to_field  # noqa: E402
from coriolis_ros.node.params import OUTPUT_FIELDS  # noqa: E402
from coriolis_ros.node.tick import TickOutputs  # noqa: E402
from coriolis_ros.node.wire import WireState  # noqa: E402


def _reference(names, arrays, fields, frame_id, sec, nanosec) -> bytes:
    msg = CoriolisState()
    msg.joint_names = list(names)
    msg.header.frame_id = frame_id
    msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
    for name in fields:
        setattr(msg, name, to_field(arrays[name]))
    return serialize_message(msg)


@pytest.mark.parametrize("n", [1, 2, 9, 44])
@pytest.mark.parametrize("frame_id", ["", "base_link", "é"])
@pytest.mark.parametrize("off", [(), ("mass_matrix_derivative",), ("coriolis_matrix", "momentum")])
def test_wire_bytes_equal_rclpy_serialisation(n, frame_id, off):
    rng = np.random.default_rng(n)
    names = [f"joint_{k}" + "x" * (k % 3) for k in range(n)]
    out = TickOutputs(n)
    published = out.set_flags({p: f not in off for f, p, _ in OUTPUT_FIELDS})
    fields = ["position", "velocity"] + [f for f, on in published.items() if on]
    sizes = {f: len(out.storage[f]) for f in fields}
    wire = WireState(names, sizes, frame_id)
    for sec, nanosec in ((1_700_000_000, 123_456_789), (0, 0), (-5, 999_999_999)):
        for view in out.view.values():
            view[...] = rng.normal(size=view.shape) * 10.0 ** rng.integers(-300, 300)
        wire.fill(out.view, sec, nanosec)
        payload = wire.payload()
        # Same length and content as rclpy's serialisation (the bytes themselves may differ
        # in CDR padding, which the serialiser leaves uninitialised).
        reference = _reference(names, out.view, fields, frame_id, sec, nanosec)
        assert len(payload) == len(reference)
        assert deserialize_message(reference, CoriolisState) == deserialize_message(
            payload, CoriolisState
        )
        back = deserialize_message(payload, CoriolisState)
        assert (back.header.stamp.sec, back.header.stamp.nanosec) == (sec, nanosec)
        assert list(back.joint_names) == names and back.header.frame_id == frame_id
        for f, _, _ in OUTPUT_FIELDS:
            expected = out.view[f].reshape(-1) if f in fields else np.empty(0)
            np.testing.assert_array_equal(np.asarray(getattr(back, f)), expected)


def test_wire_fill_rejects_a_wrong_length():
    # Field lengths that differ from the storage are caught by fill (shape mismatch), not
    # published as garbage.
    out = TickOutputs(3)
    wire = WireState(["a", "b", "c"], {"position": 3, "velocity": 3, "mass_matrix": 9})
    out.view["mass_matrix"] = np.zeros(4)
    with pytest.raises(ValueError):
        wire.fill(out.view, 0, 0)


@pytest.mark.parametrize("n", [7, 18])
def test_wire_floating_base_layout_equals_rclpy_serialisation(n):
    """Floating base: position has nq = n + 1 entries and position_names is filled."""
    rng = np.random.default_rng(7)
    names = [f"j{k}" for k in range(n)]
    position_names = [f"p{k}" for k in range(n + 1)]
    out = TickOutputs(n, n + 1)
    published = out.set_flags({p: True for _, p, _ in OUTPUT_FIELDS})
    fields = ["position", "velocity"] + [f for f, on in published.items() if on]
    sizes = {f: len(out.storage[f]) for f in fields}
    assert sizes["position"] == n + 1 and sizes["velocity"] == n
    wire = WireState(names, sizes, "odom", position_names)
    for view in out.view.values():
        view[...] = rng.normal(size=view.shape)
    wire.fill(out.view, 12, 34)
    back = deserialize_message(wire.payload(), CoriolisState)
    msg = deserialize_message(_reference(names, out.view, fields, "odom", 12, 34), CoriolisState)
    msg.position_names = position_names
    assert back == msg
    assert list(back.position_names) == position_names
    np.testing.assert_array_equal(back.position, out.view["position"])


def test_wire_fill_allocates_no_arrays():
    import tracemalloc

    n = 4000  # one float64 array of n = 32 KB, far above Python-object noise
    out = TickOutputs(n)
    fields = ("position", "velocity", "coriolis_force", "gravity_force", "momentum")
    wire = WireState([f"j{k}" for k in range(n)], {f: n for f in fields})
    wire.fill(out.view, 1, 2)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        for k in range(1000):
            wire.fill(out.view, k, k)
        growth = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert growth < 8 * n // 2, growth


@pytest.mark.parametrize("frame_id", ["world", "", "é_frame"])
def test_wire_wrench_bytes_equal_rclpy_serialisation(frame_id):
    """WireWrench's bytes against rclpy's serialisation of the same WrenchStamped, over stamps
    at the int32 / uint32 limits and values across the double range, refilled in place."""
    from geometry_msgs.msg import WrenchStamped

    from coriolis_ros.node.wire import WireWrench

    rng = np.random.default_rng(3)
    wire = WireWrench(frame_id)
    for sec, nanosec in ((1_700_000_000, 123_456_789), (0, 0), (-5, 999_999_999),
                         (2**31 - 1, 2**32 - 1)):  # fmt: skip
        w = rng.normal(size=6) * 10.0 ** rng.integers(-300, 300, 6)
        wire.fill(w, sec, nanosec)
        msg = WrenchStamped()
        msg.header.frame_id = frame_id
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nanosec
        f, m = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z = (float(v) for v in w[:3])
        m.x, m.y, m.z = (float(v) for v in w[3:])
        assert wire.payload() == serialize_message(msg)
        back = deserialize_message(wire.payload(), WrenchStamped)
        assert [back.wrench.force.x, back.wrench.torque.z] == [w[0], w[5]]
