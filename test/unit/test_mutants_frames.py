"""dynamics.frames: the bounds and the rows cache the frame and task-space tests leave open.

* damping: 1e50 is accepted (Lambda is then 1e-50 times the identity, to rounding), the next
  double refused;
* the cache of row tuples holds at most 64 entries (the default's and 63 more), and a row
  tuple met again gives the same rows and code.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from coriolis_ros.dynamics import Dynamics
from coriolis_ros.robots import robot_path


@pytest.fixture(scope="module")
def arm():
    return Dynamics.from_urdf(robot_path("arm7"))


def test_damping_up_to_1e50_is_accepted_and_the_next_double_refused(arm):
    q, v = np.linspace(-0.5, 0.7, arm.nv), np.linspace(0.3, -0.2, arm.nv)
    frame = arm.tree.frame_names[-1]
    lam = arm.task_space(q, v, frame, rows=(0, 1, 2), damping=1e50)[0]
    assert np.abs(lam * 1e50 - np.eye(3)).max() < 1e-12
    with pytest.raises(ValueError, match=r"^damping must be finite and >= 0, got 1\.0000"):
        arm.task_space(q, v, frame, rows=(0, 1, 2), damping=float(np.nextafter(1e50, np.inf)))


def test_the_rows_cache_holds_64_entries(arm):
    algorithms = arm._frame_algorithms
    tuples = list(itertools.permutations(range(6), 3))  # 120 distinct row tuples
    for rows in tuples:
        values, code = algorithms.rows(rows)
        assert values == rows and code == sum((r + 1) << (3 * t) for t, r in enumerate(rows))
    assert len(algorithms._rows) == 64
    for rows in tuples[:70]:  # met again, cached or not: the same answer
        assert algorithms.rows(rows) == (rows, sum((r + 1) << (3 * t) for t, r in enumerate(rows)))
    assert len(algorithms._rows) == 64


def test_an_unknown_frame_names_six_frames_and_the_five_most_similar(arm):
    with pytest.raises(ValueError) as info:
        arm.frame_placement(arm.neutral(), "link")
    assert str(info.value) == (
        "unknown frame 'link': frames are the URDF's links (10: 'base_link', 'link1', 'link2', "
        "'link3', 'link4', 'link5', ...); similar: 'link7', 'link6', 'link5', 'link4', 'link3'"
    )


def _chain(links: int) -> str:
    body = ('<inertial><mass value="1"/><inertia ixx="1e-2" ixy="0" ixz="0" iyy="1e-2" '
            'iyz="0" izz="1e-2"/></inertial>')  # fmt: skip
    text = '<robot name="chain"><link name="l0"/>'
    for k in range(1, links):
        text += (f'<link name="l{k}">{body}</link><joint name="j{k}" type="revolute">'
                 f'<parent link="l{k - 1}"/><child link="l{k}"/><origin xyz="0.1 0 0"/>'
                 '<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/>'
                 "</joint>")  # fmt: skip
    return text + "</robot>"


SIX = "'l0', 'l1', 'l2', 'l3', 'l4', 'l5'"


@pytest.mark.parametrize("links, listed", [(5, SIX[:-6]), (6, SIX), (7, SIX + ", ...")])
def test_an_unknown_frame_lists_six_frames_and_says_when_there_are_more(links, listed):
    dyn = Dynamics.from_urdf(_chain(links))
    with pytest.raises(ValueError) as info:
        dyn.frame_jacobian(dyn.neutral(), "zz", "world")
    assert str(info.value) == f"unknown frame 'zz': frames are the URDF's links ({links}: {listed})"


def test_list_inputs_give_what_arrays_give(arm):
    q, v = np.linspace(-0.5, 0.7, arm.nv), np.linspace(0.3, -0.2, arm.nv)
    frame = arm.tree.frame_names[-1]
    for call in (
        lambda q, v: arm.frame_placement(q, frame),
        lambda q, v: arm.frame_jacobian(q, frame, "world"),
        lambda q, v: arm.frame_jacobian_dot(q, v, frame, "world"),
        lambda q, v: arm.frame_jacobians(q, v, frame, "world"),
        lambda q, v: arm.frame_acceleration_bias(q, v, frame, "world"),
        lambda q, v: arm.task_space(q, v, frame),
    ):
        want = call(q, v)
        got = call(q.tolist(), v.tolist())
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,), strict=True):  # fmt: skip
            assert np.array_equal(a, b)


def _smallest_pivot(G: np.ndarray) -> float:
    """The smallest pivot of G's Cholesky factorization (numpy's, not the kernel's)."""
    return float(np.diag(np.linalg.cholesky(G)).min() ** 2)


def test_a_singular_task_is_refused_below_1e_minus_12_of_its_scale_and_says_so(arm):
    """The task's bound, both sides: J M^-1 J^T + d 1 is refused when a pivot of its Cholesky
    factorization is at most 1e-12 times its largest diagonal entry (condition number beyond
    1e12, as the message says), accepted above; d found by bisection on numpy's pivots."""
    q, v = np.linspace(-0.5, 0.7, arm.nv), np.linspace(0.3, -0.2, arm.nv)
    rows = (0, 1, 2)  # three rows at link3, two joints below it: rank 2
    J = arm.task_space(q, v, "link3", rows=rows, damping=1.0)[2]
    G0 = J @ np.linalg.solve(arm.mass_matrix(q), J.T)
    assert np.linalg.matrix_rank(G0, tol=1e-9 * np.abs(G0).max()) == 2

    def relative_pivot(d):
        G = G0 + d * np.eye(3)
        return _smallest_pivot(G) / np.diag(G).max()

    def damping_at(target):
        lo, hi = 0.0, 1.0  # relative_pivot grows with d
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if relative_pivot(mid) < target else (lo, mid)
        return hi

    refused, accepted = damping_at(0.5e-12), damping_at(2e-12)
    assert relative_pivot(refused) < 1e-12 < relative_pivot(accepted)
    with pytest.raises(ValueError) as info:
        arm.task_space(q, v, "link3", rows=rows, damping=refused)
    assert "is rank-deficient (condition number beyond 1e+12): fewer than 3 independent" in str(
        info.value
    )
    Lam = arm.task_space(q, v, "link3", rows=rows, damping=accepted)[0]
    assert np.all(np.isfinite(Lam))
    assert np.abs(Lam @ (G0 + accepted * np.eye(3)) - np.eye(3)).max() < 1e-2  # cond 5e11
