"""The compiled kernels, by model variant: one table per kind of model, chosen once at load.

Every kernel is compiled for one signature (float64, C-contiguous; the model arrays
read-only) the first time it is used, or loaded from Numba's on-disk cache, and then
frozen: any other argument type is a ``TypeError`` from Numba's C dispatcher, which the
callers turn into a checked conversion (:mod:`.validation`).

Two tables share the same names and argument lists, so :class:`~.api.Dynamics` calls
``table.coriolis(mf, q, qd, ws, M, Mdot, C)`` whatever the model is:

``TREE``
    the kernels of the tree itself: every row of the model is a coordinate.
``COUPLED``
    the same algorithms over independent coordinates qbar of a tree whose coupled joints
    (mimic joints, geared rotors) follow q = phi(qbar), qdot = A qbardot with A constant
    (:mod:`.kernels.coordinate_change`; the map lives in the workspace's extra rows).

The cache directory is chosen on the first compile (:mod:`.numba_cache`), not on import.
"""

from __future__ import annotations

import threading

import numpy as np

from numba import types

from . import numba_cache
from .kernels import coordinate_change as cc
from .kernels.christoffel import christoffel
from .kernels.coriolis_matrix import coriolis_matrix
from .kernels.coriolis_times import coriolis_times
from .kernels.coriolis_vectors import coriolis_vectors
from .kernels.crba import mass_matrix
from .kernels.frame_bias import frame_bias, reduced_frame_bias
from .kernels.frame_jacobian import (
    frame_jacobian,
    frame_placement,
    reduced_frame_jacobian,
    reduced_frame_placement,
)
from .kernels.frame_jacobian_dot import (
    frame_jacobian_dot,
    frame_jacobians,
    reduced_frame_jacobian_dot,
    reduced_frame_jacobians,
)
from .kernels.kinematics import check_position
from .kernels.momentum_observer import observer_step, observer_update
from .kernels.parameters import write_parameters
from .kernels.regressor import (
    energy_regressor,
    reduced_energy_regressor,
    reduced_regressor,
    regressor,
)
from .kernels.rnea import generalized_gravity, inverse_dynamics
from .kernels.safeea import christoffel_safeea
from .kernels.slotine_li import slotine_li
from .kernels.task_space import reduced_task_space, task_space

# Argument types: read-only model arrays, writeable C-contiguous float64 data.
RF1 = types.Array(types.float64, 1, "C", readonly=True)
RF2 = types.Array(types.float64, 2, "C", readonly=True)
F1 = types.Array(types.float64, 1, "C")
F2 = types.Array(types.float64, 2, "C")
F3 = types.Array(types.float64, 3, "C")
I64 = types.int64

# name -> argument types; the same for every table
ARGUMENTS = {
    "coriolis": (RF2, F1, F1, F2, F2, F2, F2),  # mf, q, qd, ws, M, Mdot, C
    "christoffel": (RF2, F1, F2, F3),  # mf, q, ws, Gamma
    "christoffel_safeea": (RF2, F1, F2, F3),
    "mass_matrix": (RF2, F1, F2, F2),  # mf, q, ws, M
    "gravity": (RF2, RF1, F1, F2, F1),  # mf, gravity, q, ws, g
    "inverse_dynamics": (RF2, RF1, F1, F1, F1, F2, F1),  # mf, gravity, q, qd, qdd, ws, tau
    "coriolis_vectors": (RF2, F1, F1, F2, F1, F1, F1),  # mf, q, qd, ws, C qd, C^T qd, M qd
    "coriolis_times": (RF2, F1, F1, F1, F2, F1),  # mf, q, qd, x, ws, C x
    "slotine_li": (RF2, RF1, F1, F1, F1, F1, F2, F1),  # mf, gravity, q, qd, qdr, qddr, ws, tau
    "check_position": (RF2, F2, F1),  # mf, ws, q
    # MomentumObserver.update: mf, gravity, q, qd, tau, workspace, state, dt
    "observer_update": (RF2, RF1, F1, F1, F1, F2, F2, types.float64),
    # the observer's step on terms computed by other kernels: p, C^T qd, g, tau, state, dt
    "observer_step": (F1, F1, F1, F1, F2, types.float64),
    # frames (mf, fm, frame index, reference, ...): kernels/frame_*.py and task_space.py
    "frame_placement": (RF2, RF2, I64, F1, F2, F2),  # mf, fm, f, q, ws, T
    "frame_jacobian": (RF2, RF2, I64, I64, F1, F2, F2),  # mf, fm, f, ref, q, ws, J
    "frame_jacobian_dot": (RF2, RF2, I64, I64, F1, F1, F2, F2),  # mf, fm, f, ref, q, qd, ws, Jdot
    "frame_jacobians": (RF2, RF2, I64, I64, F1, F1, F2, F2, F2),  # ..., ws, J, Jdot
    "frame_bias": (RF2, RF2, I64, I64, F1, F1, F2, F1),  # mf, fm, f, ref, q, qd, ws, Jdot qd
    # mf, fm, f, ref, rows, damping, q, qd, ws, task scratch, Lambda, mu, J, Jdot
    "task_space": (RF2, RF2, I64, I64, I64, types.float64, F1, F1, F2, F1, F2, F2, F2, F2),
    # mf, link rotations, gravity, q, qd, qdr, qddr, ws, Y (n, 10 bodies)
    "regressor": (RF2, RF2, RF1, F1, F1, F1, F1, F2, F2),
    "energy_regressor": (RF2, RF2, RF1, F1, F1, F2, F2),  # mf, E, gravity, q, qd, ws, (2, 10 nb)
    "write_parameters": (F2, RF2, F1, types.boolean),  # the engine's mf_store, E, pi, check
}


class KernelTable:
    """Kernels by name, each compiled (or loaded from the on-disk cache) on first use, then
    frozen.  ``table.coriolis`` is the compiled dispatcher."""

    def __init__(self, name: str, dispatchers: dict):
        unknown = set(dispatchers) - set(ARGUMENTS)
        if unknown:
            raise ValueError(f"no argument types for {sorted(unknown)}")
        self.name = name
        self._dispatchers = dispatchers
        _ENTRY_POINTS.extend(dispatchers.values())

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in self._dispatchers:
            raise AttributeError(name)
        dispatcher = compile_frozen(self._dispatchers[name], ARGUMENTS[name])
        self.__dict__[name] = dispatcher  # later lookups skip __getattr__
        return dispatcher

    def __repr__(self) -> str:
        return f"KernelTable({self.name!r})"


_LOCK = threading.Lock()
_FROZEN: set[int] = set()  # id() of every dispatcher compile_frozen has compiled
# Every table's kernels: all get their cache on the first compile, before any is compiled,
# because one table's kernels call another's (the coupled ones call the tree's), and a kernel
# compiled as another's callee before it had a cache would never be written to disk.
_ENTRY_POINTS: list = []
_CACHED: set[int] = set()


def compile_frozen(dispatcher, argtypes, restype=types.int64):
    """Compile ``dispatcher`` for one signature (from the cache when it is there), check that
    it returns ``restype``, then freeze it; a dispatcher already frozen here is returned as
    it is.  The first compile chooses Numba's cache directory."""
    with _LOCK:
        if id(dispatcher) not in _FROZEN:
            numba_cache.configure()
            for entry in (*_ENTRY_POINTS, dispatcher):  # now that the directory is chosen
                if id(entry) not in _CACHED:
                    entry.enable_caching()
                    _CACHED.add(id(entry))
            # By the argument types alone, as Numba compiles a kernel that another calls: the
            # on-disk cache keys the two forms apart, and a kernel saved as another's callee
            # would be compiled again (and saved) by the next process that freezes it.
            args = tuple(argtypes)
            dispatcher.compile(args)
            got = types.unliteral(dispatcher.overloads[args].signature.return_type)
            if got != restype:
                raise TypeError(f"{dispatcher.__name__} returns {got}, not {restype}")
            dispatcher.disable_compile()
            _fail_fast_on_wrong_arrays(dispatcher)
            _FROZEN.add(id(dispatcher))
    return dispatcher


def _array_params(dispatcher) -> tuple | None:
    """(position, dimensions, numpy dtype, writeable) of each array parameter of the
    dispatcher's signature; None if it has several (a kernel also compiled as another's
    callee)."""
    sigs = dispatcher.nopython_signatures
    if len(sigs) != 1:
        return None
    (sig,) = sigs
    return tuple(
        (k, t.ndim, np.dtype(str(t.dtype)), t.mutable)
        for k, t in enumerate(sig.args)
        if isinstance(t, types.Array)
    )


def _fail_fast_on_wrong_arrays(dispatcher) -> None:
    """A call whose arguments match no compiled signature makes Numba type every argument
    twice (a search for conversions, then the error message): about 0.4 ms on a seven-joint
    arm, paid by every call with a list where an array belongs (the caller then converts and
    calls again). Numba converts no list, tuple or array into an array of another dtype or
    layout, or a read-only array into a writeable one, so such a mismatch of an array
    parameter is reported at once."""
    search, explain = dispatcher._search_new_conversions, dispatcher._explain_matching_error
    params = _array_params(dispatcher)
    if params is None:
        return

    def plainly_wrong(args) -> bool:
        for k, ndim, dtype, writeable in params:
            arg = args[k]  # Numba checked the number of arguments before calling
            if not (
                type(arg) is np.ndarray
                and arg.ndim == ndim
                and arg.dtype == dtype
                and arg.flags.c_contiguous
                and (arg.flags.writeable or not writeable)
            ):
                return True
        return False

    def search_new_conversions(*args, **kws):
        return False if plainly_wrong(args) else search(*args, **kws)

    def explain_matching_error(*args, **kws):
        if plainly_wrong(args):
            raise TypeError(f"{dispatcher.__name__}: an array argument of the wrong kind")
        return explain(*args, **kws)

    dispatcher._search_new_conversions = search_new_conversions
    dispatcher._explain_matching_error = explain_matching_error


_SHARED = {
    "check_position": check_position,
    "observer_update": observer_update,
    "observer_step": observer_step,
    "write_parameters": write_parameters,
}

TREE = KernelTable(
    "tree",
    {
        "coriolis": coriolis_matrix,
        "christoffel": christoffel,
        "christoffel_safeea": christoffel_safeea,
        "mass_matrix": mass_matrix,
        "gravity": generalized_gravity,
        "inverse_dynamics": inverse_dynamics,
        "coriolis_vectors": coriolis_vectors,
        "coriolis_times": coriolis_times,
        "slotine_li": slotine_li,
        "frame_placement": frame_placement,
        "frame_jacobian": frame_jacobian,
        "frame_jacobian_dot": frame_jacobian_dot,
        "frame_jacobians": frame_jacobians,
        "frame_bias": frame_bias,
        "task_space": task_space,
        "regressor": regressor,
        "energy_regressor": energy_regressor,
        **_SHARED,
    },
)

COUPLED = KernelTable(
    "coupled",
    {
        "coriolis": cc.reduced_coriolis,
        "christoffel": cc.reduced_christoffel,
        "christoffel_safeea": cc.reduced_christoffel_safeea,
        "mass_matrix": cc.reduced_mass_matrix,
        "gravity": cc.reduced_gravity,
        "inverse_dynamics": cc.reduced_inverse_dynamics,
        "coriolis_vectors": cc.reduced_coriolis_vectors,
        "coriolis_times": cc.reduced_coriolis_times,
        "slotine_li": cc.reduced_slotine_li,
        "frame_placement": reduced_frame_placement,
        "frame_jacobian": reduced_frame_jacobian,
        "frame_jacobian_dot": reduced_frame_jacobian_dot,
        "frame_jacobians": reduced_frame_jacobians,
        "frame_bias": reduced_frame_bias,
        "task_space": reduced_task_space,
        "regressor": reduced_regressor,
        "energy_regressor": reduced_energy_regressor,
        **_SHARED,
    },
)
