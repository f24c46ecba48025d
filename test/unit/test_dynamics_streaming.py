"""Streaming stores (kernels/streaming.py) and the large-output path of Algorithm 2.

stream_zeros must zero exactly the array it is given, whatever its size and its alignment
against 64-byte cache lines (whole lines are written by streaming stores, the partial lines
at both ends by ordinary ones), and leave its neighbours alone.  Algorithm 2 zeroes large,
mostly zero outputs that way: its results must not depend on the output's alignment or prior
contents, nor on the row order, and must match Pinocchio on both sides of each bound (size,
share of nonzero entries).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numba.core.errors import TypingError

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics.kernels.christoffel import STREAM_BYTES
from coriolis_ros.dynamics.kernels.streaming import stream_zeros
from coriolis_ros.dynamics.model import MF_PARENT, MF_Q
from support.random_trees import random_tree
from support.oracle import FD_TOL, PinOracle, assert_close, library_and_oracle

GUARD = 7.25


@pytest.mark.parametrize("offset", range(9))
def test_stream_zeros_exactly_the_array(offset):
    buf = np.full(1200, GUARD)
    for size in list(range(0, 40)) + [63, 64, 65, 1000]:
        buf[:] = GUARD
        view = buf[offset : offset + size]
        view[:] = np.nan
        stream_zeros(view)
        assert np.all(view == 0.0), f"size {size} offset {offset}"
        assert np.all(buf[:offset] == GUARD) and np.all(buf[offset + size :] == GUARD)


def test_stream_zeros_three_dimensional_view():
    buf = np.full(5 * 7 * 11 + 3, GUARD)
    x = buf[3:].reshape(5, 7, 11)
    x[...] = np.nan
    stream_zeros(x)
    assert np.all(x == 0.0) and np.all(buf[:3] == GUARD)


def test_stream_zeros_array_not_8_byte_aligned():
    raw = bytearray(8 * 50 + 1)
    x = np.frombuffer(raw, dtype=np.float64, count=50, offset=1)
    assert x.ctypes.data % 8 == 1 and x.flags.writeable
    x[:] = np.nan
    stream_zeros(x)
    assert np.all(x == 0.0)
    assert raw[0] == 0


def test_stream_zeros_rejects_non_contiguous_arrays():
    with pytest.raises(TypingError):
        stream_zeros(np.zeros(20)[::2])


def _breadth_first(dyn) -> Dynamics:
    """The same fixed-base tree of single-DoF joints with its rows in breadth-first order."""
    model = dyn.model
    parents = [int(p) for p in model.mf[:, MF_PARENT]]
    depth = []
    for p in parents:
        depth.append(0 if p < 0 else depth[p] + 1)
    order = sorted(range(len(parents)), key=lambda r: (depth[r], r))
    new = {old: k for k, old in enumerate(order)}
    mf = model.mf[order].copy()
    mf[:, MF_PARENT] = [new[parents[old]] if parents[old] >= 0 else -1 for old in order]
    assert np.all(model.mf[:, MF_Q] == np.arange(len(parents)))  # one coordinate per row
    mf[:, MF_Q] = np.arange(len(order))

    def pick(names):
        return tuple(names[old] for old in order)

    return Dynamics(
        replace(
            model,
            mf=mf,
            joint_names=pick(model.joint_names),
            joint_types=pick(model.joint_types),
            body_links=pick(model.body_links),
            position_names=pick(model.position_names) if model.position_names else (),
        )
    )


def _is_depth_first(dyn) -> bool:
    """Every row's descendants directly follow it."""
    parents = [int(p) for p in dyn._mf[:, MF_PARENT]]
    n = len(parents)
    for r in range(n):
        inside = {r}
        for c in range(r + 1, n):
            if parents[c] in inside:
                inside.add(c)
        if max(inside) - r + 1 != len(inside):
            return False
    return True


def _streams(dyn) -> bool:
    """Whether Algorithm 2 zeroes this model's output by streaming stores: at least
    STREAM_BYTES, at most an eighth of the entries nonzero (six per chain triple)."""
    n = dyn.nv
    depth = []
    for p in (int(p) for p in dyn._mf[:, MF_PARENT]):
        depth.append(1 if p < 0 else depth[p] + 1)
    triples = sum(d * (d + 1) // 2 for d in depth)
    return n**3 * 8 >= STREAM_BYTES and 6 * triples * 8 <= n**3


@pytest.mark.parametrize(
    "topology, n, depth_first, streams",
    [
        ("serial_chain", 31, True, False),  # below STREAM_BYTES
        ("serial_chain", 32, True, False),  # large, but every entry is nonzero
        ("biped", 36, True, False),  # 29 % nonzero
        ("quadruped", 40, True, True),  # 8 % nonzero: streaming stores
        ("binary_tree", 33, True, True),
        ("binary_tree", 34, False, True),  # rows reordered breadth-first
    ],
)
def test_large_christoffel_any_alignment_order_and_prior_contents(
    topology, n, depth_first, streams
):
    urdf = random_tree(topology, n, seed=n)
    dyn, oracle = library_and_oracle(urdf)
    if not depth_first:
        dyn = _breadth_first(dyn)
        oracle = PinOracle(urdf, order=dyn.joint_names)
    assert dyn.nv == n
    assert _streams(dyn) == streams
    assert _is_depth_first(dyn) == depth_first
    q = np.random.default_rng(n).uniform(-np.pi, np.pi, dyn.nq)
    ref = dyn.christoffel(q).copy()
    assert_close(ref, oracle.christoffel_fd(q), FD_TOL, f"{topology} {n} Gamma vs FD")
    # single calls never stream (their out= stays cached); a batch's rows do, at any
    # alignment of the output and whatever it held before
    buf = np.empty(n**3 + 8)
    for offset in range(8):
        buf[:] = np.nan
        out = buf[offset : offset + n**3].reshape(n, n, n)
        dyn.christoffel(q, out=out)
        np.testing.assert_array_equal(out, ref, err_msg=f"offset {offset}")
        buf[:] = np.nan
        dyn.christoffel_batch(q[None], out=out[None])
        np.testing.assert_array_equal(out, ref, err_msg=f"batch, offset {offset}")
    Q = np.stack([q, np.random.default_rng(1).uniform(-np.pi, np.pi, dyn.nq)])
    G = np.full((2, n, n, n), np.nan)
    dyn.christoffel_batch(Q, out=G)
    np.testing.assert_array_equal(G[0], ref)
    np.testing.assert_array_equal(G[1], dyn.christoffel(Q[1]))


def test_only_the_batches_workspaces_ask_for_streaming():
    from coriolis_ros.dynamics import batch as _batch
    from coriolis_ros.dynamics.kernels.spatial import WS_STREAM

    dyn, _ = library_and_oracle(random_tree("quadruped", 40, seed=40))
    assert dyn.engine.ws[0, WS_STREAM] == 0.0
    assert dyn.clone().engine.ws[0, WS_STREAM] == 0.0
    wss, _ = _batch.workspaces(dyn.engine)
    assert np.all(wss[:, 0, WS_STREAM] == 1.0)
