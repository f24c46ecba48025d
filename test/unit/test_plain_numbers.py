"""Error messages show numbers as numbers: ``-2.0``, ``nan``, ``[0.0, 0.0, nan]``, never numpy's
``np.float64(-2.0)`` or ``array([...])`` (numpy 2's repr of its scalars), whatever type the
caller passed.  Each message is asserted in full."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from support.urdf_text import joint, link, robot

from coriolis_ros.demo.passivity_controller import _positive as demo_positive
from coriolis_ros.demo.passivity_plant import RigidBodyPlant
from coriolis_ros.dynamics import (
    AdaptiveController,
    Dynamics,
    MomentumObserver,
    URDFError,
    identify,
)
from coriolis_ros.dynamics.couplings import check_rotor
from coriolis_ros.dynamics.errors import plain
from coriolis_ros.dynamics.factorizations import admissible_contorsion
from coriolis_ros.node.params import gain_problem
from coriolis_ros.stream.observer_feed import observer_gains

TWO_LINKS = robot(
    link("base", None), link("l1"), link("l2"),
    joint("j1", "base", "l1"), joint("j2", "l1", "l2"),
)  # fmt: skip
NUMPY_REPR = re.compile(r"np\.|array\(")


@pytest.fixture(scope="module")
def dyn():
    return Dynamics.from_urdf(TWO_LINKS)


def _message(call, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as info:
        call(*args, **kwargs)
    text = str(info.value)
    assert not NUMPY_REPR.search(text), text
    return text


def test_plain_turns_numpy_values_into_python_ones():
    assert repr(plain(np.float64(-2.0))) == "-2.0"
    assert repr(plain(np.float32(0.5))) == "0.5"
    assert repr(plain(np.int64(-3))) == "-3"
    assert repr(plain(np.array([0.0, math.nan]))) == "[0.0, nan]"
    assert repr(plain(np.array(1.5))) == "1.5"
    assert plain("text") == "text" and plain(None) is None and plain(2.5) == 2.5


@pytest.mark.parametrize("bad", [np.float64(-2.0), -2.0])
def test_observer_feed_gain(bad):
    text = _message(observer_gains, [1.0] * 6 + [bad], 7)
    assert text == "observer_gain must be positive and finite (1/s), got -2.0"
    text = _message(observer_gains, np.array([1.0, -2.0]), 2)
    assert text == "observer_gain must be positive and finite (1/s), got -2.0"
    text = _message(observer_gains, np.float64(math.nan), 2)
    assert text == "observer_gain must be positive and finite (1/s), got nan"


def test_momentum_observer_gain(dyn):
    text = _message(MomentumObserver, dyn, np.array([1.0, -2.0]))
    assert text == "gain must be positive and finite (1/s), got -2.0"
    text = _message(MomentumObserver, dyn, np.float64(2e6))
    assert text == "gain must be at most 1e+06 (1/s), got 2000000.0"


def test_node_parameter_gain():
    assert gain_problem([1.0, np.float64(-2.0)]) == (
        "observer_gain must be positive and finite (1/s), got -2.0"
    )


def test_identify_stamps_and_integers(dyn):
    t = np.array([0.0, 2.0, 1.0])
    Q = V = TAU = np.zeros((3, 2))
    text = _message(identify, dyn, t, Q, V, TAU)
    assert text == "t must increase strictly: t[2] = 1.0 after t[1] = 2.0"
    t = np.array([0.0, 1.0, 2.0])
    text = _message(identify, dyn, t, Q, V, TAU, window=np.int64(0))
    assert text == "window must be an integer >= 1, got 0"


def test_inertial_parameters(dyn):
    pi = dyn.inertial_parameters()
    pi[3] = math.nan
    text = _message(dyn.set_inertial_parameters, pi)
    assert text == (
        "pi[3] (mc_z of link 'l1') is nan: parameters must be finite and within ±1e+50"
    ), text


def test_adaptive_controller_gains(dyn):
    text = _message(AdaptiveController, dyn, 1e-3, [1.0, -3.0], 1.0, 1.0)
    assert text == "lam[1] must be finite and positive, got -3.0"
    text = _message(AdaptiveController, dyn, 1e-3, 1.0, 1.0, 1.0, margin=np.float64(math.inf))
    assert text == "margin must be a finite number, got inf"


def test_rotor_datasheet_number():
    spec = {"gear_ratio": np.float64(math.nan), "inertia": [1e-4] * 3 + [0.0] * 3}
    text = _message(check_rotor, "j1", spec)
    assert text == "rotors: joint 'j1': gear_ratio must be finite, got nan"


def test_gravity_argument():
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf(TWO_LINKS, gravity=np.array([0.0, 0.0, math.nan]))
    assert str(info.value) == "gravity must be 3 finite numbers, got [0.0, 0.0, nan]"
    with pytest.raises(URDFError) as info:
        Dynamics.from_urdf(TWO_LINKS, gravity=np.array([0.0, 0.0, -2e6]))
    assert str(info.value) == (
        "gravity must be within ±1e+06 m/s^2 per component, got [0.0, 0.0, -2000000.0]"
    )


def test_contorsion_indices():
    text = _message(admissible_contorsion, 3, {(np.int64(0), np.int64(0), np.int64(1)): 1.0})
    assert text == "psi's indices must be distinct and below 3, got (0, 0, 1)"


def test_demo_messages(dyn):
    text = _message(demo_positive, np.float64(-1.0), 2, "lam")
    assert text == "lam must be positive and finite, one value or 2, got -1.0"
    text = _message(RigidBodyPlant, dyn, np.array([0.0, math.nan]), np.zeros(2))
    assert text == "q0 must be 2 finite numbers, got [0.0, nan]"
