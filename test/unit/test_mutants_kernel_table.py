"""kernel_table: the tables' names and attribute lookups, the kernels frozen with an on-disk
cache, every kernel of both tables run on the arrays the library gives it.

The references are Numba's own state (a frozen dispatcher cannot compile, a dispatcher
without a cache has Numba's NullCache) and Python's attribute protocol (``hasattr`` is False
exactly when the lookup raises AttributeError), not the module's tables.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.caching import NullCache

from coriolis_ros.dynamics import Dynamics, MomentumObserver
from coriolis_ros.dynamics.kernel_table import ARGUMENTS, COUPLED, TREE, KernelTable
from coriolis_ros.robots import robot_path


def test_repr_names_the_table():
    assert repr(TREE) == "KernelTable('tree')"
    assert repr(COUPLED) == "KernelTable('coupled')"


def test_a_name_that_is_no_kernel_is_an_attribute_error():
    assert not hasattr(TREE, "no_such_kernel")  # a KeyError would escape hasattr
    assert not hasattr(COUPLED, "_private")
    with pytest.raises(AttributeError, match="no_such_kernel"):
        TREE.no_such_kernel  # noqa: B018
    # as copy and pickle make one: no _dispatchers yet, and looking one up must not recurse
    bare = KernelTable.__new__(KernelTable)
    assert not hasattr(bare, "coriolis")
    assert not hasattr(bare, "_dispatchers")


def test_a_table_refuses_kernels_without_argument_types():
    with pytest.raises(ValueError, match=r"no argument types for \['not_a_kernel'\]"):
        KernelTable("x", {"coriolis": object(), "not_a_kernel": object()})


@pytest.mark.parametrize("table", [TREE, COUPLED], ids=["tree", "coupled"])
def test_every_kernel_is_frozen_once_with_a_disk_cache(table):
    for name in ARGUMENTS:
        kernel = getattr(table, name)
        assert getattr(table, name) is kernel  # the same dispatcher every time
        assert not kernel._can_compile, name  # frozen: no other signature compiles
        assert len(kernel.overloads) >= 1, name
        assert not isinstance(kernel._cache, NullCache), name  # saved to and loaded from disk
    # every other table's kernels got their cache too (one table's kernels call another's)
    for other in (TREE, COUPLED):
        for name, kernel in other._dispatchers.items():
            assert not isinstance(kernel._cache, NullCache), (other, name)


@pytest.mark.parametrize("robot", ["arm7", "arm7_rotors"])
def test_every_kernel_runs_on_the_arrays_the_library_gives_it(robot):
    """Through the public API, on a tree and on a coupled model: each call reaches a table
    kernel with the library's own arrays (read-only model arrays, writeable outputs)."""
    dyn = Dynamics.from_urdf(robot_path(robot))
    assert (dyn.engine.kernels is COUPLED) == (robot == "arm7_rotors")
    dyn.warmup()
    dyn.warmup_frames()
    q = dyn.integrate(dyn.neutral(), np.linspace(-0.4, 0.5, dyn.nv))
    v = np.linspace(0.3, -0.2, dyn.nv)
    frame = dyn.frame_names[-1]
    J, Jdot = dyn.frame_jacobians(q, v, frame)
    assert J.shape == Jdot.shape == (6, dyn.nv)
    assert dyn.frame_placement(q, frame).shape == (4, 4)
    Y = dyn.regressor(q, v, v, v)
    pi = dyn.inertial_parameters()
    np.testing.assert_allclose(Y @ pi, dyn.inverse_dynamics(q, v, v), rtol=1e-9, atol=1e-9)
    dyn.set_inertial_parameters(pi)
    assert dyn.energy_regressor(q, v).shape == (2, pi.size)
    obs = MomentumObserver(dyn, gain=10.0)
    for t in (0.0, 1e-3):  # the first update starts the observer, the second steps it
        r = obs.update(t, q, v, dyn.gravity(q))
        assert r.shape == (dyn.nv,) and np.all(np.isfinite(r))


def test_a_wrong_number_of_arguments_is_numba_s_type_error():
    """The fast refusal reads every array parameter's argument: Numba counts them first."""
    dyn = Dynamics.from_urdf(robot_path("arm7"))
    kernel = dyn.engine.kernels.check_position
    with pytest.raises(TypeError, match="not enough arguments: expected 3, got 2"):
        kernel(dyn.engine.mf, dyn.engine.ws)
    with pytest.raises(TypeError, match="too many arguments: expected 3, got 4"):
        kernel(dyn.engine.mf, dyn.engine.ws, np.zeros(7), np.zeros(7))
