"""The batched calls of :class:`~coriolis_ros.dynamics.Dynamics`: many states per call.

``dyn.coriolis_batch(Q, V)`` is ``dyn.coriolis(Q[t], V[t])`` for every row ``t``,
computed in parallel over the rows by Numba threads (``numba.set_num_threads`` chooses
how many): the rows are cut into contiguous chunks, up to 8 per thread, handed out one at
a time, each computed on a workspace of its own (allocated once per instance).  Row ``t``
of every result is bitwise equal to the single-state call on row ``t``.

Shapes, for T states: ``Q`` (T, nq), ``V`` and ``A`` (T, nv); vectors come back
as (T, n), matrices as (T, n, n), the Christoffel symbols as (T, n, n, n).

Validation is the single-state one, per row: wrong shapes and a NaN, infinite or
huge (beyond ±1e50) entry raise ``ValueError``, the latter naming the first bad
row (``"V row 17 has a NaN ..."``) before anything is computed.  ``out=`` takes
preallocated arrays (float64, C-contiguous, writeable, the right shapes).

Each call is a pure function of its arrays, so the batches can be cut anywhere
(chunks of a long recording, Dask tasks): results do not depend on the cut.

Numba's OpenMP threads spin briefly after a batch, then sleep (``GOMP_SPINCOUNT=3000``
unless the environment sets it or ``OMP_WAIT_POLICY``, set when the first batch kernel is
compiled, before OpenMP is loaded; see ``DEFAULT_SPINCOUNT``).  One
batch runs at a time per process (a lock around the parallel launch): each already uses
every Numba thread, and Numba's ``workqueue`` threading layer must not be entered from two
threads at once.  The
per-chunk workspaces belong to the :class:`Dynamics` instance, so, as for the
single-state calls, one instance is not for several threads at once
(:meth:`Dynamics.clone`).
"""

from __future__ import annotations

import os
import threading

import numpy as np
from numba import config as numba_config
from numba import get_num_threads, set_parallel_chunksize, types

from .kernel_table import compile_frozen
from .kernels import batch as _kb
from .kernels.spatial import WS_STREAM
from .kernels.kinematics import (
    BAD_Q,
    BAD_QD,
    BAD_QDD,
    BAD_QUATERNION,
    MAX_ABS,
    MIN_QUATERNION_NORM,
    OVERLAP,
    SIZE_OUT,
    SIZE_Q,
)

_F64 = np.dtype(np.float64)
_LAUNCH = threading.Lock()

# How long Numba's OpenMP (libgomp) worker threads spin after a batch before they sleep.
# libgomp's default spin burnt 8.6 ms of CPU after every batch (median of 3 runs), taking it
# from the rest of the process and from other processes: on a loaded 2-core machine batches
# became several times slower.  Sleeping at once (OMP_WAIT_POLICY=PASSIVE, 0.09 ms) makes
# every batch wait for its threads to be woken: back-to-back batches of 100 UR5 states took
# 1.7 us per state instead of 1.1.  DEFAULT_SPINCOUNT spins ~0.1 ms (0.17 ms of CPU per batch
# in all), enough to bridge the Python between consecutive batch calls.  Only a default:
# it takes effect if set before OpenMP is loaded (the first parallel batch), and an
# OMP_WAIT_POLICY or GOMP_SPINCOUNT chosen by the user wins.
DEFAULT_SPINCOUNT = "3000"


def _default_spincount() -> None:
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = DEFAULT_SPINCOUNT


_RF1 = types.Array(types.float64, 1, "C", readonly=True)
_RF2 = types.Array(types.float64, 2, "C", readonly=True)
_F2 = types.Array(types.float64, 2, "C")
_F3 = types.Array(types.float64, 3, "C")
_F4 = types.Array(types.float64, 4, "C")
_F5 = types.Array(types.float64, 5, "C")
_I = types.int64
# name (as in kernel_table.ARGUMENTS) -> (batch kernel, its argument types after the
# per-state kernel)
_SIGNATURES = {
    "coriolis": (_kb.coriolis_batch, (_RF2, _F2, _F2, _F3, _I, _F3, _F3, _F3)),
    "christoffel": (_kb.christoffel_batch, (_RF2, _F2, _F3, _I, _F4)),
    "coriolis_vectors": (_kb.coriolis_vectors_batch, (_RF2, _F2, _F2, _F3, _I, _F2, _F2, _F2)),
    "inverse_dynamics": (_kb.inverse_dynamics_batch, (_RF2, _RF1, _F2, _F2, _F2, _F3, _I, _F2)),
    "gravity": (_kb.gravity_batch, (_RF2, _RF1, _F2, _F3, _I, _F2)),
    "slotine_li": (_kb.slotine_li_batch, (_RF2, _RF1, _F2, _F2, _F2, _F2, _F3, _I, _F2)),
    "regressor": (_kb.regressor_batch, (_RF2, _RF2, _RF1, _F2, _F2, _F2, _F2, _F3, _I, _F3)),
    "energy_regressor": (_kb.energy_regressor_batch, (_RF2, _RF2, _RF1, _F2, _F2, _F3, _I, _F3)),
}


# Batch kernels that compute several states per pass (kernels.lanes): no per-state kernel
# argument; their per-state code is the single-state kernel's source compiled for lanes.
_LANE_SIGNATURES = {
    "coriolis_lanes": (
        _kb.coriolis_lanes_batch,
        (_RF2, _F2, _F2, _F3, _F4, _F3, _F3, _F5, _I, _F3, _F3, _F3),
    ),
}


class _PerState:
    """A compiled per-state kernel as a first-class function: its native address and signature.

    Numba types this object as ``FunctionType(signature)`` (its ``_numba_type_``) and calls
    the address (Numba's wrapper address protocol): the machine code the single-state call
    runs, never a copy inlined into the batch loop.  Passing the dispatcher itself also works,
    but Numba then looks the address up on every call (about 1.5 ms); a
    ``WrapperAddressProtocol`` subclass costs 10 us of typing per call, this 2 us.
    """

    def __init__(self, dispatcher):
        (argtypes,) = dispatcher.signatures
        result = dispatcher.overloads[argtypes]
        self._signature = types.int64(*argtypes)
        self._numba_type_ = types.FunctionType(self._signature)
        self._address = result.library.get_pointer_to_function(
            result.fndesc.llvm_cfunc_wrapper_name
        )
        self._dispatcher = dispatcher  # keeps the machine code alive

    def __wrapper_address__(self, *_) -> int:
        return self._address

    def signature(self):
        return self._signature


class _Kernels:
    """Each batch kernel, compiled (or loaded from the on-disk cache) on first use, then frozen,
    with the per-state kernel it calls: ``_K.get("christoffel", table)`` is ``(batch kernel,
    per-state kernel of that table)``; the lane batches have no per-state kernel (None).  One
    compiled batch kernel serves every table: the per-state kernels share their signature.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._cache: dict = {}

    def get(self, name: str, table):
        key = (name, None if name in _LANE_SIGNATURES else table.name)
        found = self._cache.get(key)
        if found is not None:
            return found
        with self._lock:
            if key not in self._cache:
                _default_spincount()
                if name in _LANE_SIGNATURES:
                    dispatcher, argtypes = _LANE_SIGNATURES[name]
                    per_state = None
                else:
                    dispatcher, argtypes = _SIGNATURES[name]
                    per_state = _PerState(getattr(table, name))
                    argtypes = (types.FunctionType(per_state.signature()), *argtypes)
                compile_frozen(dispatcher, argtypes)
                self._cache[key] = (dispatcher, per_state)
        return self._cache[key]


_K = _Kernels()


def q_width(engine) -> int:
    """Entries per configuration row of a batch (the one place batch shapes read it)."""
    return engine.nq


def workspaces(engine) -> tuple[np.ndarray, int]:
    """The instance's per-chunk workspaces (allocated on its first batch call), threads in use."""
    wss = engine.batch_workspaces
    if wss is None:
        chunks = _kb.CHUNKS_PER_THREAD * max(1, numba_config.NUMBA_NUM_THREADS)
        wss = np.empty((chunks, *engine.ws.shape))
        wss[:] = engine.ws  # a coupled model's map lives in its workspace's extra rows
        # each state's outputs are fresh memory: large sparse ones are zeroed by streaming
        # stores (kernels.christoffel.zero_output); a single call's are not, nor the
        # full-size scratch a coupled model's kernels reduce from (read back at once)
        wss[:, 0, WS_STREAM] = 0.0 if engine.coupled else 1.0
        engine.batch_workspaces = wss
    return wss, get_num_threads()


def lane_buffers(engine) -> tuple[np.ndarray, ...]:
    """The instance's per-chunk buffers of the lane batches (allocated on first use): a lane
    workspace (rows, WS_WIDTH, 4), the inputs (nq, 4) and (n, 4), an output buffer
    (3, n, n, 4)."""
    bufs = engine.lane_buffers
    if bufs is None:
        chunks = _kb.CHUNKS_PER_THREAD * max(1, numba_config.NUMBA_NUM_THREADS)
        rows, width = engine.ws.shape
        n, nq, lanes = engine.nv, q_width(engine), _kb.LANES
        bufs = (
            np.zeros((chunks, rows, width, lanes)),
            np.zeros((chunks, nq, lanes)),
            np.zeros((chunks, n, lanes)),
            np.zeros((chunks, 3, n, n, lanes)),
        )
        engine.lane_buffers = bufs
    return bufs


def rows(x, name: str, width: int) -> np.ndarray:
    """x as a (T, width) float64 C-contiguous writeable array (x itself when it already is)."""
    if (
        type(x) is np.ndarray
        and x.dtype == _F64
        and x.ndim == 2
        and x.flags.c_contiguous
        and x.flags.writeable
    ):
        arr = x
    else:
        if np.iscomplexobj(x):
            raise ValueError(f"{name} must be real numbers, got complex")
        try:
            arr = np.array(x, dtype=np.float64, order="C", copy=True)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a (T, {width}) array of numbers: {exc}") from None
    if arr.ndim != 2 or arr.shape[1] != width:
        raise ValueError(f"{name} must have shape (T, {width}), got {arr.shape}")
    return arr


def same_rows(named: dict) -> int:
    counts = {name: arr.shape[0] for name, arr in named.items()}
    if len(set(counts.values())) > 1:
        got = ", ".join(f"{name}: {count}" for name, count in counts.items())
        raise ValueError(f"{', '.join(counts)} must have the same number of rows, got {got}")
    return next(iter(counts.values()))


def outputs(out, shapes: list[tuple[int, ...]]) -> tuple[np.ndarray, ...]:
    """New arrays of these shapes, or ``out`` checked against them."""
    if out is None:
        return tuple(np.empty(shape) for shape in shapes)
    if isinstance(out, np.ndarray):
        out = (out,)
    try:
        out = tuple(out)
    except TypeError:
        raise ValueError(f"out must be a tuple of {len(shapes)} arrays") from None
    if len(out) != len(shapes):
        raise ValueError(f"out must be a tuple of {len(shapes)} arrays")
    for arr, shape in zip(out, shapes, strict=True):
        if not (
            type(arr) is np.ndarray
            and arr.dtype == _F64
            and arr.flags.c_contiguous
            and arr.flags.writeable
        ):
            got = f"{type(arr).__name__} {getattr(arr, 'dtype', '')}"
            raise ValueError(f"out arrays must be writeable C-contiguous float64, got {got}")
        if arr.shape != shape:
            raise ValueError(f"out array has shape {arr.shape}, expected {shape}")
    for i, arr in enumerate(out):  # C-contiguous: sharing memory is overlapping bounds
        if any(np.may_share_memory(arr, other) for other in out[i + 1 :]):
            raise ValueError("out arrays must not share memory")
    return out


def launch(engine, name: str, args: list, inputs: tuple[str, ...], arrays: tuple = ()) -> None:
    """Run batch kernel ``name`` with the per-state kernels of the engine's table; a failure
    status becomes a ValueError naming the row (and, given the input ``arrays`` in the order of
    ``inputs``, the follower a row puts beyond the range, for a model with coupled joints)."""
    kernel, per_state = _K.get(name, engine.kernels)
    with _LAUNCH:
        chunk_size = set_parallel_chunksize(1)  # hand the chunks out one at a time
        try:
            status = kernel(*args) if per_state is None else kernel(per_state, *args)
        finally:
            set_parallel_chunksize(chunk_size)
    if status:
        fail(status, inputs, engine.cmap, arrays)


def fail(status: int, inputs: tuple[str, ...], cmap=None, arrays: tuple = ()) -> None:
    row, code = divmod(int(status), _kb.ROW)
    if code in (BAD_Q, BAD_QD, BAD_QDD) or (code == BAD_QDD + 1 and len(inputs) > 3):
        which = code - BAD_Q
        if cmap is not None and which < len(arrays):  # a row within range, a follower not
            what = f"{inputs[which]} row {row}"
            why = cmap.refusal(arrays[which][row], what, position=which == 0)
            if why is not None:
                raise ValueError(why)
        raise ValueError(
            f"{inputs[code - BAD_Q]} row {row} has a NaN, infinite or huge "
            f"(beyond ±{MAX_ABS:g}) entry"
        )
    if code == BAD_QUATERNION:
        raise ValueError(
            f"{inputs[0]} row {row} has a zero quaternion (norm below {MIN_QUATERNION_NORM:g}) "
            "for a floating joint"
        )
    if code == OVERLAP:
        raise ValueError("out arrays must not share memory")
    if code == SIZE_OUT:
        raise ValueError("out arrays have the wrong shape")
    if code == _kb.ROWS:
        raise ValueError(f"{', '.join(inputs)} must have the same number of rows")
    if SIZE_Q <= code <= SIZE_Q + 2:
        raise ValueError(f"{inputs[code - SIZE_Q]} row {row} has the wrong length")
    raise RuntimeError(f"internal error: batch kernel status {status}")


class RowByRowBatches:
    """The batch methods of a variant of Dynamics whose single-state methods are Python
    (closed chains, velocity representations): row t of each result is the single-state
    call on row t, in row order (a closed chain's Newton starts from the previous row's
    solution).  The class provides ``nq``, ``nv`` and the single-state methods."""

    def _batch(self, method, arrays, shapes, out):
        checked = {name: rows(X, name, width) for X, width, name in arrays}
        T = same_rows(checked)
        out = outputs(out, [(T, *s) for s in shapes])
        for t in range(T):
            res = method(*(X[t] for X in checked.values()))
            res = res if isinstance(res, tuple) else (res,)
            for o, r in zip(out, res, strict=True):
                o[t] = r
        return out if len(out) > 1 else out[0]

    def coriolis_batch(self, Q, V, out=None):
        n = self.nv
        return self._batch(self.coriolis, [(Q, self.nq, "Q"), (V, n, "V")], [(n, n)] * 3, out)

    def christoffel_batch(self, Q, out=None):
        n = self.nv
        return self._batch(self.christoffel, [(Q, self.nq, "Q")], [(n, n, n)], out)

    def coriolis_vectors_batch(self, Q, V, out=None):
        n = self.nv
        return self._batch(self.coriolis_vectors, [(Q, self.nq, "Q"), (V, n, "V")], [(n,)] * 3, out)

    def inverse_dynamics_batch(self, Q, V, A, out=None):
        n = self.nv
        args = [(Q, self.nq, "Q"), (V, n, "V"), (A, n, "A")]
        return self._batch(self.inverse_dynamics, args, [(n,)], out)

    def slotine_li_batch(self, Q, V, QdR, QddR, out=None):
        n = self.nv
        args = [(Q, self.nq, "Q"), (V, n, "V"), (QdR, n, "QdR"), (QddR, n, "QddR")]
        return self._batch(self.slotine_li, args, [(n,)], out)

    def gravity_batch(self, Q, out=None):
        return self._batch(self.gravity, [(Q, self.nq, "Q")], [(self.nv,)], out)
