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
