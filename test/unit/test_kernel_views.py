"""kernels.views.shaped: the C-contiguous view of a packed array under another shape."""

import numpy as np
import pytest
from numba import njit

from coriolis_ros.dynamics.kernels.views import shaped


@njit(cache=False, _nrt=False)
def _matrix(flat, start, rows, cols, r, c, value):
    """Writes value at [r, c] of the (rows, cols) view of flat[start:start + rows * cols]."""
    view = shaped(flat[start : start + rows * cols], (rows, cols))
    view[r, c] = value
    return view.shape[0], view.shape[1], view.strides[0], view.strides[1]


@njit(cache=False, _nrt=False)
def _cube_sum(flat, a, b, c):
    view = shaped(flat, (a, b, c))
    total = 0.0
    for i in range(a):
        for j in range(b):
            for k in range(c):
                total += view[i, j, k] * (100 * i + 10 * j + k)
    return total


@njit(cache=False, _nrt=False)
def _flat_rows(ws, first, k, value):
    """Entry k of the rows from ``first`` on, as one flat array; then writes value there."""
    flat = shaped(ws[first:], ((ws.shape[0] - first) * ws.shape[1],))
    old = flat[k]
    flat[k] = value
    return old


def test_a_matrix_view_writes_where_numpy_reshape_says():
    flat = np.zeros(40)
    for r in range(3):
        for c in range(4):
            flat[:] = 0.0
            shape = _matrix(flat, 5, 3, 4, r, c, 7.0)
            assert shape == (3, 4, 32, 8)
            expected = np.zeros(40)
            expected[5:17].reshape(3, 4)[r, c] = 7.0
            np.testing.assert_array_equal(flat, expected)


def test_a_three_index_view_reads_in_c_order():
    flat = np.random.default_rng(1).standard_normal(24)
    cube = flat.reshape(2, 3, 4)
    weights = np.add.outer(np.add.outer(100 * np.arange(2), 10 * np.arange(3)), np.arange(4))
    assert _cube_sum(flat, 2, 3, 4) == pytest.approx(float(np.sum(cube * weights)), rel=1e-14)


def test_rows_of_a_matrix_flattened_share_its_data():
    ws = np.arange(20.0).reshape(5, 4)
    for k in range(12):
        assert _flat_rows(ws, 2, k, -1.0) == 8.0 + k
    np.testing.assert_array_equal(ws[:2], np.arange(8.0).reshape(2, 4))
    assert (ws[2:] == -1.0).all()


@pytest.mark.parametrize("size", [23, 25])
def test_a_view_of_another_size_is_refused(size):
    """One element short and one too many: both raise (24 is the view's size)."""
    with pytest.raises(ValueError, match="the view's size differs"):
        _cube_sum(np.zeros(size), 2, 3, 4)
    assert _cube_sum(np.ones(24), 2, 3, 4) == 2 * 3 * 4 * (50 + 10 + 1.5)

