"""Four states per pass (kernels.lanes): the lane type's arithmetic, and Algorithm 1 compiled
for lanes against the single-state kernel, bitwise, lane by lane."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.kernels.coriolis_matrix import coriolis_lanes
from coriolis_ros.dynamics.kernels.lanes import (
    lane,
    lane_rows,
    lane_vector,
    lanes,
    pack,
    sincos_at,
)
from support.oracle import erd_urdf

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)


@njit
def _arithmetic(x, y, out):
    a, b = lane_vector(x), lane_vector(y)
    o = lanes(out)
    u = a[0]
    v = b[0]
    o[0, 0] = u + v
    o[0, 1] = u - v
    o[0, 2] = u * v
    o[0, 3] = u / v
    o[0, 4] = -u
    o[0, 5] = math.sqrt(v)
    o[0, 6] = 2.0 * u + 1.0  # numbers are splatted
    w = 0.0  # a number on one path, F4 on the other
    if x.shape[0] > 0:
        w = u * v + v
    o[0, 7] = w
    o[0, 8] = 3.5  # a number stored is splatted
    o[0, 9] = pack(1.0, 2.0, 3.0, 4.0)
    return lane(u, 2)


def test_lane_arithmetic_is_lane_wise_ieee():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(1, 4)), rng.uniform(0.5, 2.0, size=(1, 4))
    out = np.zeros((1, 10, 4))
    third = _arithmetic(x, y, out)
    u, v = x[0], y[0]
    want = [u + v, u - v, u * v, u / v, -u, np.sqrt(v), 2.0 * u + 1.0, None, np.full(4, 3.5)]
    for k, w in enumerate(want):
        if w is not None:
            assert np.array_equal(out[0, k], w), k
    # u * v + v: fused or not, as the scalar kernels' contract flag allows: within a rounding
    assert np.allclose(out[0, 7], u * v + v, rtol=1e-15, atol=0)
    assert third == u[2]
    assert out[0, 9].tolist() == [1.0, 2.0, 3.0, 4.0]


@njit
def _write_rows(M, t0, count, value):
    rows = lane_rows(M, t0, count)
    m = rows.shape[0]
    for i in range(m):
        for j in range(m):
            rows[i, j] = value + pack(0.0, 1.0, 0.0, 0.0)  # idle lanes 2, 3 repeat lane 0


def test_lane_rows_write_the_groups_rows_only():
    M = np.full((7, 3, 3), np.nan)
    _write_rows(M, 4, 2, 10.0)  # a group of two states at rows 4 and 5
    assert np.all(M[4] == 10.0) and np.all(M[5] == 11.0)
    assert np.isnan(M[:4]).all() and np.isnan(M[6]).all()  # idle lanes go to row 4 too


def _states(dyn, T, seed):
    rng = np.random.default_rng(seed)
    Q = np.array([dyn.integrate(dyn.neutral(), rng.normal(0, 1.5, dyn.nv)) for _ in range(T)])
    return Q, rng.normal(0, 1, (T, dyn.nv))


@pytest.mark.parametrize(
    "name, root_joint",
    [("ur5", "fixed"), ("panda", "fixed"), ("talos_full", "fixed"), ("solo12", "floating"),
     ("solo12", "planar")],
)  # fmt: skip
def test_coriolis_lanes_equals_the_single_state_kernel_bitwise(name, root_joint):
    dyn = Dynamics.from_urdf(str(erd_urdf(name)), root_joint=root_joint, mimic="independent")
    n = dyn.nv
    Q, V = _states(dyn, 7, seed=len(name))
    ws4 = np.zeros((*dyn.engine.ws.shape, 4))
    S = np.zeros((3, n, n, 4))
    out = [np.full((7, n, n), np.nan) for _ in range(3)]
    for t0 in (0, 4):  # a full group, then one of three states (its idle lane repeats t0)
        count = min(4, 7 - t0)
        rows = [t0 + (k if k < count else 0) for k in range(4)]
        q4, v4 = np.ascontiguousarray(Q[rows].T), np.ascontiguousarray(V[rows].T)
        coriolis_lanes(dyn._mf, q4, v4, ws4, S, *out, t0, count)
    for t in range(7):
        want = dyn.coriolis(Q[t], V[t])
        for k in range(3):
            assert np.array_equal(out[k][t], want[k]), (t, k)


def test_a_state_gives_the_same_bits_in_every_lane():
    dyn = Dynamics.from_urdf(str(erd_urdf("panda")), mimic="independent")
    n = dyn.nv
    Q, V = _states(dyn, 1, seed=3)
    ws4, S = np.zeros((*dyn.engine.ws.shape, 4)), np.zeros((3, n, n, 4))
    out = [np.zeros((4, n, n)) for _ in range(3)]
    q4, v4 = np.repeat(Q.T, 4, axis=1), np.repeat(V.T, 4, axis=1)
    coriolis_lanes(dyn._mf, np.ascontiguousarray(q4), np.ascontiguousarray(v4), ws4, S, *out, 0, 4)
    for k in range(3):
        assert all(np.array_equal(out[k][0], out[k][lane_k]) for lane_k in range(1, 4))


@njit
def _sincos_both(x4, out4, out1):
    q = lane_vector(x4)
    o = lanes(out4)
    for k in range(x4.shape[0]):
        o[k, 0], o[k, 1] = sincos_at(q, k)
        for ln in range(4):
            out1[k, ln, 0], out1[k, ln, 1] = sincos_at(x4[k], ln)


def test_lane_sines_and_cosines_equal_the_scalar_ones_bitwise():
    rng = np.random.default_rng(7)
    quarter = np.arange(-40, 40) * (math.pi / 4)  # every quadrant, on and near its edges
    angles = np.concatenate(
        [
            quarter,
            np.nextafter(quarter, np.inf),
            rng.uniform(-10, 10, 400),
            rng.uniform(-1e3, 1e3, 200),
            [7.9e5, -7.99e5, 8e5, -8e5],  # within the reduction limit
            [8.000001e5, -3e6, 1e15, 0.0],  # beyond: libm (the whole group)
            [-0.0, 1e-300, -1e-300, 5e-324],
        ]
    )
    assert len(angles) % 4 == 0
    angles = angles.reshape(-1, 4)
    out4, out1 = np.zeros((len(angles), 2, 4)), np.zeros((len(angles), 4, 2))
    _sincos_both(np.ascontiguousarray(angles), out4, out1)
    assert np.array_equal(out4, out1.transpose(0, 2, 1))
    assert np.allclose(out4[:, 0], np.cos(angles), atol=1e-15, rtol=0)
