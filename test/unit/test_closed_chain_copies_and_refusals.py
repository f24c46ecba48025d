"""A closed chain's state across copies and refused states, and compute_terms on a floating one.

References, none of them the state under test:
* an instance that never saw the refused state, or the original a copy was made from, going
  through the same calls (the closure depends only on the calls made since construction);
* M(q) is linear in the inertial parameters: scaling every one by s scales M by s;
* the closed chain's Mbardot = Cbar + Cbar^T (Wensing & Slotine's factorization).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.offline import bag as offline
from coriolis_ros.robots import robot_path

pytestmark = pytest.mark.slow  # not in make test-fast (docs/testing.md)

FOUR_BAR = robot_path("four_bar")
LEG = robot_path("leg_knee_linkage")
# The four-bar with a flap beside it: an independent joint outside the loop, with a geared
# rotor (a follower) that the closure places after closing the loop.
FLAPPED = FOUR_BAR.read_text().replace(
    '<loop name="closure"',
    '<link name="flap_link"><inertial><origin xyz="0 0 0.1"/><mass value="0.3"/>'
    '<inertia ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial></link>'
    '<joint name="flap" type="continuous"><parent link="base"/><child link="flap_link"/>'
    '<origin xyz="0 0.3 0"/><axis xyz="0 0 1"/></joint><loop name="closure"',
)
FLAP_ROTOR = {"flap": {"gear_ratio": 10.0, "inertia": [2e-5, 2e-5, 4e-5, 0, 0, 0], "mass": 0.1}}


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint64)


def _relative(got, want):
    return float(np.abs(got - want).max() / np.abs(want).max())


def _floating_leg():
    return Dynamics.from_urdf(LEG, root_joint="floating", independent_joints=["hip", "knee_crank"])


def _floating_leg_rows(dyn, T=40):
    """A smooth path of the floating leg: the base drifting and turning, the joints swinging."""
    t = np.arange(T) * 0.01
    Q = np.tile(dyn.neutral(), (T, 1))
    Q[:, :3] = np.stack([0.1 * t, -0.2 * t, 0.5 + 0.05 * np.sin(t)], axis=1)
    quat = np.stack([0.1 * np.sin(2 * t), 0.2 * t, 0.05 + 0 * t, 1 + 0 * t], axis=1)
    Q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    Q[:, -2:] = np.stack([0.3 + 0.4 * np.sin(3 * t), 0.6 + 0.3 * np.cos(2 * t)], axis=1)
    V = np.tile(np.linspace(-0.8, 0.7, dyn.nv), (T, 1)) * np.cos(t)[:, None]
    return Q, V


def test_compute_terms_on_a_floating_closed_chain_takes_velocities_of_nv():
    """Q rows have nq entries (the base's quaternion), V rows nv: compute_terms refused every
    floating closed chain, asking for V of Q's width."""
    Q, V = _floating_leg_rows(_floating_leg())  # neutral() closes the loops of its instance
    dyn = _floating_leg()
    assert (dyn.nq, dyn.nv) == (9, 8)
    got = offline.compute_terms(dyn, Q, V)
    ref = _floating_leg()  # the single-state calls, in the tick's order, on a new instance
    for t in range(len(Q)):
        M, Mdot, C = ref.coriolis(Q[t], V[t])
        vectors = ref.coriolis_vectors(Q[t], V[t])
        g = ref.gravity(Q[t])
        for name, value in (("mass_matrix", M), ("mass_matrix_derivative", Mdot),
                            ("coriolis_matrix", C), ("coriolis_force", vectors[0]),
                            ("coriolis_transpose_force", vectors[1]), ("momentum", vectors[2]),
                            ("gravity_force", g)):  # fmt: skip
            assert np.array_equal(_bits(got[name][t]), _bits(value)), (t, name)
    Mdot, C = got["mass_matrix_derivative"], got["coriolis_matrix"]
    assert np.allclose(Mdot, C + C.transpose(0, 2, 1), rtol=0, atol=1e-12 * np.abs(Mdot).max())
    # the widths are still checked, both of them
    with pytest.raises(ValueError, match=r"\(T, 9\) and \(T, 8\) arrays, got \(40, 9\) and"):
        offline.compute_terms(_floating_leg(), Q, np.zeros((40, 9)))
    with pytest.raises(ValueError, match=r"\(T, 9\) and \(T, 8\) arrays, got \(40, 8\) and"):
        offline.compute_terms(_floating_leg(), Q[:, :8], V)
    with pytest.raises(ValueError, match=r"got \(40, 9\) and \(39, 8\)"):
        offline.compute_terms(_floating_leg(), Q, V[:39])


def test_a_follower_out_of_range_leaves_no_stale_answer_at_the_last_state():
    """A state whose follower would be beyond +-1e50 is refused after the loop was closed there:
    A and dA were the refused state's, and the instance still answered the state before it from
    its cache with them (Mbar off by 0.014 here)."""
    y0 = np.array([0.4, 0.2])  # (crank, flap)
    qd = np.array([1.0, 0.5])
    dyn = Dynamics.from_urdf(FLAPPED, rotors=FLAP_ROTOR)
    assert dyn.joint_names == ("crank", "flap")
    assert "flap_rotor" in dyn.closed.dependent_joints
    dyn.coriolis(y0, qd)
    y1 = np.array([0.9, 2e49])  # the crank moves, the flap's rotor would be at 2e50
    with pytest.raises(ValueError, match="'flap' must stay within"):
        dyn.coriolis(y1, qd)
    fresh = Dynamics.from_urdf(FLAPPED, rotors=FLAP_ROTOR)
    for got, want in zip(dyn.coriolis(y0, qd), fresh.coriolis(y0, qd), strict=True):
        assert _relative(got, want) < 1e-12
    assert _relative(dyn.mass_matrix(y0), fresh.mass_matrix(y0)) < 1e-12
    A, dA = dyn.velocity_map(y0)
    A_want, dA_want = fresh.velocity_map(y0)
    assert _relative(A, A_want) < 1e-12
    assert np.abs(dA - dA_want).max() < 1e-12 * np.abs(dA_want).max()
    # the closure itself refuses the same way, and leaves the same state behind
    with pytest.raises(ValueError, match="'flap' must stay within"):
        dyn.close_loops(y1)
    assert _relative(dyn.gravity(y0), fresh.gravity(y0)) < 1e-12


@pytest.mark.parametrize("name", ["four_bar", "leg"])
def test_a_clone_continues_as_the_original_does(name):
    """The clone copied the workspace (with the QR of K_z for the next chord step) but not the
    QR's column permutation, which lives in ci: its first chord step was wrong, and its
    numbers drifted from the original's in their last bits."""
    if name == "four_bar":
        dyn = Dynamics.from_urdf(FOUR_BAR)
    else:
        dyn = Dynamics.from_urdf(LEG, independent_joints=["hip", "knee_crank"])
    y = dyn.neutral() + 0.1
    qd = np.linspace(-1, 1, dyn.nv)
    for k in range(3):
        dyn.coriolis(y + 0.03 * k, qd)
    other = dyn.clone()
    for k in range(3, 30):
        yk = y + 0.03 * k
        for a, b in zip(dyn.coriolis(yk, qd), other.coriolis(yk, qd), strict=True):
            assert np.array_equal(_bits(a), _bits(b)), k
        assert np.array_equal(_bits(dyn.christoffel(yk)), _bits(other.christoffel(yk))), k


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))])
def test_a_pickled_or_deep_copied_closed_chain_follows_its_own_closure(copier):
    """Pickling separated the closure's workspace from its views (last, A, dA) and from the
    packed array the compiled calls use: the copy's mass matrix and gravity were those of the
    tree's neutral configuration, whatever the state asked for."""
    dyn = Dynamics.from_urdf(FOUR_BAR)
    dyn.coriolis([0.3], [1.0])
    other = copier(dyn)
    assert other is not dyn
    for y in (0.35, 0.6, 1.0):
        for a, b in zip(dyn.coriolis([y], [1.0]), other.coriolis([y], [1.0]), strict=True):
            assert np.array_equal(_bits(a), _bits(b)), y
        assert np.array_equal(_bits(dyn.mass_matrix([y])), _bits(other.mass_matrix([y]))), y
        assert np.array_equal(_bits(dyn.gravity([y])), _bits(other.gravity([y]))), y
        assert np.array_equal(_bits(dyn.full_position([y])), _bits(other.full_position([y])))
        assert other.full_position([y])[0] == y  # the crank is where it was asked to be
    want = dyn.close_loops([1.1])
    got = other.close_loops([1.1])
    assert got[0] == 1.1 and np.array_equal(_bits(got), _bits(want))
    # the copy's workspace is its own
    other.coriolis([-0.5], [1.0])
    assert dyn.full_position([1.1])[0] == 1.1


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))])
def test_a_pickled_or_deep_copied_tree_takes_new_inertial_parameters(copier):
    """The kernels read the parameters through a read-only view of the store that
    set_inertial_parameters writes: pickling separated the two, and new parameters changed
    nothing.  M is linear in the parameters: scaling them by 1.5 scales M by 1.5."""
    arm = Dynamics.from_urdf(robot_path("arm7"))
    other = copier(arm)
    q = np.linspace(-1, 1, arm.nq)
    M = arm.mass_matrix(q)
    other.set_inertial_parameters(1.5 * arm.inertial_parameters())
    assert _relative(other.mass_matrix(q), 1.5 * M) < 1e-13
    assert np.array_equal(_bits(arm.mass_matrix(q)), _bits(M))  # the original is untouched
    # a copy of changed parameters keeps them
    again = copier(other)
    assert np.array_equal(_bits(again.mass_matrix(q)), _bits(other.mass_matrix(q)))


@pytest.mark.parametrize("T, chunk", [(250, 100), (200, 100), (3, 1), (5, 2048)])
def test_compute_terms_reports_progress_every_chunk_on_a_closed_chain_too(T, chunk):
    """The closed chain's rows reported every 2048 rows whatever ``chunk`` said; the tree's
    path reports after each chunk of rows: (chunk, T), (2 chunk, T), ..., (T, T)."""
    want = [(min(b, T), T) for b in range(chunk, T + chunk, chunk)]
    Q, V = np.full((T, 1), 0.3), np.ones((T, 1))
    calls = []
    offline.compute_terms(Dynamics.from_urdf(FOUR_BAR), Q, V, progress=lambda *a: calls.append(a),
                          chunk=chunk)  # fmt: skip
    assert calls == want
    arm = Dynamics.from_urdf(robot_path("arm7"))  # the batched path, the same steps
    tree_calls = []
    offline.compute_terms(arm, np.zeros((T, 7)), np.zeros((T, 7)),
                          progress=lambda *a: tree_calls.append(a), chunk=chunk)  # fmt: skip
    assert tree_calls == want
