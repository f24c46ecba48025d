"""The node's coriolis_state output equals the library and Pinocchio on the same state."""

import time
from pathlib import Path

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
    diag_values,
    panda_urdf,
    stamp_ns,
    write_params_file,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402
from coriolis_ros.node.params import OUTPUT_FIELDS  # noqa: E402

MATRIX_FIELDS = ("coriolis_matrix", "mass_matrix", "mass_matrix_derivative")


def _check_terms(msg, urdf_ref: PinReference, dyn: Dynamics, q, qd, fields=None):
    """Every (or the given) optional field equals Dynamics and Pinocchio at (q, qd)."""
    n = dyn.nv
    names = list(msg.joint_names)
    assert names == list(dyn.joint_names)
    np.testing.assert_array_equal(msg.position, q)
    np.testing.assert_array_equal(msg.velocity, qd)
    library = library_terms(dyn, q, qd)
    pin = urdf_ref.evaluate(names, q, qd)
    for field_name in fields or library:
        got = np.asarray(getattr(msg, field_name))
        if field_name in MATRIX_FIELDS:
            got = as_matrix(got, n)
        # The node runs the same library: bit-for-bit up to the kernels' determinism.
        assert close(got, library[field_name], rtol=1e-12), field_name
        assert close(got, pin[field_name], rtol=1e-8), field_name


# The default hot path (EventsExecutor, tick inline in the callback) and the other one
# (SingleThreadedExecutor, every tick handed to the compute thread) publish the same numbers.
HOT_PATHS = {
    "events-inline": {},
    "single-worker": {"executor": "single", "inline_tick_share": 0.0},
}


@pytest.mark.parametrize("hot_path", sorted(HOT_PATHS))
def test_output_matches_library_and_pinocchio(hot_path, ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    urdf = panda_urdf()
    dyn = Dynamics.from_urdf(urdf, mimic="independent")
    ref = PinReference(urdf)
    names = list(dyn.joint_names)
    n = len(names)
    rng = np.random.default_rng(7)
    with Peer(domain_id) as peer:
        # A latched description published before the node exists.
        desc = peer.description_publisher()
        peer.publish_description(desc, urdf)
        peer.collect_states()
        peer.collect_diagnostics()
        node = NodeProcess(
            env,
            tmp_path / "node.log",
            params={"frame_id": "panda_link0", "mimic": "independent", **HOT_PATHS[hot_path]},
        )
        try:
            node.wait_ready("panda")
            js = peer.joint_state_publisher()
            peer.wait_matched(js)

            # 1. Full state, joint names shuffled.
            q = rng.uniform(-1.5, 1.5, n)
            q[7:] = rng.uniform(0.0, 0.04, 2)  # fingers (prismatic)
            qd = rng.uniform(-2.0, 2.0, n)
            perm = rng.permutation(n)
            stamp = 1_700_000_000_123_456_789
            msg = peer.send_until_state(
                js, peer.joint_state([names[i] for i in perm], q[perm], qd[perm], stamp_ns=stamp)
            )
            assert msg.header.frame_id == "panda_link0"
            for field_name, _, _ in OUTPUT_FIELDS:
                assert len(getattr(msg, field_name)) == (
                    n * n if field_name in MATRIX_FIELDS else n
                ), field_name
            _check_terms(msg, ref, dyn, q, qd)

            # Diagnostics describe the model and the latest tick (self-check ‖Ṁ − C − Cᵀ‖).
            d = peer.wait_for_diagnostic(
                lambda d: int(diag_values(d)["published"]) >= 1, timeout=5.0
            )
            values = diag_values(d)
            assert (values["robot"], values["dof"]) == ("panda", str(n))
            assert values["tree_depth"] == str(dyn.tree_depth)
            assert float(values["self_check_residual"]) < 1e-9
            assert float(values["compute_time_max_ms"]) >= float(values["compute_time_mean_ms"])
            # Which path ran the ticks, and the per-stage timers are reported.
            inline = float(values["inline_ticks_pct"])
            assert inline == (100.0 if hot_path == "events-inline" else 0.0), values
            assert float(values["stage_kernels_max_ms"]) >= float(values["stage_kernels_mean_ms"])
            assert float(values["stage_publish_mean_ms"]) > 0.0
            if hot_path == "events-inline":
                assert float(values["stage_handoff_wait_max_ms"]) == 0.0

            # 2. Partial messages from two publishers (one best effort): arm, then gripper.
            arm = peer.joint_state_publisher()
            gripper = peer.joint_state_publisher(reliable=False)
            peer.wait_matched(arm, gripper)
            q2, qd2 = q.copy(), qd.copy()
            q2[:7] = rng.uniform(-1.0, 1.0, 7)
            qd2[:7] = rng.uniform(-1.0, 1.0, 7)
            msg = peer.send_until_state(
                arm, peer.joint_state(names[6::-1], q2[6::-1], qd2[6::-1], stamp_ns=stamp + 1000)
            )
            _check_terms(msg, ref, dyn, q2, qd2)  # fingers keep their earlier values
            q2[7:] = [0.01, 0.03]
            qd2[7:] = [0.1, -0.2]
            msg = peer.send_until_state(
                gripper,
                peer.joint_state(names[:6:-1], q2[:6:-1], qd2[:6:-1], stamp_ns=stamp + 2000),
            )
            _check_terms(msg, ref, dyn, q2, qd2)
        finally:
            assert node.stop() == 0, node.log()


def test_optional_fields_switch_off_and_back_on(ros_domain_env, tmp_path):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    domain_id, env = ros_domain_env
    urdf = panda_urdf()
    dyn = Dynamics.from_urdf(urdf, mimic="independent")
    ref = PinReference(urdf)
    names = list(dyn.joint_names)
    off = ("publish_coriolis_matrix", "publish_mass_matrix_derivative", "publish_momentum")
    params = {p: (p not in off) for _, p, _ in OUTPUT_FIELDS}
    params["robot_description"] = urdf
    params["mimic"] = "independent"
    params_file = write_params_file(tmp_path / "params.yaml", params)
    q = np.linspace(-0.8, 0.8, len(names))
    qd = np.linspace(1.0, -1.0, len(names))
    with Peer(domain_id) as peer:
        peer.collect_states()
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("panda")
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=5))
            enabled = []
            for field_name, param, _ in OUTPUT_FIELDS:
                if param in off:
                    assert len(getattr(msg, field_name)) == 0, field_name
                else:
                    enabled.append(field_name)
            _check_terms(msg, ref, dyn, q, qd, fields=enabled)

            # Switch them back on at run time; gravity is read-only.
            client = peer.client(SetParameters, "/coriolis/set_parameters")
            request = SetParameters.Request(
                parameters=[
                    Parameter(
                        name=p,
                        value=ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=True),
                    )
                    for p in off
                ]
            )
            results = peer.call(client, request).results
            assert all(r.successful for r in results), results
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=6))
            _check_terms(msg, ref, dyn, q, qd)

            request = SetParameters.Request(
                parameters=[
                    Parameter(
                        name="gravity",
                        value=ParameterValue(
                            type=ParameterType.PARAMETER_DOUBLE_ARRAY,
                            double_array_value=[0.0, 0.0, 0.0],
                        ),
                    )
                ]
            )
            (result,) = peer.call(client, request).results
            assert not result.successful and "read-only" in result.reason.lower()
            request = SetParameters.Request(
                parameters=[
                    Parameter(
                        name="update_rate",
                        value=ParameterValue(
                            type=ParameterType.PARAMETER_DOUBLE, double_value=-5.0
                        ),
                    )
                ]
            )
            (result,) = peer.call(client, request).results
            assert not result.successful
        finally:
            assert node.stop() == 0, node.log()


def test_timer_mode_publishes_newest_state_and_counts_skips(ros_domain_env, tmp_path):
    """update_rate > 0: ticks at the timer, on the newest state; every input is accounted for."""

    domain_id, env = ros_domain_env
    urdf = panda_urdf()
    names = list(Dynamics.from_urdf(urdf, mimic="independent").joint_names)
    with Peer(domain_id) as peer:
        desc = peer.description_publisher()
        peer.publish_description(desc, urdf)
        peer.collect_states()
        peer.collect_diagnostics()
        node = NodeProcess(
            env,
            tmp_path / "node.log",
            params={"update_rate": 20.0, "diagnostics_period": 0.2, "mimic": "independent"},
        )
        try:
            node.wait_ready("panda")
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            peer.send_until_state(js, peer.joint_state(names, np.zeros(9), np.zeros(9), stamp_ns=1))
            sent = 200
            for k in range(1, sent):
                js.publish(
                    peer.joint_state(names, np.full(9, k * 1e-3), np.zeros(9), stamp_ns=k + 1)
                )
                time.sleep(0.005)
            last = peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == sent)
            assert last.position[0] == pytest.approx((sent - 1) * 1e-3)

            def settled():
                d = peer.last_diagnostic()
                if d is None:
                    return None
                v = {
                    k: int(x)
                    for k, x in diag_values(d).items()
                    if k in ("received", "published", "skipped", "withheld", "rejected")
                }
                return v if v["published"] == len(peer.received()) and v["received"] > 0 else None

            v = peer.wait_for(settled, what="counters to settle")
            out = len(peer.received())
            assert v["received"] == out + v["skipped"] + v["withheld"] + v["rejected"]
            assert v["rejected"] == 0 and v["withheld"] == 0
            # Far fewer ticks than messages (20 Hz vs ~200 Hz input).
            assert out < v["received"] / 2 and v["skipped"] > 0
        finally:
            assert node.stop() == 0, node.log()


def test_installed_config_file_loads_as_params_file(ros_domain_env, tmp_path):
    """config/coriolis.yaml as installed works with --params-file, and its values are used."""
    from ament_index_python.packages import get_package_share_directory

    domain_id, env = ros_domain_env
    config = Path(get_package_share_directory("coriolis_ros")) / "config" / "coriolis.yaml"
    text = config.read_text()
    edits = (
        ('frame_id: ""', 'frame_id: "cfg_frame"'),
        ("publish_momentum: true", "publish_momentum: false"),
        ("update_rate: 0.0", "update_rate: 20.0"),
        ("mimic: follow", "mimic: independent"),
    )
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    params_file = tmp_path / "coriolis.yaml"
    params_file.write_text(text)
    urdf = panda_urdf()
    names = list(Dynamics.from_urdf(urdf, mimic="independent").joint_names)
    with Peer(domain_id) as peer:
        desc = peer.description_publisher()
        peer.publish_description(desc, urdf)
        peer.collect_states()
        peer.collect_diagnostics()
        node = NodeProcess(env, tmp_path / "node.log", params_file=params_file)
        try:
            node.wait_ready("panda")
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            msg = peer.send_until_state(js, peer.joint_state(names, np.zeros(9), np.ones(9)))
            assert msg.header.frame_id == "cfg_frame"
            assert len(msg.momentum) == 0 and len(msg.coriolis_matrix) == 81
            d = peer.wait_for_diagnostic(lambda d: True)
            assert diag_values(d)["mode"] == "timer 20 Hz"
        finally:
            assert node.stop() == 0, node.log()
