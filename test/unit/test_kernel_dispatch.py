"""Frozen kernels report an array argument of the wrong kind at once (kernel_table): a list, a
tuple, another dtype or layout, a read-only array for a writeable parameter. Numba's own
search for conversions types every argument twice on each such call (about 0.4 ms on a
seven-joint arm, where the call itself takes microseconds); arguments it can convert (an int
for a float) still go through it."""

import numpy as np
import pytest
from numba import njit, types

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.kernel_table import compile_frozen
from coriolis_ros.robots import robot_path


@njit(cache=False)
def _scaled_sum(a, x):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * x
    a[0] = acc
    return 1


F1 = types.Array(types.float64, 1, "C")
KERNEL = compile_frozen(_scaled_sum, (F1, types.float64))


def test_a_matching_call_and_a_converted_scalar_run():
    a = np.array([1.0, 2.0, 3.0])
    assert KERNEL(a, 2) == 1 and a[0] == 12.0  # the int 2 converted to a float by Numba


@pytest.mark.parametrize(
    "arg",
    [
        [1.0, 2.0],
        (1.0, 2.0),
        np.zeros(3, dtype=np.float32),
        np.zeros(3, dtype=np.int64),
        np.zeros(6)[::2],
        np.zeros((3, 1)),
    ],
    ids=["list", "tuple", "float32", "int64", "strided", "2-d"],
)
def test_an_array_argument_of_the_wrong_kind_is_refused_at_once(arg):
    with pytest.raises(TypeError, match="_scaled_sum: an array argument of the wrong kind"):
        KERNEL(arg, 1.0)


def test_a_read_only_array_for_a_writeable_parameter_is_refused_at_once():
    a = np.zeros(3)
    a.flags.writeable = False
    with pytest.raises(TypeError, match="an array argument of the wrong kind"):
        KERNEL(a, 1.0)


def test_other_mismatches_get_numba_s_own_explanation():
    with pytest.raises(TypeError, match="No matching definition"):
        KERNEL(np.zeros(3), "x")


def test_the_library_still_converts_what_it_is_given():
    dyn = Dynamics.from_urdf(robot_path("arm7"))
    q, qd = np.linspace(-1, 1, 7), np.linspace(0.5, -0.5, 7)
    want = dyn.coriolis(q, qd)
    ro = q.copy()
    ro.flags.writeable = False
    for given in (list(q), tuple(q), ro, np.repeat(q, 2)[::2]):
        for got, ref in zip(dyn.coriolis(given, list(qd)), want, strict=True):
            np.testing.assert_array_equal(got, ref)
    q32 = q.astype(np.float32)
    for got, ref in zip(dyn.coriolis(q32, qd), dyn.coriolis(q32.astype(np.float64), qd),
                        strict=True):  # fmt: skip
        np.testing.assert_array_equal(got, ref)
