"""get_christoffel_symbols and compute_dynamics: results, and clear failures for bad requests."""

import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from ros_helpers import (  # noqa: E402
    library_terms,
    NodeProcess,
    Peer,
    PinReference,
    as_matrix,
    close,
    small_robot_urdf,
    stamp_ns,
    write_params_file,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402

URDF = small_robot_urdf("tiny", "tj")


def test_services(ros_domain_env, tmp_path):
    from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols

    domain_id, env = ros_domain_env
    dyn = Dynamics.from_urdf(URDF)
    ref = PinReference(URDF)
    names = list(dyn.joint_names)
    n = len(names)
    assert n == 4
    rng = np.random.default_rng(3)
    # The model comes from the robot_description parameter (no topic publisher at all).
    # executor_threads=2: the MultiThreadedExecutor variant (the other tests use the default).
    params_file = write_params_file(
        tmp_path / "params.yaml", {"robot_description": URDF, "executor_threads": 2}
    )
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("tiny")
            gamma_client = peer.client(GetChristoffelSymbols, "get_christoffel_symbols")
            dyn_client = peer.client(ComputeDynamics, "compute_dynamics")

            # Latest state requested before any joint state: a clear failure.
            r = peer.call(gamma_client, GetChristoffelSymbols.Request())
            assert not r.success and "no complete joint state" in r.message
            assert ", ".join(names) in r.message

            # Γ at a given position, names shuffled: matches the library, and contracting it
            # with q̇ gives Pinocchio's C (an independent implementation).
            q = rng.uniform(-1.0, 1.0, n)
            perm = [2, 0, 3, 1]
            r = peer.call(
                gamma_client,
                GetChristoffelSymbols.Request(
                    joint_names=[names[i] for i in perm], position=q[perm].tolist()
                ),
            )
            assert r.success, r.message
            assert list(r.joint_names) == names
            np.testing.assert_array_equal(r.position, q)
            gamma = np.asarray(r.symbols).reshape(n, n, n)
            assert close(gamma, dyn.christoffel(q), rtol=1e-12)
            qd = rng.uniform(-1.0, 1.0, n)
            c_pin = ref.evaluate(names, q, qd)["coriolis_matrix"]
            assert close(np.einsum("ijk,k->ij", gamma, qd), c_pin, rtol=1e-8)

            # Γ at the latest joint state.
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            q_latest = rng.uniform(-1.0, 1.0, n)

            def latest():  # (re)publish until the node has it: the first may be lost
                js.publish(peer.joint_state(names[::-1], q_latest[::-1], [], stamp_ns=42_000))
                res = peer.call(gamma_client, GetChristoffelSymbols.Request())
                return res if res.success else None

            r = peer.wait_for(latest, what="Γ at the latest joint state")
            assert stamp_ns(r.header.stamp) == 42_000
            np.testing.assert_array_equal(r.position, q_latest)
            assert close(
                np.asarray(r.symbols).reshape(n, n, n), dyn.christoffel(q_latest), rtol=1e-12
            )

            # compute_dynamics: every term, names in any order, matches library and Pinocchio.
            q = rng.uniform(-1.0, 1.0, n)
            qd = rng.uniform(-2.0, 2.0, n)
            perm = [3, 1, 0, 2]
            r = peer.call(
                dyn_client,
                ComputeDynamics.Request(
                    joint_names=[names[i] for i in perm],
                    position=q[perm].tolist(),
                    velocity=qd[perm].tolist(),
                ),
            )
            assert r.success, r.message
            assert list(r.joint_names) == names
            np.testing.assert_array_equal(r.position, q)
            np.testing.assert_array_equal(r.velocity, qd)
            library = library_terms(dyn, q, qd)
            pin = ref.evaluate(names, q, qd)
            for key, expected in library.items():
                got = np.asarray(getattr(r, key))
                if expected.ndim == 2:
                    got = as_matrix(got, n)
                assert close(got, expected, rtol=1e-12), key
                assert close(got, pin[key], rtol=1e-8), key

            # Empty velocity means zeros: C = 0, but M and g are there.
            r = peer.call(
                dyn_client, ComputeDynamics.Request(joint_names=names, position=q.tolist())
            )
            assert r.success, r.message
            np.testing.assert_array_equal(r.velocity, np.zeros(n))
            np.testing.assert_array_equal(r.coriolis_matrix, np.zeros(n * n))
            assert close(as_matrix(r.mass_matrix, n), pin["mass_matrix"], rtol=1e-8)
            assert close(r.gravity_force, pin["gravity_force"], rtol=1e-8)

            # Bad requests: success=false with a reason; the node stays up.
            bad = [
                (
                    dict(joint_names=names[:3], position=q[:3].tolist()),
                    f"missing joint names: {names[3]}",
                ),
                (
                    dict(joint_names=names + ["ghost"], position=q.tolist() + [0.0]),
                    "unknown joint names: ghost",
                ),
                (dict(joint_names=names, position=q[:3].tolist()), "4 joint names but 3 positions"),
                (
                    dict(joint_names=names, position=[0.0, math.nan, 0.0, 0.0]),
                    f"non-finite position (NaN/inf) for {names[1]}",
                ),
                (dict(joint_names=names[:1] * 4, position=q.tolist()), "duplicate joint names"),
                (dict(joint_names=[], position=q.tolist()), "0 joint names but 4 positions"),
            ]
            for fields, words in bad:
                r = peer.call(gamma_client, GetChristoffelSymbols.Request(**fields))
                assert not r.success and words in r.message, (fields, r.message)
                assert len(r.symbols) == 0
                r = peer.call(dyn_client, ComputeDynamics.Request(**fields))
                assert not r.success and words in r.message, (fields, r.message)
                assert len(r.coriolis_matrix) == 0
            for velocity, words in [
                ([1.0, 2.0], "4 joint names but 2 velocities"),
                ([0.0, 0.0, math.inf, 0.0], "non-finite velocity"),
            ]:
                r = peer.call(
                    dyn_client,
                    ComputeDynamics.Request(
                        joint_names=names, position=q.tolist(), velocity=velocity
                    ),
                )
                assert not r.success and words in r.message, r.message
            # Base fields on a fixed-base model: refused, never silently ignored.
            base = "the model has a fixed base"
            r = peer.call(
                gamma_client,
                GetChristoffelSymbols.Request(
                    joint_names=names, position=q.tolist(), base_position=[0.0] * 7
                ),
            )
            assert not r.success and base in r.message, r.message
            for extra in (dict(base_position=[0.0] * 7), dict(base_velocity=[0.0] * 6)):
                r = peer.call(
                    dyn_client,
                    ComputeDynamics.Request(joint_names=names, position=q.tolist(), **extra),
                )
                assert not r.success and base in r.message, r.message
            assert node.alive()
            r = peer.call(
                dyn_client, ComputeDynamics.Request(joint_names=names, position=q.tolist())
            )
            assert r.success
        finally:
            assert node.stop() == 0, node.log()


def test_services_without_model(ros_domain_env, tmp_path):
    from coriolis_ros.srv import ComputeDynamics, GetChristoffelSymbols

    domain_id, env = ros_domain_env
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log")
        try:
            node.wait_for_log("waiting for a URDF on topic /robot_description", timeout=120)
            gamma_client = peer.client(GetChristoffelSymbols, "get_christoffel_symbols")
            dyn_client = peer.client(ComputeDynamics, "compute_dynamics")
            r = peer.call(gamma_client, GetChristoffelSymbols.Request())
            assert not r.success and "no robot model" in r.message
            r = peer.call(dyn_client, ComputeDynamics.Request(joint_names=["a"], position=[0.0]))
            assert not r.success and "no robot model" in r.message
        finally:
            assert node.stop() == 0, node.log()
