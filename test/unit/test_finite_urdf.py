"""Finite or refused: URDF numbers beyond their bounds are a URDFError naming the element, and
at the extremes of everything accepted (model values at their bounds, inputs at ±1e50) every
output is finite.

Both sides of every bound are tested: the bound itself loads, the next double beyond it (and
NaN, inf) is refused with the element's path in the message.  Real robots (every URDF of
example-robot-data) pass the checks.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from support.oracle import erd_robots_dir, erd_urdf
from support.urdf_text import INERTIAL, joint, link, robot

from coriolis_ros.dynamics import Dynamics, MomentumObserver, URDFError
from coriolis_ros.dynamics import urdf_checks as uc
from coriolis_ros.dynamics.observer import MAX_GAIN
from coriolis_ros.dynamics.urdf_model import MAX_GRAVITY

# The bounds of docs/invariance.md's table (not the module's constants: a changed constant
# must fail here): m, rad, kg, kg m^2, and the mimic multiplier.
L, A, MASS, INERTIA, MULTIPLIER = 1e6, 1e6, 1e9, 1e21, 1e6


def beyond(x: float) -> float:
    return float(np.nextafter(x, math.inf))


def inertial(xyz="0.1 0 0", rpy="0 0 0", mass="1.5", ixx="0.02", iyy="0.03", izz="0.025",
             ixy="0.001") -> str:  # fmt: skip
    return (
        f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{mass}"/>'
        f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>'
    )


def arm(j2=None, l2=None, extra_joints="") -> str:
    """base -j1-> l1 -j2-> l2 (-j3-> l3), with j2's keyword overrides and l2's <inertial>."""
    return robot(
        link("base"), link("l1"), link("l2", l2 or INERTIAL), link("l3"),
        joint("j1", "base", "l1"), joint("j2", "l1", "l2", **(j2 or {})),
        extra_joints or joint("j3", "l2", "l3"),
    )  # fmt: skip


def mimic(multiplier, offset=0.0, leader="j1") -> str:
    return f'<mimic joint="{leader}" multiplier="{multiplier!r}" offset="{offset!r}"/>'


# (case, URDF builder from one value, the bound, the path in the message)
CASES = [
    ("joint origin xyz", lambda x: arm({"xyz": f"0 {x!r} 0"}), L,
     "/robot/joint[@name='j2']/origin xyz"),
    ("joint origin rpy", lambda x: arm({"rpy": f"{x!r} 0 0"}), A,
     "/robot/joint[@name='j2']/origin rpy"),
    ("axis", lambda x: arm({"axis": f"0 0 {x!r}"}), L, "/robot/joint[@name='j2']/axis xyz"),
    ("inertial origin xyz", lambda x: arm(l2=inertial(xyz=f"{x!r} 0 0")), L,
     "/robot/link[@name='l2']/inertial/origin xyz"),
    ("inertial origin rpy", lambda x: arm(l2=inertial(rpy=f"0 0 {x!r}")), A,
     "/robot/link[@name='l2']/inertial/origin rpy"),
    ("mass", lambda x: arm(l2=inertial(mass=repr(x))), MASS,
     "/robot/link[@name='l2']/inertial/mass value"),
    ("inertia", lambda x: arm(l2=inertial(ixx=repr(x), iyy=repr(x), izz=repr(x), ixy="0")),
     INERTIA, "/robot/link[@name='l2']/inertial/inertia ixx"),
    ("limit", lambda x: arm({"extra": f'<limit lower="-1" upper="{x!r}" effort="1" velocity="1"/>',
                             "jtype": "continuous"}),
     uc.MAX_LIMIT, "/robot/joint[@name='j2']/limit upper"),
    ("mimic multiplier", lambda x: arm({"extra": mimic(x)}), MULTIPLIER,
     "/robot/joint[@name='j2']/mimic multiplier"),
    ("mimic offset", lambda x: arm({"extra": mimic(1.0, x)}), L,
     "/robot/joint[@name='j2']/mimic offset"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "build", "bound", "path"), CASES, ids=[c[0] for c in CASES])
def test_bound_accepted_beyond_refused(case, build, bound, path):
    for x in (bound, -bound) if case not in ("mass", "inertia") else (bound,):
        dyn = Dynamics.from_urdf(build(x))  # the bound itself is a model
        assert dyn.nv >= 2
    bad = [math.nan, math.inf, -math.inf]
    if bound < uc.MAX_LIMIT:
        bad += [beyond(bound), -beyond(bound)] if case not in ("mass", "inertia") else [
            beyond(bound)]  # fmt: skip
    for x in bad:
        with pytest.raises(URDFError) as info:
            Dynamics.from_urdf(build(x))
        message = str(info.value)
        element, key = path.split()
        assert message.startswith(f"{element}: {key}="), (case, x, message)
        assert ("not finite" in message) if not math.isfinite(x) else (f"{bound:g}" in message)


def test_resolved_mimic_chain_bounded():
    """Each tag within its bound, but a chain multiplies them: the resolved one is bounded too."""
    chain = joint("j3", "l2", "l3", extra=mimic(1e3, leader="j2"))
    ok = Dynamics.from_urdf(arm({"extra": mimic(1e3)}, extra_joints=chain))
    assert ok.mimic_joints["j3"] == ("j1", 1e6, 0.0)
    chain = joint("j3", "l2", "l3", extra=mimic(beyond(1e3), leader="j2"))
    with pytest.raises(URDFError, match=r"^/robot/joint\[@name='j3'\]: follows 'j1'"):
        Dynamics.from_urdf(arm({"extra": mimic(1e3)}, extra_joints=chain))
    chain = joint("j3", "l2", "l3", extra=mimic(1.0, 5e5, leader="j2"))
    assert Dynamics.from_urdf(arm({"extra": mimic(1.0, 5e5)}, extra_joints=chain)).nv == 1
    chain = joint("j3", "l2", "l3", extra=mimic(1.0, 5e5 + 1.0, leader="j2"))
    with pytest.raises(URDFError, match="offset"):
        Dynamics.from_urdf(arm({"extra": mimic(1.0, 5e5)}, extra_joints=chain))
    # mimic="independent" reads no <mimic>: the chain is not resolved, the tags still bounded
    chain = joint("j3", "l2", "l3", extra=mimic(1e6, leader="j2"))
    urdf = arm({"extra": mimic(1e6)}, extra_joints=chain)
    assert Dynamics.from_urdf(urdf, mimic="independent").nv == 3


def test_gravity_locked_joints_and_rotors_bounded():
    urdf = arm()
    for g in ([0, 0, -MAX_GRAVITY], [MAX_GRAVITY, 0, 0]):
        Dynamics.from_urdf(urdf, gravity=g)
    for g in ([0, 0, -beyond(MAX_GRAVITY)], [math.nan, 0, 0], ["x", 0, 0]):
        with pytest.raises(URDFError, match="gravity"):
            Dynamics.from_urdf(urdf, gravity=g)
    assert Dynamics.from_urdf(urdf, locked_joints={"j2": L}).nv == 2
    with pytest.raises(ValueError, match="j2.*beyond"):
        Dynamics.from_urdf(urdf, locked_joints={"j2": -beyond(L)})
    rotor = {"gear_ratio": 10.0, "inertia": [INERTIA] * 3 + [0.0] * 3, "mass": MASS}
    assert Dynamics.from_urdf(urdf, rotors={"j2": rotor}).nv == 3
    for key, value in (("mass", beyond(MASS)), ("inertia", [beyond(INERTIA)] * 3 + [0.0] * 3)):
        with pytest.raises(URDFError, match=r"j2_rotor.*bound"):
            Dynamics.from_urdf(urdf, rotors={"j2": {**rotor, key: value}})


def test_every_example_robot_passes_the_checks():
    """Nothing legitimate is refused: every URDF of example-robot-data passes check_numbers,
    and a sample of them loads (fixed and floating)."""
    files = sorted(erd_robots_dir().rglob("*.urdf"))
    assert len(files) > 40
    for path in files:
        root = ET.parse(path).getroot()
        uc.check_numbers(root)
    for name in ("talos_full", "panda", "solo12", "romeo", "g1"):
        for root_joint in ("fixed", "floating"):
            assert Dynamics.from_urdf(str(erd_urdf(name)), root_joint=root_joint).nv > 6


# --------------------------------------------------------------------------- the extremes


def _extreme_robot(types, mimic_every: int = 0) -> str:
    """Every number at its bound: masses, inertias, lengths, angles, axes; joints of `types`."""
    body = inertial(xyz=f"{L!r} {-L!r} {L!r}", rpy=f"{A!r} {-A!r} {A!r}", mass=repr(MASS),
                    ixx=repr(INERTIA), iyy=repr(INERTIA), izz=repr(INERTIA), ixy="0")  # fmt: skip
    parts = [link(f"l{k}", body) for k in range(len(types) + 1)]
    for k, kind in enumerate(types):
        extra = ""
        if mimic_every and k % mimic_every == 1:
            extra = mimic(MULTIPLIER * (-1) ** k, 0.0, leader=f"j{k - 1}")
        parts.append(joint(
            f"j{k}", f"l{k}", f"l{k + 1}", kind, axis=f"{L!r} 1 {-L!r}",
            xyz=f"{L!r} {L!r} {-L!r}", rpy=f"0.3 {A!r} -0.2", extra=extra,
        ))  # fmt: skip
    return robot(*parts)


def _all_outputs(dyn, q, qd):
    M, Mdot, C = dyn.coriolis(q, qd)
    Q, V = q[None, :], qd[None, :]
    return [M, Mdot, C, dyn.christoffel(q), dyn.mass_matrix(q), dyn.gravity(q),
            dyn.inverse_dynamics(q, qd, qd), *dyn.coriolis_vectors(q, qd),
            dyn.coriolis_times(q, qd, qd), dyn.slotine_li(q, qd, qd, qd),
            *dyn.coriolis_batch(Q, V), dyn.christoffel_batch(Q), dyn.gravity_batch(Q),
            dyn.inverse_dynamics_batch(Q, V, V), *dyn.coriolis_vectors_batch(Q, V),
            dyn.slotine_li_batch(Q, V, V, V)]  # fmt: skip


@pytest.mark.parametrize("root_joint", ["fixed", "floating"])
def test_everything_at_its_bound_gives_finite_outputs(root_joint):
    rng = np.random.default_rng(9)
    types = ["revolute"] + list(rng.choice(  # floating and planar joints inside the tree
        ["revolute", "prismatic", "continuous", "floating", "planar"], 24,
        p=[0.35, 0.35, 0.1, 0.1, 0.1]))  # fmt: skip
    dyn = Dynamics.from_urdf(_extreme_robot(types), root_joint=root_joint)
    big = 1e50
    for _ in range(4):
        q, qd = rng.choice([-big, big], dyn.nq), rng.choice([-big, big], dyn.nv)
        outputs = _all_outputs(dyn, q, qd)
        assert all(np.isfinite(x).all() for x in outputs)
        assert max(float(np.abs(x).max()) for x in outputs) > 1e150  # really at the extreme
    with pytest.raises(ValueError, match="1e\\+50"):
        dyn.gravity(np.nextafter(np.full(dyn.nq, big), np.inf))


def test_coupled_extremes_are_finite_or_refused():
    """Mimic multipliers at ±1e6: the tree's q = 1e6 qbar may not exceed the input bound (a
    ValueError), and at the largest accepted qbar every output is finite."""
    types = ["revolute", "prismatic"] * 5
    dyn = Dynamics.from_urdf(_extreme_robot(types, mimic_every=2), root_joint="floating")
    assert len(dyn.mimic_joints) == 5
    rng = np.random.default_rng(4)
    with pytest.raises(ValueError, match="1e\\+50"):
        dyn.coriolis(np.full(dyn.nq, 1e50), np.zeros(dyn.nv))
    for _ in range(3):
        q, qd = rng.choice([-1e44, 1e44], dyn.nq), rng.choice([-1e44, 1e44], dyn.nv)
        assert all(np.isfinite(x).all() for x in _all_outputs(dyn, q, qd))


def test_observer_and_integrate_at_the_extremes():
    dyn = Dynamics.from_urdf(_extreme_robot(["revolute", "prismatic", "revolute"]))
    obs = MomentumObserver(dyn, gain=MAX_GAIN)
    q = np.full(dyn.nq, 1e50)
    obs.update(0.0, q, q, q)
    for t in (5e-324, 1e-300, 1.0, 1e50):  # the shortest and longest steps
        q = -q
        assert np.isfinite(obs.update(t, q, q, q)).all()
    with pytest.raises(ValueError, match="gain must be at most"):
        MomentumObserver(dyn, gain=beyond(MAX_GAIN))
    v = np.full(dyn.nv, 1e50)
    assert np.isfinite(dyn.integrate(np.zeros(dyn.nq), v, 1.0)).all()
    with pytest.raises(ValueError, match="leaves the accepted range"):
        dyn.integrate(np.zeros(dyn.nq), v, 1.0000001)
