"""Batched kernels: one per-state kernel applied to T states, in parallel over the states.

Each batch kernel takes the per-state inputs stacked as rows (``Q[t]``, ``V[t]``,
``A[t]``), the outputs stacked the same way, and a stack of workspaces ``wss``
(one (n, WS_WIDTH) workspace per chunk of states) and the number of threads in use
(``numba.get_num_threads()``, read by the caller: called inside a kernel it would
keep the kernel out of Numba's on-disk cache).  The states are split into
contiguous chunks (up to CHUNKS_PER_THREAD per thread); chunk ``c`` runs on its own
workspace ``wss[c]`` and calls the *per-state kernel itself* on every row:
``kern``, the compiled single-state kernel, passed as a first-class function
(Numba ``FunctionType``), i.e. called through its address.  Each row therefore
runs the very machine code a single-state call runs, and the results are
bitwise equal to a loop of single-state calls.  (A direct call would let LLVM
inline the per-state kernel into the parallel loop and re-optimize it there:
inverse dynamics then differed from the single-state call in the last bit,
presumably from multiply-adds fused differently.)  Nothing is allocated per state.

The exception is :func:`coriolis_lanes_batch`, which computes four states per pass with
:func:`.coriolis_matrix.coriolis_lanes`: Algorithm 1's own source compiled for the 4-lane
type of :mod:`.lanes`, each lane bitwise the single-state kernel's result (tested), so it
takes no per-state kernel argument.

Validation matches the single-state kernels: the rows are scanned in order
before anything is computed, and the first bad row is reported as
``status + ROW * t`` (``status`` one of kinematics.BAD_*), so the caller can name
row ``t``.  Shape problems are reported like the per-state ones (``SIZE_*``,
``ROWS``) with ``t = 0``.
"""

import numpy as np
from numba import njit, prange

from .coriolis_matrix import coriolis_lanes
from .kinematics import (
    BAD_Q,
    BAD_QD,
    BAD_QDD,
    OVERLAP,
    SIZE_OUT,
    SIZE_WS,
    all_finite,
    check_inputs,
    disjoint,
)
from .lanes import LANES
from .slotine_li import BAD_ARG4
from .spatial import WS_WIDTH, kernel

# Status encoding: status + ROW * row (status < ROW).
ROW = 256
ROWS = 14  # inputs with different numbers of rows (states)

# Same numerical options as the per-state kernels (spatial._OPTIONS), plus prange.
batch_kernel = njit(
    cache=False,  # given one when first compiled (dynamics.kernel_table.compile_frozen)
    error_model="numpy",
    boundscheck=False,
    fastmath={"contract"},
    nogil=True,
    parallel=True,
)


@kernel
def rows_ok(Q, V, A):
    """0, or BAD_* + ROW * t for the first row t with a NaN, infinite or huge entry."""
    for t in range(Q.shape[0]):
        if not all_finite(Q[t]):
            return BAD_Q + ROW * t
        if not all_finite(V[t]):
            return BAD_QD + ROW * t
        if not all_finite(A[t]):
            return BAD_QDD + ROW * t
    return 0


@kernel
def batch_ok(mf, wss, Q, V, A):
    """0, or the status of the first problem with the workspaces, the row counts or a row."""
    n = mf.shape[0]
    if wss.ndim != 3 or wss.shape[0] < 1 or wss.shape[1] < n or wss.shape[2] != WS_WIDTH:
        return SIZE_WS
    T = Q.shape[0]
    if V.shape[0] != T or A.shape[0] != T:
        return ROWS
    return rows_ok(Q, V, A)


# Fewer states than this run on the calling thread alone: waking the other threads costs
# more than they save (tens of microseconds, and milliseconds when the cores are busy).
MIN_PARALLEL = 16
# Chunks per thread, handed out one at a time (the caller sets Numba's parallel chunk size
# to 1): a thread that the OS preempts holds up one small chunk, not half the batch.
CHUNKS_PER_THREAD = 8
MIN_ROWS_PER_CHUNK = 8


@kernel
def chunks(threads, T, wss):
    """The number of chunks: 1 for small batches, else up to CHUNKS_PER_THREAD per thread,
    at most one per workspace and at least MIN_ROWS_PER_CHUNK states each."""
    if T < MIN_PARALLEL:
        return 1
    k = min(CHUNKS_PER_THREAD * threads, wss.shape[0], T // MIN_ROWS_PER_CHUNK)
    return max(1, k)


@kernel
def first_status(statuses):
    for c in range(statuses.shape[0]):
        if statuses[c]:
            return statuses[c]
    return 0


@kernel
def rows_out_ok(T, n, x):
    """x has T rows of n x n."""
    return x.shape[0] == T and x.shape[1] == n and x.shape[2] == n


@kernel
def lanes_in(X, t0, count, X4):
    """X4[:, l] = X[t0 + l] for the count states of a group; idle lanes repeat X[t0]."""
    for r in range(X.shape[1]):
        for ln in range(LANES):
            X4[r, ln] = X[t0 + ln if ln < count else t0, r]


@kernel
def coriolis_group(mf, Q, V, g, ws4, q4, v4, S, M, Mdot, C):
    """States 4g .. 4g+3 (those that exist) by one pass of the lane kernel."""
    t0 = LANES * g
    count = min(LANES, Q.shape[0] - t0)
    lanes_in(Q, t0, count, q4)
    lanes_in(V, t0, count, v4)
    coriolis_lanes(mf, q4, v4, ws4, S, M, Mdot, C, t0, count)


@batch_kernel
def coriolis_lanes_batch(mf, Q, V, wss, ws4s, q4s, v4s, Ss, threads, M, Mdot, C):
    """M[t], Mdot[t], C[t] for every row t, four states at a time
    (kernels.coriolis_matrix.coriolis_lanes): every lane is computed as the single-state
    kernel computes its state, bitwise.  Rows are checked first by the single-state kernel's
    own checks; ws4s, q4s, v4s and Ss hold one lane workspace, input pair and output buffer
    (3, n, n, 4) per chunk."""
    n = mf.shape[0]
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, V)
    if status:
        return status
    if not (rows_out_ok(T, n, M) and rows_out_ok(T, n, Mdot) and rows_out_ok(T, n, C)):
        return SIZE_OUT
    if not disjoint(M, Mdot, C):
        return OVERLAP
    ws = wss[0]
    for t in range(T):
        s = check_inputs(mf, ws, Q[t], V[t], V[t])
        if s:
            return s + ROW * t
    groups = (T + LANES - 1) // LANES
    k = min(chunks(threads, T, wss), ws4s.shape[0], groups)
    if k <= 1:
        for g in range(groups):
            coriolis_group(mf, Q, V, g, ws4s[0], q4s[0], v4s[0], Ss[0], M, Mdot, C)
        return 0
    for c in prange(k):
        for g in range(groups * c // k, groups * (c + 1) // k):
            coriolis_group(mf, Q, V, g, ws4s[c], q4s[c], v4s[c], Ss[c], M, Mdot, C)
    return 0


@batch_kernel
def coriolis_batch(kern, mf, Q, V, wss, threads, M, Mdot, C):
    """M[t], Mdot[t], C[t] = kern(Q[t], V[t]) for every row t, one state at a time (kern:
    the coupled models' coriolis; plain trees use coriolis_lanes_batch).  Sizes other than
    the row counts are the per-state kernel's to check (n is the caller's, not mf's)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, V)
    if status:
        return status
    if M.shape[0] != T or Mdot.shape[0] != T or C.shape[0] != T:
        return SIZE_OUT
    if not disjoint(M, Mdot, C):
        return OVERLAP
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, Q[t], V[t], ws, M[t], Mdot[t], C[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, Q[t], V[t], ws, M[t], Mdot[t], C[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def christoffel_batch(kern, mf, Q, wss, threads, Gamma):
    """Gamma[t] = kern(Q[t]) for every row t (kern: christoffel)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, Q, Q)
    if status:
        return status
    if Gamma.shape[0] != T:
        return SIZE_OUT
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, Q[t], ws, Gamma[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, Q[t], ws, Gamma[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def coriolis_vectors_batch(kern, mf, Q, V, wss, threads, Cqd, CTqd, P):
    """Cqd[t], CTqd[t], P[t] = kern(Q[t], V[t]) for every row t (kern: coriolis_vectors)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, V)
    if status:
        return status
    for x in (Cqd, CTqd, P):
        if x.shape[0] != T:
            return SIZE_OUT
    if not disjoint(Cqd, CTqd, P):
        return OVERLAP
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, Q[t], V[t], ws, Cqd[t], CTqd[t], P[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, Q[t], V[t], ws, Cqd[t], CTqd[t], P[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def inverse_dynamics_batch(kern, mf, gravity, Q, V, A, wss, threads, Tau):
    """Tau[t] = kern(Q[t], V[t], A[t]) for every row t (kern: inverse_dynamics)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, A)
    if status:
        return status
    if Tau.shape[0] != T:
        return SIZE_OUT
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, gravity, Q[t], V[t], A[t], ws, Tau[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, gravity, Q[t], V[t], A[t], ws, Tau[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def slotine_li_batch(kern, mf, gravity, Q, V, QdR, QddR, wss, threads, Tau):
    """Tau[t] = kern(Q[t], V[t], QdR[t], QddR[t]) for every row t (kern: slotine_li)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, QdR)
    if status:
        return status
    if QddR.shape[0] != T:
        return ROWS
    for t in range(T):
        if not all_finite(QddR[t]):
            return BAD_ARG4 + ROW * t
    if Tau.shape[0] != T:
        return SIZE_OUT
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, gravity, Q[t], V[t], QdR[t], QddR[t], ws, Tau[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, gravity, Q[t], V[t], QdR[t], QddR[t], ws, Tau[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def gravity_batch(kern, mf, gravity, Q, wss, threads, G):
    """G[t] = kern(Q[t]) for every row t (kern: generalized_gravity)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, Q, Q)
    if status:
        return status
    if G.shape[0] != T:
        return SIZE_OUT
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, gravity, Q[t], ws, G[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, gravity, Q[t], ws, G[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def regressor_batch(kern, mf, E, gravity, Q, V, QdR, QddR, wss, threads, Y):
    """Y[t] = kern(Q[t], V[t], QdR[t], QddR[t]) for every row t (kern: regressor)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, QdR)
    if status:
        return status
    if QddR.shape[0] != T:
        return ROWS
    for t in range(T):
        if not all_finite(QddR[t]):
            return BAD_ARG4 + ROW * t
    if Y.shape[0] != T:
        return SIZE_OUT
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, E, gravity, Q[t], V[t], QdR[t], QddR[t], ws, Y[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, E, gravity, Q[t], V[t], QdR[t], QddR[t], ws, Y[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)


@batch_kernel
def energy_regressor_batch(kern, mf, E, gravity, Q, V, wss, threads, Y):
    """Y[t] = kern(Q[t], V[t]) for every row t (kern: energy_regressor; Y[t] is 2 x 10 nb)."""
    T = Q.shape[0]
    status = batch_ok(mf, wss, Q, V, V)
    if status:
        return status
    if Y.shape[0] != T:
        return SIZE_OUT
    k = chunks(threads, T, wss)
    if k == 1:
        ws = wss[0]
        for t in range(T):
            s = kern(mf, E, gravity, Q[t], V[t], ws, Y[t])
            if s:
                return s + ROW * t
        return 0
    statuses = np.zeros(k, np.int64)
    for c in prange(k):
        ws = wss[c]
        for t in range(T * c // k, T * (c + 1) // k):
            s = kern(mf, E, gravity, Q[t], V[t], ws, Y[t])
            if s and not statuses[c]:
                statuses[c] = s + ROW * t
    return first_status(statuses)
