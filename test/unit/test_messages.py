"""coriolis_ros.messages: state_to_numpy / numpy_to_state on the generated message classes.

The layout is checked element by element against the documented convention (C_ij at
i*n + j, Γ_ijk at (i*n + j)*n + k), not through reshape, and the values come from the library.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from coriolis_ros.messages import (
    MATRIX_FIELDS,
    RESPONSE_FIELDS,
    STATE_FIELDS,
    STRING_FIELDS,
    VECTOR_FIELDS,
    numpy_to_state,
    state_to_numpy,
)
from coriolis_ros.msg import CoriolisState
from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols


@pytest.fixture(scope="module")
def terms():
    """Values of every field for a 7-joint robot; C and Ṁ = C + Cᵀ, Γ with C = Γ q̇ (random,
    with the identities the real terms satisfy, so the checks below can use them)."""
    n = 7
    rng = np.random.default_rng(11)
    qd = rng.uniform(-2, 2, n)
    gamma = rng.normal(size=(n, n, n))
    gamma = 0.5 * (gamma + gamma.transpose(0, 2, 1))  # Γ_ijk = Γ_ikj
    C = np.einsum("ijk,k->ij", gamma, qd)
    A = rng.normal(size=(n, n))
    M = A @ A.T + n * np.eye(n)
    return {
        "joint_names": [f"joint_{i}" for i in range(n)],
        "position": rng.uniform(-1, 1, n),
        "velocity": qd,
        "coriolis_matrix": C,
        "coriolis_force": C @ qd,
        "coriolis_transpose_force": C.T @ qd,
        "mass_matrix": M,
        "mass_matrix_derivative": C + C.T,
        "gravity_force": rng.normal(size=n),
        "momentum": M @ qd,
        "symbols": gamma,
    }


def test_field_lists_match_the_generated_messages():
    """Every field of the generated messages is handled, in the message's order (STATE_FIELDS
    may also name fields of newer interface versions: they are skipped where absent)."""
    fields = list(CoriolisState.get_fields_and_field_types())
    assert fields[0] == "header"
    assert [f for f in STATE_FIELDS if f in fields] == fields[1:]
    response = ComputeDynamics.Response.get_fields_and_field_types()
    handled = {*STATE_FIELDS, *RESPONSE_FIELDS, "success", "message"}
    assert set(response) <= handled
    assert set(VECTOR_FIELDS + MATRIX_FIELDS + STRING_FIELDS) == set(STATE_FIELDS)


def test_numpy_to_state_follows_the_row_major_convention(terms):
    msg = numpy_to_state(terms)
    assert isinstance(msg, CoriolisState)
    n = len(terms["joint_names"])
    assert list(msg.joint_names) == terms["joint_names"]
    for key in MATRIX_FIELDS:
        flat = getattr(msg, key)
        assert len(flat) == n * n
        for i in range(n):
            for j in range(n):
                assert flat[i * n + j] == terms[key][i, j], (key, i, j)
    for key in (f for f in VECTOR_FIELDS if f in terms):
        assert list(getattr(msg, key)) == list(terms[key]), key


def test_state_to_numpy_round_trips_a_message(terms):
    msg = numpy_to_state(terms)
    msg.header.stamp.sec, msg.header.stamp.nanosec = 12, 345
    msg.header.frame_id = "base"
    arrays = state_to_numpy(msg)
    present = [f for f in STATE_FIELDS if hasattr(msg, f)]
    assert list(arrays) == ["header", *present]
    assert arrays["header"].stamp.sec == 12 and arrays["header"].frame_id == "base"
    n = len(terms["joint_names"])
    for key in (f for f in present if f in terms and f != "joint_names"):
        expected_shape = (n, n) if key in MATRIX_FIELDS else (n,)
        assert arrays[key].shape == expected_shape, key
        np.testing.assert_array_equal(arrays[key], terms[key], err_msg=key)
    again = numpy_to_state(arrays)
    assert again == msg  # every field, header included
    # the Christoffel-consistency identity holds on the arrays as returned
    C, Mdot = arrays["coriolis_matrix"], arrays["mass_matrix_derivative"]
    assert np.abs(Mdot - C - C.T).max() < 1e-12


def test_optional_fields_left_empty_are_none_both_ways(terms):
    partial = dict(terms, mass_matrix=None, momentum=None)
    del partial["mass_matrix_derivative"]
    msg = numpy_to_state(partial)
    assert len(msg.mass_matrix) == 0 and len(msg.momentum) == 0
    assert len(msg.mass_matrix_derivative) == 0
    arrays = state_to_numpy(msg)
    assert arrays["mass_matrix"] is None and arrays["momentum"] is None
    assert arrays["mass_matrix_derivative"] is None
    assert arrays["coriolis_matrix"].shape == (7, 7)


def test_wrong_lengths_raise_naming_the_field(terms):
    msg = numpy_to_state(terms)
    msg.coriolis_force = msg.coriolis_force[:-1]
    with pytest.raises(ValueError, match="coriolis_force"):
        state_to_numpy(msg)
    bad = dict(terms, mass_matrix=np.zeros((7, 6)))
    with pytest.raises(ValueError, match="mass_matrix"):
        numpy_to_state(bad)
    # the bound itself: exactly n*n values is fine, one more is not
    msg = numpy_to_state(terms)
    msg.mass_matrix = list(msg.mass_matrix) + [0.0]
    with pytest.raises(ValueError, match="mass_matrix"):
        state_to_numpy(msg)
    with pytest.raises(ValueError, match="joint_names"):
        state_to_numpy(types.SimpleNamespace(position=[1.0]))


def test_christoffel_response_symbols_are_n_by_n_by_n(terms):
    n = len(terms["joint_names"])
    gamma = terms["symbols"]
    response = GetChristoffelSymbols.Response(
        success=True, joint_names=terms["joint_names"], position=terms["position"].tolist()
    )
    response.symbols = [float(gamma[i, j, k]) for i in range(n) for j in range(n) for k in range(n)]
    arrays = state_to_numpy(response)
    assert arrays["success"] is True
    assert arrays["symbols"].shape == (n, n, n)
    np.testing.assert_array_equal(arrays["symbols"], gamma)
    C = np.einsum("ijk,k->ij", arrays["symbols"], terms["velocity"])
    np.testing.assert_allclose(C, terms["coriolis_matrix"], rtol=1e-10, atol=1e-12)


def test_compute_dynamics_response_and_views(terms):
    response = numpy_to_state(terms, msg=ComputeDynamics.Response(success=True, message="ok"))
    arrays = state_to_numpy(response, copy=False)
    assert arrays["success"] is True and arrays["message"] == "ok"
    view = arrays["coriolis_matrix"]
    assert np.shares_memory(view, np.frombuffer(response.coriolis_matrix, dtype=np.float64))
    assert not view.flags.writeable
    copied = state_to_numpy(response)["coriolis_matrix"]
    assert copied.flags.writeable
    assert not np.shares_memory(copied, np.frombuffer(response.coriolis_matrix))
    assert arrays["slotine_li_torque"] is None  # no reference in the request: empty
    n = len(terms["joint_names"])
    response.slotine_li_torque = np.arange(n, dtype=np.float64).tolist()
    np.testing.assert_array_equal(state_to_numpy(response)["slotine_li_torque"], np.arange(n))
    response.slotine_li_torque = [1.0] * (n + 1)
    with pytest.raises(ValueError, match="slotine_li_torque"):
        state_to_numpy(response)


def test_works_without_ros_on_plain_objects():
    """Recorded messages (e.g. read with rosbags) are plain objects with the same fields."""
    msg = types.SimpleNamespace(
        joint_names=["a", "b"], coriolis_matrix=[1.0, 2.0, 3.0, 4.0], momentum=[5.0, 6.0]
    )
    arrays = state_to_numpy(msg)
    np.testing.assert_array_equal(arrays["coriolis_matrix"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(arrays["momentum"], [5.0, 6.0])
    assert "mass_matrix" not in arrays


def test_floating_base_position_follows_position_names():
    """A floating base's message has nq = n + 1 positions named by position_names."""
    n = 3
    msg = types.SimpleNamespace(
        joint_names=["root_joint/linear_x", "root_joint/linear_y", "j1"],
        position_names=["root_joint/x", "root_joint/y", "root_joint/theta", "j1"],
        position=[0.1, 0.2, 0.3, 0.4],
        velocity=[1.0, 2.0, 3.0],
        effort=[],
        external_effort=[0.5, 0.0, -0.5],
        coriolis_matrix=list(range(n * n)),
    )
    arrays = state_to_numpy(msg)
    assert arrays["position_names"] == msg.position_names
    assert arrays["position"].shape == (4,) and arrays["velocity"].shape == (3,)
    assert arrays["effort"] is None and arrays["external_effort"].shape == (3,)
    msg.position = msg.position[:3]  # one per joint name, but position_names says four
    with pytest.raises(ValueError, match="position"):
        state_to_numpy(msg)


def test_numpy_to_state_refuses_fields_the_message_lacks(terms):
    target = types.SimpleNamespace(joint_names=[], position=[], header=None)
    with pytest.raises(ValueError, match="velocity"):
        numpy_to_state({"joint_names": ["a"], "position": [1.0], "velocity": [2.0]}, msg=target)
    numpy_to_state({"joint_names": ["a"], "position": [1.0]}, msg=target)
    assert target.joint_names == ["a"] and list(target.position) == [1.0]
