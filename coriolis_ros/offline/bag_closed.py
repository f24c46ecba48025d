"""A closed chain's rows, as the node's tick computes them (no ROS needed).

On a closed chain every call closes the loops by Newton from the instance's last solution
(:mod:`coriolis_ros.dynamics.loops`), so the numbers depend, in their last bits, on the order
of the calls, and a jump beyond continuation's budget is refused.  The node's tick computes,
state after state, ``coriolis``, then ``coriolis_vectors`` and ``gravity`` (which find the
loops closed at the same state); :func:`closed_terms` does exactly that, row after row, so the
rows are the node's messages bit for bit.  Like the tick, where the closure from the previous
row is refused and the row brought every dependent joint, Newton starts from those values;
and the dependent joints a row brought are compared with its closure
(:class:`~coriolis_ros.stream.loop_check.LoopCheck`): the disagreements are counted in a note.
A row the model refuses (the library's message is the first such note) is left out, as the
node publishes nothing for it.
"""

from __future__ import annotations

import numpy as np

from .bag_output import MATRIX_FIELDS, TERM_FIELDS, store_tick, tick_terms

REFUSED = "refused by the model: not published"


def closed_terms(dyn, rec, fields=TERM_FIELDS, progress=None) -> tuple[dict, np.ndarray]:
    """({field: array (T, ...)}, keep (T,) bool) for the rows of ``rec`` (a Recording of a
    closed chain); rows not kept are refused by the model (their entries are undefined).
    Appends to ``rec.notes`` and ``rec.skipped``."""
    T, n = len(rec.position), dyn.nv
    out = {name: np.empty((T, n, n) if name in MATRIX_FIELDS else (T, n)) for name in fields}
    matrices = tuple(np.empty((n, n)) for _ in range(3))
    vectors = tuple(np.empty(n) for _ in range(3))
    g = np.empty(n)
    keep = np.ones(T, dtype=bool)
    closed = dyn.closed
    received = rec.received or [None] * T
    refusal, off, worst = "", 0, ()
    for t in range(T):
        q, qd = rec.position[t], rec.velocity[t]
        try:
            try:
                tick_terms(dyn, q, qd, matrices, vectors, g)
            except ValueError as exc:
                if received[t] is None:
                    raise
                try:
                    dyn.close_loops(q, dependent=received[t])
                except ValueError as again:
                    raise ValueError(
                        f"{exc}; from the dependent joints received: {again}"
                    ) from None
                tick_terms(dyn, q, qd, matrices, vectors, g)
        except ValueError as exc:
            keep[t] = False
            refusal = refusal or str(exc)
            continue
        store_tick(out, t, matrices, vectors, g)
        if received[t] is not None and rec.loop_check is not None:
            bad = rec.loop_check.compare_received(received[t], closed.dependent_positions())
            if bad:
                off += 1
                worst = worst or tuple(bad[:3])
        if progress is not None and (t % 1000 == 999 or t == T - 1):
            progress(t + 1, T)
    if not keep.all():
        rec.skipped[REFUSED] = int((~keep).sum())
        rec.notes.append(f"rows refused by the model: {int((~keep).sum())}, first: {refusal}")
    if off:
        first = ", ".join(
            f"'{name}' = {value:.6g} (the closure gives {at:.6g})" for name, value, at in worst
        )
        rec.notes.append(
            f"joint states with joints of closed loops off the closure by more than "
            f"{rec.loop_check.tolerance:g} (not used): {off}, first: {first}"
        )
    return out, keep
