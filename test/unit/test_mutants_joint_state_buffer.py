"""stream.joint_state_buffer pieces the rest of the suite left open (mutation testing)."""

from __future__ import annotations

import array

import numpy as np

from coriolis_ros.stream import joint_state_buffer as jsb


def test_as_float64_converts_arrays_of_other_types_by_value():
    """Only a double array is read in place; floats, ints and longs are converted by value
    (reading their bytes as doubles would give other numbers, or another length)."""
    for code, values in (("f", [1.5, -2.25, 3.0]), ("i", [1, -2, 3]), ("q", [7, 8])):
        got = jsb.as_float64(array.array(code, values))
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, np.array(values, dtype=np.float64))


def test_staleness_depends_on_time_differences_only():
    """A clock whose readings are negative (any origin) gives the same stale joints as the
    same readings shifted to positive values."""
    for shift in (0.0, -100.0, -1e6):
        buf = jsb.JointStateBuffer(("a", "b", "c"))
        buf.update(["a", "b", "c"], [0, 0, 0], [0, 0, 0], 0, "s", 10.0 + shift)
        buf.update(["a"], [0], [], 0, "s", 11.0 + shift)  # a's position newer, its velocity not
        assert buf.stale(10.25 + shift, 0.5) == (), shift
        assert buf.stale(11.0 + shift, 0.5) == ("b", "c"), shift
        assert buf.stale_velocity(10.5 + shift, 0.75) == (), shift
        assert buf.stale_velocity(11.0 + shift, 0.75) == ("a",), shift  # b, c: stale altogether


def test_a_follower_with_a_huge_multiplier_bounds_its_leader_below_one():
    """Multiplier 1e60 (bound_followers takes any finite one): the leader's limit is about
    1e-10, so 0.5 (follower 5e59) is refused and 1e-11 (follower 1e49) accepted; the limit is
    compared exactly, not to within a unit."""
    buf = jsb.JointStateBuffer(("a", "b"), extra_names=("f",))
    buf.bound_followers({"f": ("a", 1e60, 0.0)})
    for names in (["a", "b"], ["b", "a"]):  # a layout seen first, then again (known)
        for _ in range(2):
            refused = buf.update(names, [0.5, 0.5], [], 0, "s", 1.0)
            assert refused.status == jsb.REJECTED and "f" in refused.reason, names
            ok = buf.update(names, [1e-11, 1e-11], [], 0, "s", 1.0)
            assert ok.status == jsb.ACCEPTED, (names, ok.reason)
            velocity = buf.update(names, [0.0, 0.0], [0.5, 0.5], 0, "s", 1.0)
            assert velocity.status == jsb.REJECTED and "velocity" in velocity.reason, names
