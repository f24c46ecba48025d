"""api_batches: warmup_batch runs on a tree, a coupled model and a floating base, and every
batch method returns its results (row t equal to the single-state call, the reference).
"""

from __future__ import annotations

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path


@pytest.mark.parametrize(
    "robot,root", [("arm7", "fixed"), ("arm7_rotors", "fixed"), ("quadruped12", "floating")]
)
def test_warmup_batch_then_every_batch_method_returns_the_single_calls(robot, root):
    dyn = Dynamics.from_urdf(robot_path(robot), root_joint=root)
    dyn.warmup_batch()
    rng = np.random.default_rng(2)
    Q = np.array([dyn.integrate(dyn.neutral(), rng.normal(size=dyn.nv)) for _ in range(3)])
    V, A, B = (rng.normal(size=(3, dyn.nv)) for _ in range(3))
    got = {
        "coriolis": dyn.coriolis_batch(Q, V),
        "christoffel": dyn.christoffel_batch(Q),
        "coriolis_vectors": dyn.coriolis_vectors_batch(Q, V),
        "inverse_dynamics": dyn.inverse_dynamics_batch(Q, V, A),
        "slotine_li": dyn.slotine_li_batch(Q, V, A, B),
        "gravity": dyn.gravity_batch(Q),
    }
    for t in range(3):
        want = {
            "coriolis": dyn.coriolis(Q[t], V[t]),
            "christoffel": dyn.christoffel(Q[t]),
            "coriolis_vectors": dyn.coriolis_vectors(Q[t], V[t]),
            "inverse_dynamics": dyn.inverse_dynamics(Q[t], V[t], A[t]),
            "slotine_li": dyn.slotine_li(Q[t], V[t], A[t], B[t]),
            "gravity": dyn.gravity(Q[t]),
        }
        for name, value in want.items():
            if isinstance(value, tuple):
                for g, w in zip(got[name], value, strict=True):
                    np.testing.assert_array_equal(g[t], w, err_msg=name)
            else:
                np.testing.assert_array_equal(got[name][t], value, err_msg=name)
