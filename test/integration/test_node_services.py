"""get_christoffel_symbols and compute_dynamics: results, and clear failures for bad requests."""

import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
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


def test_task_space_service_and_contact_topics(ros_domain_env, tmp_path):
    """get_task_space over ROS matches the library; with the observer on and a wrench frame,
    a robot held still against a push publishes the push on external_wrench/<frame> and
    collision = true."""
    import threading

    from geometry_msgs.msg import WrenchStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Bool

    from coriolis_ros.robots import robot_urdf
    from coriolis_ros.srv import GetTaskSpace

    domain_id, env = ros_domain_env
    urdf = robot_urdf("arm7")
    dyn = Dynamics.from_urdf(urdf)
    names = list(dyn.joint_names)
    q = np.array([0.3, -0.7, 0.2, -1.6, 0.4, 1.1, -0.3])
    params_file = write_params_file(
        tmp_path / "params.yaml",
        {"robot_description": urdf, "observer_enabled": True, "observer_gain": 100.0,
         "wrench_frames": ["tcp"], "collision_force_threshold": 5.0},
    )  # fmt: skip
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("arm7")
            client = peer.client(GetTaskSpace, "get_task_space")
            r = peer.call(client, GetTaskSpace.Request(
                joint_names=names, position=q.tolist(), velocity=[0.1] * 7, frame="tcp"
            ))  # fmt: skip
            assert r.success, r.message
            Lam, mu, J, _ = dyn.task_space(q, np.full(7, 0.1), "tcp")
            assert close(np.asarray(r.task_inertia).reshape(6, 6), Lam, rtol=1e-12)
            assert close(np.asarray(r.task_coriolis).reshape(6, 6), mu, rtol=1e-12)
            r = peer.call(client, GetTaskSpace.Request(joint_names=names, position=q.tolist(),
                                                       frame="nowhere"))  # fmt: skip
            assert not r.success and "nowhere" in r.message

            wrenches, flags, lock = [], [], threading.Lock()
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)  # fmt: skip
            peer.node.create_subscription(WrenchStamped, "external_wrench/tcp",
                                          lambda m: wrenches.append(m), 10)  # fmt: skip
            peer.node.create_subscription(Bool, "collision", lambda m: flags.append(m.data),
                                          latched)  # fmt: skip
            w = np.array([0.0, 0.0, -20.0, 0.0, 0.0, 0.0])
            effort = dyn.gravity(q) - dyn.frame_jacobian(q, "tcp").T @ w
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            t0 = 1_000_000_000
            resting = dyn.gravity(q)

            def at_rest():  # no push: the flag must say so (false) before the push starts
                for k in range(20):
                    pushed.k += 1
                    js.publish(peer.joint_state(names, q, np.zeros(7), stamp_ns=t0 +
                                                pushed.k * 1_000_000, effort=resting))  # fmt: skip
                with lock:
                    return False in flags

            def pushed():
                for k in range(50):
                    pushed.k += 1
                    js.publish(peer.joint_state(names, q, np.zeros(7), stamp_ns=t0 +
                                                pushed.k * 1_000_000, effort=effort))  # fmt: skip
                with lock:  # the flag is up, and the estimate has converged (time constant 10 ms)
                    done = flags and flags[-1] and wrenches
                    done = done and abs(wrenches[-1].wrench.force.z - w[2]) < 0.05
                return wrenches[-1] if done else None

            pushed.k = 0
            peer.wait_for(at_rest, what="the collision flag false at rest")
            last = peer.wait_for(pushed, what="a collision and a wrench at tcp")
            f = last.wrench.force
            assert np.allclose([f.x, f.y, f.z], w[:3], atol=0.05), (f.x, f.y, f.z)
            assert last.header.frame_id == "world"
            assert flags[-1] is True
        finally:
            node.stop()
