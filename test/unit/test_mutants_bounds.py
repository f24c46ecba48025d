"""dynamics.bounds against a hand-derived bound: a planar two-link arm with point masses.

With h = m2 l1 lc2 sin(q2) (the standard two-link arm), C(q, v) = -h [[v2, v1 + v2], [-v1, 0]],
so Gamma unfolded along its last index is G = -h [[0, 1], [1, 1], [-1, 0], [0, 0]] and
G^T G = h^2 [[2, 1], [1, 2]]: k(q) = sigma_max(G) = sqrt(3) |h|. Joints hung below the arm
with no mass change nothing, so a chain of 12 or 13 coordinates has the same k(q): the box's
corners (sampled up to 12 coordinates) decide whether k_c is the exact maximum.
"""

from __future__ import annotations

import math
import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.dynamics import bounds as B

M2, L1, LC2 = 2.0, 0.5, 0.3
K = math.sqrt(3.0) * M2 * L1 * LC2  # k(q) = K |sin q2|


def arm(extra: int = 0, base_limits=True) -> str:
    """Two revolute joints about z (point masses 1 kg at 0.4 m and 2 kg at 0.3 m), then
    ``extra`` massless revolute joints; no gravity needed."""
    limit = '<limit lower="-2.5" upper="2.5" effort="1" velocity="1"/>' if base_limits else ""
    links = ['<link name="world"/>', '<link name="l1"><inertial><mass value="1"/>'
             '<origin xyz="0.4 0 0"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/>'
             '</inertial></link>', f'<link name="l2"><inertial><mass value="{M2}"/>'
             f'<origin xyz="{LC2} 0 0"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" '
             'iyz="0"/></inertial></link>']  # fmt: skip
    joints = [f'<joint name="j1" type="revolute"><parent link="world"/><child link="l1"/>'
              f'<axis xyz="0 0 1"/>{limit}</joint>',
              f'<joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/>'
              f'<origin xyz="{L1} 0 0"/><axis xyz="0 0 1"/></joint>']  # fmt: skip
    parent = "l2"
    for k in range(extra):
        links.append(f'<link name="e{k}"/>')
        joints.append(f'<joint name="x{k}" type="revolute"><parent link="{parent}"/>'
                      f'<child link="e{k}"/><axis xyz="0 1 0"/>'
                      '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')  # fmt: skip
        parent = f"e{k}"
    return '<robot name="arm">' + "".join(links + joints) + "</robot>"


def test_the_arm_is_the_textbook_arm():
    """The reference itself, against the library's C at one state (not through bounds)."""
    dyn = Dynamics.from_urdf(arm(), gravity=(0, 0, 0))
    q, v = np.array([0.3, 0.7]), np.array([1.3, -0.4])
    h = -M2 * L1 * LC2 * math.sin(q[1])
    want = h * np.array([[v[1], v[0] + v[1]], [-v[0], 0.0]])
    np.testing.assert_allclose(dyn.coriolis(q, v)[2], want, rtol=0, atol=1e-15)


def test_gain_at_a_configuration_is_sqrt3_h():
    dyn = Dynamics.from_urdf(arm(), gravity=(0, 0, 0))
    for q2 in (0.0, 0.4, -1.1, 2.0):
        assert B.coriolis_gain(dyn, np.array([0.9, q2])) == pytest.approx(
            K * abs(math.sin(q2)), rel=1e-12, abs=1e-15
        )


def test_lower_gain_is_the_true_maximum_of_c_over_unit_velocities():
    """max over |v| = 1 of ||C(q, v)||_2, by a dense scan of the unit circle, is what the power
    method finds (a 2 x 2 problem has no other local maximum here), and it is below k(q)."""
    dyn = Dynamics.from_urdf(arm(), gravity=(0, 0, 0))
    q = np.array([0.2, 1.0])
    h = M2 * L1 * LC2 * math.sin(1.0)
    phi = np.linspace(0, np.pi, 200001)
    best = max(np.linalg.norm(h * np.array([[s, c + s], [-c, 0.0]]), 2)
               for c, s in zip(np.cos(phi[::50]), np.sin(phi[::50]), strict=True))  # fmt: skip
    k_lo, v = B.coriolis_gain_lower(dyn, q)
    assert abs(np.linalg.norm(v) - 1.0) < 1e-14
    assert np.linalg.norm(dyn.coriolis(q, v)[2], 2) == pytest.approx(k_lo, rel=1e-12)
    assert k_lo == pytest.approx(best, rel=1e-6) and k_lo >= best * (1 - 1e-12)
    assert k_lo <= K * math.sin(1.0) * (1 + 1e-12)


def test_a_peak_at_the_centre_of_the_box_is_found_exactly():
    """sin peaks at pi/2, the box's centre in q2: no random sample lands there, the centre
    is always sampled."""
    dyn = Dynamics.from_urdf(arm(), gravity=(0, 0, 0))
    res = B.coriolis_bound(dyn, [-0.4, math.pi / 2 - 0.6], [0.4, math.pi / 2 + 0.6], samples=5)
    assert res.k_c == pytest.approx(K, rel=1e-13)
    assert res.q_max[1] == pytest.approx(math.pi / 2, abs=1e-15) and res.q_max[0] == 0.0
    assert res.samples == 1 + 4 + 5  # centre, corners, samples
    assert res.k_lower <= res.k_c * (1 + 1e-12)
    assert res.ratio == pytest.approx(res.k_c / res.k_lower, rel=1e-15)


@pytest.mark.parametrize("chunk", [1, 3, 256])
def test_a_peak_at_a_corner_is_found_exactly_with_12_coordinates(chunk):
    """12 coordinates: the 4096 corners are sampled, the maximum at q2 = 1.2 (a corner) is
    exact, whatever the chunk size. With 13 no corner is sampled."""
    dyn = Dynamics.from_urdf(arm(extra=10), gravity=(0, 0, 0))
    assert dyn.nq == 12
    lo, hi = -0.5 * np.ones(12), 0.5 * np.ones(12)
    lo[1], hi[1] = 0.2, 1.2
    res = B.coriolis_bound(dyn, lo, hi, samples=3 if chunk != 1 else 1, chunk=chunk)
    assert res.k_c == pytest.approx(K * math.sin(1.2), rel=1e-12)
    assert res.q_max[1] == 1.2
    assert res.samples == 1 + 4096 + (3 if chunk != 1 else 1)
    dyn13 = Dynamics.from_urdf(arm(extra=11), gravity=(0, 0, 0))
    lo13, hi13 = np.r_[lo, -0.5], np.r_[hi, 0.5]
    res13 = B.coriolis_bound(dyn13, lo13, hi13, samples=3)
    assert res13.samples == 1 + 3
    assert res13.k_c < K * math.sin(1.2) * (1 - 1e-9)  # the corner is not among the samples


def test_samples_one_is_enough_and_zero_is_refused():
    dyn = Dynamics.from_urdf(arm(), gravity=(0, 0, 0))
    assert B.coriolis_bound(dyn, [0, 0.1], [0, 0.1], samples=1).samples == 1 + 4 + 1
    with pytest.raises(ValueError, match="samples must be at least 1, got 0"):
        B.coriolis_bound(dyn, [0, 0.1], [0, 0.1], samples=0)


def test_box_bounds_at_and_beyond_1e50_and_their_messages():
    beyond = math.nextafter(1e50, math.inf)
    for lo, hi in (([-beyond, 0.0], [0.0, 0.0]), ([0.0, 0.0], [0.0, beyond])):
        with pytest.raises(ValueError, match="finite"):
            B._box(lo, hi, 2)
    lo, hi = B._box([-1e50, 0.0], [1e50, 0.0], 2)  # exactly the bound: accepted
    assert lo[0] == -1e50 and hi[0] == 1e50
    with pytest.raises(ValueError, match=r"lower\[1\] = 0.5 > upper\[1\] = 0.4"):
        B._box([0.0, 0.5], [0.0, 0.4], 2)
    with pytest.raises(ValueError, match="lower and upper must have 2 entries, got 3 and 2"):
        B._box([0.0, 0.5, 1.0], [0.0, 0.4], 2)
    with pytest.raises(ValueError, match="got 2 and 1"):
        B._box([0.0, 0.5], [0.4], 2)


def test_ratio_of_a_zero_lower_bound_is_infinite():
    zero = B.CoriolisBound(1.0, np.zeros(1), 0.0, np.zeros(1), np.zeros(1), 1)
    assert zero.ratio == math.inf
    some = B.CoriolisBound(3.0, np.zeros(1), 2.0, np.zeros(1), np.zeros(1), 1)
    assert some.ratio == 1.5


def test_joint_limits_from_text_path_and_file_and_a_planar_root(tmp_path):
    """Revolute limits read; a continuous joint gets [-pi, pi]; the root's rows are not in the
    box (planar: 3, floating: 6 rows; 3 and 7 coordinates)."""
    text = arm(extra=1)
    file = tmp_path / "arm.urdf"
    file.write_text(text)
    for source in (text, "\n  " + text, file, str(file)):
        for root in ("fixed", "planar", "floating"):
            dyn = Dynamics.from_urdf(text, root_joint=root, gravity=(0, 0, 0))
            lo, hi = B.joint_limits(dyn, source)
            np.testing.assert_array_equal(lo, [-2.5, -math.pi, -1.0])
            np.testing.assert_array_equal(hi, [2.5, math.pi, 1.0])
    planar = Dynamics.from_urdf(text, root_joint="planar", gravity=(0, 0, 0))
    res = B.coriolis_bound(planar, *B.joint_limits(planar, text), samples=4)
    assert res.q_max.shape == (6,) and np.all(res.q_max[:3] == 0.0)
    assert res.samples == 1 + 8 + 4
    flying = Dynamics.from_urdf(text, root_joint="floating", gravity=(0, 0, 0))
    res = B.coriolis_bound(flying, *B.joint_limits(flying, text), samples=4)
    np.testing.assert_array_equal(res.q_max[:7], [0, 0, 0, 0, 0, 0, 1.0])
    unlimited = Dynamics.from_urdf(arm(base_limits=False), gravity=(0, 0, 0))
    lo, hi = B.joint_limits(unlimited, arm(base_limits=False))
    np.testing.assert_array_equal(lo, [-math.pi, -math.pi])


def test_the_result_is_frozen_and_the_defaults_are_the_documented_ones():
    """CoriolisBound cannot be changed after the fact; coriolis_bound's defaults are 1000
    samples and seed 0 (the signature's), the same result as passing them."""
    import dataclasses

    dyn = Dynamics.from_urdf(arm(), gravity=(0, 0, 0))
    lo, hi = [-0.4, 0.5], [0.4, 2.5]  # the peak (q2 = pi/2) is neither a corner nor the centre
    res = B.coriolis_bound(dyn, lo, hi)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.k_c = 0.0
    assert res.samples == 1 + 4 + 1000
    same = B.coriolis_bound(dyn, lo, hi, samples=1000, seed=0)
    assert (same.k_c, same.k_lower) == (res.k_c, res.k_lower)
    np.testing.assert_array_equal(same.q_max, res.q_max)
    other = B.coriolis_bound(dyn, lo, hi, samples=1000, seed=1)
    assert other.k_c != res.k_c and other.q_max[1] != res.q_max[1]  # another seed: other samples
    k0, v0 = B.coriolis_gain_lower(dyn, np.array([0.2, 1.0]))
    k_explicit, v_explicit = B.coriolis_gain_lower(dyn, np.array([0.2, 1.0]), 100, 0)
    assert k0 == k_explicit and np.array_equal(v0, v_explicit)


CARTESIAN = """<robot name="xyz"><link name="w"/><link name="x"/><link name="y"/>
  <link name="m"><inertial><mass value="2.0"/>
    <inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="jx" type="prismatic"><parent link="w"/><child link="x"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="2" effort="1" velocity="1"/></joint>
  <joint name="jy" type="prismatic"><parent link="x"/><child link="y"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="1" effort="1" velocity="1"/></joint>
  <joint name="jz" type="prismatic"><parent link="y"/><child link="m"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="4" effort="1" velocity="1"/></joint></robot>"""


def test_ties_report_the_first_sample_the_centre():
    """A point mass on three prismatic joints: M is constant, Gamma is zero everywhere, every
    sample ties at k = 0; the configuration reported, for k_c and for k_lower, is the first
    sample, the box's centre (chunks of one and of three samples too)."""
    dyn = Dynamics.from_urdf(CARTESIAN, gravity=(0, 0, 0))
    lo, hi = B.joint_limits(dyn, CARTESIAN)
    np.testing.assert_array_equal(lo, [-1, -3, 0])
    for chunk in (1, 3, 256):
        res = B.coriolis_bound(dyn, lo, hi, samples=20, chunk=chunk)
        assert res.k_c == 0.0 and res.k_lower == 0.0 and res.ratio == math.inf
        np.testing.assert_array_equal(res.q_max, [0.5, -1.0, 2.0])
        np.testing.assert_array_equal(res.q_lower, [0.5, -1.0, 2.0])


def test_one_joint_gives_zero_and_a_unit_velocity():
    """One revolute joint: M is constant, so Gamma and every bound are 0, and the velocity
    reported is still a unit vector of the model's size."""
    one = ('<robot name="one"><link name="w"/><link name="m"><inertial><mass value="2.0"/>'
           '<inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<joint name="jx" type="revolute"><parent link="w"/><child link="m"/>'
           '<origin xyz="0.3 0 0"/><axis xyz="0 0 1"/>'
           '<limit lower="-1" upper="2" effort="1" velocity="1"/></joint></robot>')  # fmt: skip
    dyn = Dynamics.from_urdf(one, gravity=(0, 0, 0))
    assert dyn.nv == 1
    k, v = B.coriolis_gain_lower(dyn, np.array([0.4]))
    assert k == 0.0 and v.shape == (1,) and abs(abs(v[0]) - 1.0) < 1e-15
    assert B.coriolis_gain(dyn, np.array([0.4])) == 0.0
    res = B.coriolis_bound(dyn, [-1.0], [2.0], samples=3)
    assert res.k_c == 0.0 and res.v_lower.shape == (1,)


def test_the_lower_bound_keeps_the_better_of_its_two_starts():
    """arm7 at a configuration where the power method's random start ends at a lower local
    maximum (1.45) than its start from the unfolding's singular vector (1.75): k_lo is at
    least the largest ||C(q, v)||_2 over 50000 random unit velocities (1.73), a bound from
    below that does not use the power method."""
    from coriolis_ros.robots import robot_urdf

    dyn = Dynamics.from_urdf(robot_urdf("arm7"))
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(-2, 2, 7)
    G = dyn.christoffel(q)
    V = np.random.default_rng(7).normal(size=(50000, 7))
    V /= np.linalg.norm(V, axis=1)[:, None]
    sampled = np.linalg.norm(np.einsum("ijk,nk->nij", G, V), 2, axis=(1, 2)).max()
    k_lo, v = B.coriolis_gain_lower(dyn, q)
    assert sampled > 1.7
    assert k_lo >= sampled
    assert np.linalg.norm(dyn.coriolis(q, v)[2], 2) == pytest.approx(k_lo, rel=1e-12)


def test_the_box_message_names_the_first_inverted_entry_not_an_empty_one():
    """lower[0] == upper[0] is a box of one value (fine); lower[1] > upper[1] is the error."""
    with pytest.raises(ValueError, match=r"^lower\[1\] = 0.5 > upper\[1\] = 0.4$"):
        B._box([0.3, 0.5, 0.0], [0.3, 0.4, -1.0], 3)
    with pytest.raises(ValueError, match=r"^lower\[2\] = 0.0 > upper\[2\] = -1.0$"):
        B._box([0.3, 0.4, 0.0], [0.3, 0.4, -1.0], 3)
    zero_or_less = B.CoriolisBound(1.0, np.zeros(1), -0.5, np.zeros(1), np.zeros(1), 1)
    assert zero_or_less.ratio == math.inf  # no positive lower bound: the ratio is unbounded


# ------------------------------------------------------------------ the power method's details
# A robot's Gamma converges in a few iterations, so the iteration count, the stopping rule and
# the samples visited show on tensors built here with a known answer instead. bounds reads a
# Dynamics' nq, nv, root_joint, neutral(), christoffel() and christoffel_batch() only.


class Tensor:
    """A stand-in for Dynamics whose Christoffel symbols at q are ``gamma(q)``."""

    root_joint = "fixed"

    def __init__(self, gamma, nq: int):
        self.gamma, self.nq = gamma, nq
        self.nv = len(gamma(np.zeros(nq)))

    def neutral(self):
        return np.zeros(self.nq)

    def christoffel(self, q):
        return self.gamma(np.asarray(q, dtype=np.float64))

    def christoffel_batch(self, Q):
        return np.stack([self.christoffel(q) for q in Q])


class Start:
    """An rng whose ``normal`` is a given vector: the power method's random start, chosen."""

    def __init__(self, v):
        self.v = np.array(v, dtype=np.float64)

    def normal(self, size):
        assert size == len(self.v)
        return self.v.copy()


def slow(rho: float = 0.9) -> np.ndarray:
    """C(v) = [[v0, sqrt(rho) v1], [0, 0]]: ||C(v)||_2 = sqrt(v0^2 + rho v1^2), largest (1) at
    v = ±e0, also the unfolding's singular vector; an iteration maps v to (v0, rho v1) / norm
    (u = e0, w = C(v)[0] / |C(v)[0]|, v_new = (w0, sqrt(rho) w1)), so from (a, b) it is at
    (a, rho^N b) / norm after N iterations: the step shrinks by about rho each time."""
    G = np.zeros((2, 2, 2))
    G[0, 0, 0], G[0, 1, 1] = 1.0, math.sqrt(rho)
    return G


@pytest.fixture
def iterations_run(monkeypatch):
    """The shapes of the SVDs bounds computes: (n^2, n) the unfolding's (one per start pair),
    (n, n) one per power iteration."""
    shapes = []
    svd = np.linalg.svd

    def counting(a, *args, **kwargs):
        shapes.append(np.shape(a))
        return svd(a, *args, **kwargs)

    monkeypatch.setattr(np.linalg, "svd", counting)
    return shapes


def test_the_power_method_runs_100_iterations_at_most(iterations_run):
    """rho = 0.9, the random start (seed 0: about (0.13, -0.13)) still moves by ~1e-6 after 100
    iterations; the singular vector's start e0 is the answer and its first step is 0: one
    unfolding, 1 + 100 iterations, in coriolis_gain_lower and for each of the 9 configurations
    (the worst and 8 random samples) of coriolis_bound."""
    dyn = Tensor(lambda q: slow(), 2)
    k, v = B.coriolis_gain_lower(dyn, np.zeros(2))
    assert k == 1.0 and abs(v[0]) == 1.0 and v[1] == 0.0
    one = [(4, 2)] + [(2, 2)] * (1 + 100)
    assert iterations_run == one
    iterations_run.clear()
    res = B.coriolis_bound(dyn, [-1.0, -1.0], [1.0, 1.0], samples=10)
    assert res.samples == 15 and res.k_c == 1.0 and res.k_lower == 1.0
    assert iterations_run == one * 9


def test_the_power_method_stops_at_the_first_step_below_1e_12(iterations_run):
    """From the random start (0.6, 0.8) on rho = 0.5 the N-th step is |v_N - v_(N-1)| with
    v_N = (0.6, 0.8 rho^N) / norm (computed here in closed form): the iteration stops at the
    first N whose step is below 1e-12, not one before or after."""
    rho = 0.5
    a, b = 0.6, 0.8

    def v(N):
        x = np.array([a, b * rho**N])
        return x / math.hypot(*x)

    steps = [float(np.linalg.norm(v(N) - v(N - 1))) for N in range(1, 200)]
    first = next(N for N, step in enumerate(steps, 1) if step < 1e-12)
    assert 1e-12 * 1.2 < steps[first - 2] and steps[first - 1] < 1e-12 / 1.2  # no rounding doubt
    k, end = B._power(slow(rho), 1000, Start([a, b]))
    assert k == 1.0 and abs(end[0]) == 1.0 and end[1] == 0.0  # the singular vector's, exact
    assert iterations_run == [(4, 2)] + [(2, 2)] * (1 + first)


@pytest.mark.parametrize("t, iterations", [(1e-12, 2), (math.nextafter(1e-12, 0.0), 1)])
def test_a_step_of_exactly_1e_12_is_not_converged_the_next_double_below_is(
    iterations_run, t, iterations
):
    """C(v) = (v0 + t v1) e0 e0^T. From e0 (a random start of (2, 0), normalised) one step
    lands on (1, t) exactly (1 + t^2 rounds to 1), a step of exactly t, and the next step is 0:
    two iterations when t = 1e-12 (not below it), one when t is the next double below. The
    singular vector's start is (1, t) itself: one iteration."""
    G = np.zeros((2, 2, 2))
    G[0, 0, 0], G[0, 0, 1] = 1.0, t
    assert float(np.linalg.norm(np.array([1.0, t]) - [1.0, 0.0])) == t
    k, v = B._power(G, 10, Start([2.0, 0.0]))
    assert k == 1.0 and abs(v[0]) == 1.0 and abs(v[1]) == t
    assert iterations_run == [(4, 2), (2, 2)] + [(2, 2)] * iterations


def test_a_tie_between_the_starts_keeps_the_singular_vector_whatever_the_seed():
    """A point mass on three prismatic joints: Gamma = 0, every unit v gives k = 0, both starts
    tie; the velocity reported is the singular vector's, the same for every seed."""
    dyn = Dynamics.from_urdf(CARTESIAN, gravity=(0, 0, 0))
    ends = [B.coriolis_gain_lower(dyn, np.zeros(3), seed=seed) for seed in range(6)]
    for k, v in ends:
        assert k == 0.0 and np.array_equal(v, ends[0][1])
    assert np.linalg.norm(ends[0][1]) == pytest.approx(1.0, abs=1e-15)
    assert len({tuple(np.random.default_rng(s).normal(size=3) > 0) for s in range(6)}) > 1


@pytest.mark.parametrize("iterations", [0, 1, 2, 100])
def test_v_is_a_unit_vector_attaining_k_lo_after_any_number_of_iterations(iterations):
    """arm7, several configurations and seeds: whatever the iteration count (0 leaves both
    starts where they are), v has norm 1 and ||C(q, v)||_2 = k_lo <= k(q) (coriolis_gain)."""
    from coriolis_ros.robots import robot_urdf

    dyn = Dynamics.from_urdf(robot_urdf("arm7"))
    rng = np.random.default_rng(3)
    for seed in range(4):
        q = rng.uniform(-2, 2, 7)
        k_lo, v = B.coriolis_gain_lower(dyn, q, iterations, seed)
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-14)
        assert np.linalg.norm(dyn.coriolis(q, v)[2], 2) == pytest.approx(k_lo, rel=1e-12)
        assert 0.0 < k_lo <= B.coriolis_gain(dyn, q) * (1 + 1e-12)


def test_up_to_8_samples_the_power_method_visits_every_one():
    """One coordinate, 5 random samples: 8 configurations (centre, the two corners, the 5).
    k(q) is largest at the lower corner (a tensor with k = 1 but k* = 1/sqrt(2): C(v) =
    v0 I / sqrt(2)), k* largest at the upper one (C(v) = 0.9 v0 e0 e0^T: k = k* = 0.9), 0.1
    elsewhere: k_lower = 0.9 at the upper corner, found because every sample is visited,
    whatever the seed."""
    wide = np.zeros((2, 2, 2))
    wide[0, 0, 0] = wide[1, 1, 0] = 1.0 / math.sqrt(2.0)
    sharp = np.zeros((2, 2, 2))
    sharp[0, 0, 0] = 0.9

    def gamma(q):
        return wide if q[0] == -1.0 else sharp if q[0] == 1.0 else 0.1 * sharp

    dyn = Tensor(gamma, 1)
    for seed in range(10):
        res = B.coriolis_bound(dyn, [-1.0], [1.0], samples=5, seed=seed)
        assert res.samples == 8
        assert res.k_c == pytest.approx(1.0, rel=1e-15) and res.q_max[0] == -1.0
        assert res.k_lower == pytest.approx(0.9, rel=1e-15) and res.q_lower[0] == 1.0
