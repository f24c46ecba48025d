"""batch: the status decoding and the input and output checks, called directly.

The batch kernels report ``status + 256 * row`` (``kernels.batch``'s docstring; the status
codes are those of ``kernels.kinematics``); ``fail`` turns that into the message naming the
input and the row, which the batch tests only reach for the statuses a bad input row gives.
Here every status is decoded (the wrong-length ones, the fourth input's, the unknown ones
as internal errors) and the row is read back for rows 0, 1, 255, 256 and a million.
``rows`` takes an array as it is only when it is a writeable C-contiguous float64 matrix
(the docstring's "x itself when it already is"), ``same_rows`` and ``outputs`` are checked
on both sides of each condition.
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics, batch
from coriolis_ros.robots import robot_path

ROW = 256
BAD_Q, BAD_QD, BAD_QDD, BAD_QUATERNION = 1, 2, 3, 5
SIZE_Q, ROWS, SIZE_OUT, OVERLAP = 11, 14, 20, 21
HUGE = r"has a NaN, infinite or huge \(beyond ±1e\+50\) entry$"
ROW_INDICES = (0, 1, 255, 256, 10**6)


@pytest.mark.parametrize("row", ROW_INDICES)
def test_a_bad_entry_names_the_input_and_the_row(row):
    names = ("Q", "V", "A")
    for code, name in ((BAD_Q, "Q"), (BAD_QD, "V"), (BAD_QDD, "A")):
        with pytest.raises(ValueError, match=rf"^{name} row {row} {HUGE}"):
            batch.fail(code + ROW * row, names)
    four = ("Q", "V", "QdR", "QddR")
    with pytest.raises(ValueError, match=rf"^QddR row {row} {HUGE}"):
        batch.fail(BAD_QDD + 1 + ROW * row, four)
    with pytest.raises(ValueError, match=rf"^Q row {row} has a zero quaternion \(norm below "
                       r"1e-10\) for a floating joint$"):  # fmt: skip
        batch.fail(BAD_QUATERNION + ROW * row, names)
    for k, name in enumerate(names):
        with pytest.raises(ValueError, match=rf"^{name} row {row} has the wrong length$"):
            batch.fail(SIZE_Q + k + ROW * row, names)


def test_the_other_statuses():
    names = ("Q", "V", "A")
    with pytest.raises(ValueError, match=r"^out arrays must not share memory$"):
        batch.fail(OVERLAP, names)
    with pytest.raises(ValueError, match=r"^out arrays have the wrong shape$"):
        batch.fail(SIZE_OUT, names)
    with pytest.raises(ValueError, match=r"^Q, V, A must have the same number of rows$"):
        batch.fail(ROWS, names)
    with pytest.raises(ValueError, match=r"^Q, V must have the same number of rows$"):
        batch.fail(ROWS, names[:2])
    # a fourth input's status with three inputs, and codes no kernel gives
    for status in (BAD_QDD + 1, 6, SIZE_Q - 1, 15, SIZE_OUT - 1, OVERLAP + 1, ROW - 1,
                   BAD_QDD + 1 + 3 * ROW):  # fmt: skip
        with pytest.raises(RuntimeError, match=rf"^internal error: batch kernel status {status}$"):
            batch.fail(status, names)
    for fewer in (names[:1], names[:2]):  # a fourth input's status, one or two inputs
        with pytest.raises(RuntimeError, match=r"^internal error: batch kernel status 4$"):
            batch.fail(BAD_QDD + 1, fewer)


class Refusing:
    """A stand-in for a coordinate map: refuses rows whose first entry is 7 (a follower it
    would put out of range), naming what it was given."""

    def __init__(self):
        self.calls = []

    def refusal(self, row, what, position):
        self.calls.append((row.tolist(), what, position))
        return f"{what}: a follower beyond (position={position})" if row[0] == 7 else None


def test_a_coupled_models_row_is_explained_by_its_map():
    Q = np.zeros((4, 2))
    V = np.zeros((4, 2))
    Q[2, 0] = 7.0
    V[3, 0] = 7.0
    cmap = Refusing()
    with pytest.raises(ValueError, match=r"^Q row 2: a follower beyond \(position=True\)$"):
        batch.fail(BAD_Q + ROW * 2, ("Q", "V"), cmap, (Q, V))
    with pytest.raises(ValueError, match=r"^V row 3: a follower beyond \(position=False\)$"):
        batch.fail(BAD_QD + ROW * 3, ("Q", "V"), cmap, (Q, V))
    # the map finds nothing wrong with the row: the usual message
    with pytest.raises(ValueError, match=rf"^V row 1 {HUGE}"):
        batch.fail(BAD_QD + ROW * 1, ("Q", "V"), cmap, (Q, V))
    assert cmap.calls == [([7.0, 0.0], "Q row 2", True), ([7.0, 0.0], "V row 3", False),
                          ([0.0, 0.0], "V row 1", False)]  # fmt: skip
    # an input the map was not given (only Q here): not asked
    cmap.calls.clear()
    with pytest.raises(ValueError, match=rf"^V row 3 {HUGE}"):
        batch.fail(BAD_QD + ROW * 3, ("Q", "V"), cmap, (Q,))
    assert cmap.calls == []
    with pytest.raises(ValueError, match=rf"^A row 3 {HUGE}"):
        batch.fail(BAD_QDD + ROW * 3, ("Q", "V", "A"), cmap, (Q,))
    assert cmap.calls == []
    with pytest.raises(ValueError, match=rf"^Q row 2 {HUGE}"):  # no map: the usual message
        batch.fail(BAD_Q + ROW * 2, ("Q", "V"), None, (Q, V))


def test_rows_takes_a_ready_array_as_it_is_and_copies_any_other():
    X = np.arange(6.0).reshape(2, 3)
    assert batch.rows(X, "X", 3) is X
    readonly = X.copy()
    readonly.flags.writeable = False
    others = {
        "float32": X.astype(np.float32),
        "int": X.astype(np.int64),
        "Fortran": np.asfortranarray(np.arange(9.0).reshape(3, 3))[:2],
        "strided": np.arange(12.0).reshape(2, 6)[:, ::2],
        "read-only": readonly,
        "subclass": np.arange(6.0).reshape(2, 3).view(np.ma.MaskedArray),
        "list": X.tolist(),
    }
    for what, x in others.items():
        got = batch.rows(x, "X", 3)
        assert got is not x, what
        assert type(got) is np.ndarray and got.dtype == np.float64, what
        assert got.flags.c_contiguous and got.flags.writeable, what
        assert np.array_equal(got, np.asarray(x, dtype=float)), what
    with pytest.raises(ValueError, match=r"^X must have shape \(T, 3\), got \(2, 4\)$"):
        batch.rows(np.zeros((2, 4)), "X", 3)
    with pytest.raises(ValueError, match=r"^X must have shape \(T, 3\), got \(3,\)$"):
        batch.rows(np.zeros(3), "X", 3)
    with pytest.raises(ValueError, match=r"^X must have shape \(T, 3\), got \(1, 2, 3\)$"):
        batch.rows(np.zeros((1, 2, 3)), "X", 3)
    with pytest.raises(ValueError, match=r"^X must be a \(T, 3\) array of numbers: "):
        batch.rows([["a", "b", "c"]], "X", 3)
    assert batch.rows(np.zeros((0, 3)), "X", 3).shape == (0, 3)


def test_same_rows():
    one, two = np.zeros((1, 2)), np.zeros((2, 2))
    assert batch.same_rows({"Q": two}) == 2
    assert batch.same_rows({"Q": two, "V": np.zeros((2, 5)), "A": two}) == 2
    assert batch.same_rows({"Q": np.zeros((0, 2)), "V": np.zeros((0, 2))}) == 0
    with pytest.raises(ValueError, match=r"^Q, V must have the same number of rows, got Q: 2, "
                       r"V: 1$"):  # fmt: skip
        batch.same_rows({"Q": two, "V": one})
    with pytest.raises(ValueError, match=r"^Q, V, A must have the same number of rows, got Q: 2,"
                       r" V: 2, A: 1$"):  # fmt: skip
        batch.same_rows({"Q": two, "V": two, "A": one})


def test_outputs():
    new = batch.outputs(None, [(2, 3), (4,)])
    assert [a.shape for a in new] == [(2, 3), (4,)]
    assert all(type(a) is np.ndarray and a.dtype == np.float64 for a in new)
    a, b = np.zeros((2, 3)), np.zeros(4)
    got = batch.outputs((a, b), [(2, 3), (4,)])
    assert got[0] is a and got[1] is b and isinstance(got, tuple)
    assert batch.outputs([a, b], [(2, 3), (4,)])[1] is b
    (only,) = batch.outputs(a, [(2, 3)])  # one array for one output
    assert only is a
    with pytest.raises(ValueError, match=r"^out must be a tuple of 2 arrays$"):
        batch.outputs(a, [(2, 3), (4,)])
    with pytest.raises(ValueError, match=r"^out must be a tuple of 2 arrays$"):
        batch.outputs((a, b, b), [(2, 3), (4,)])
    with pytest.raises(ValueError, match=r"^out must be a tuple of 1 arrays$"):
        batch.outputs(3.0, [(2, 3)])
    readonly = np.zeros(4)
    readonly.flags.writeable = False
    bad = [("ndarray float32", np.zeros(4, np.float32)),
           ("ndarray float64", np.zeros((4, 2))[:, 0]),  # not contiguous
           ("ndarray float64", readonly),
           ("MaskedArray float64", np.ma.zeros(4)),
           ("list $", [0.0] * 4)]  # fmt: skip
    for got_text, arr in bad:
        with pytest.raises(ValueError, match=r"^out arrays must be writeable C-contiguous "
                           rf"float64, got {got_text}"):  # fmt: skip
            batch.outputs((a, arr), [(2, 3), (4,)])
    with pytest.raises(ValueError, match=r"^out array has shape \(5,\), expected \(4,\)$"):
        batch.outputs((a, np.zeros(5)), [(2, 3), (4,)])


def test_outputs_sharing_memory_are_refused_whichever_two_they_are():
    """Every pair of out arrays is compared, the neighbours too: for three outputs, (0, 1),
    (1, 2) and (0, 2), each an array given twice or two views of one buffer (overlapping
    halves); three arrays of their own, or views of disjoint parts of one buffer, pass."""
    shapes = [(2, 3)] * 3
    buffer = np.zeros(3 * 6)
    parts = [buffer[6 * k : 6 * k + 6].reshape(2, 3) for k in range(3)]  # disjoint views
    assert not any(np.shares_memory(parts[i], parts[j]) for i in range(3) for j in range(i))
    got = batch.outputs(tuple(parts), shapes)
    assert all(g is p for g, p in zip(got, parts, strict=True))
    fresh = tuple(np.zeros((2, 3)) for _ in range(3))
    assert all(g is f for g, f in zip(batch.outputs(fresh, shapes), fresh, strict=True))
    overlapping = buffer[3:9].reshape(2, 3)  # the second half of part 0, the first of part 1
    assert np.shares_memory(overlapping, parts[0]) and np.shares_memory(overlapping, parts[1])
    for i, j in ((0, 1), (1, 2), (0, 2)):
        twice = list(fresh)
        twice[j] = fresh[i]  # one array given twice
        halves = list(fresh)
        halves[i], halves[j] = parts[0], overlapping  # two views that overlap in part
        for arrays in (twice, halves):
            with pytest.raises(ValueError, match=r"^out arrays must not share memory$"):
                batch.outputs(tuple(arrays), shapes)


@pytest.mark.parametrize("name, coupled", [("arm7", False), ("arm7_rotors", True)])
def test_batch_workspaces_say_their_outputs_are_fresh_unless_coupled(name, coupled):
    """``ws[0, WS_STREAM]`` (column 78 of row 0, ``kernels.spatial``) is 1.0 in the batches'
    workspaces, whose outputs are fresh memory (Gamma may then be zeroed by streaming
    stores), 0.0 in a single call's and in a coupled model's batches (their full-size
    scratch is read back at once)."""
    dyn = Dynamics.from_urdf(str(robot_path(name)))
    assert dyn.engine.coupled == coupled
    assert dyn.engine.batch_workspaces is None
    dyn.gravity_batch(dyn.neutral()[None, :])
    wss = dyn.engine.batch_workspaces
    assert wss.shape[1:] == dyn.engine.ws.shape and wss.shape[0] >= 8
    assert np.all(wss[:, 0, 78] == (0.0 if coupled else 1.0))
    assert dyn.engine.ws[0, 78] == 0.0
    dyn.christoffel_batch(dyn.neutral()[None, :])
    assert dyn.engine.batch_workspaces is wss  # allocated once
