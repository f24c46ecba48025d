"""Bad input never crashes the node, never yields numbers, and is reported clearly."""

import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    PinReference,
    as_matrix,
    close,
    diag_values,
    level_of,
    small_robot_urdf,
    stamp_ns,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402

URDF = small_robot_urdf("tiny", "tj")
NAMES = ["tj1", "tj2", "tj3", "tj4"]  # message order; the model's order is the library's
MALFORMED = '<robot name="broken"><link name="a"></robot>'
FLOATING = (
    '<robot name="floaty"><link name="base"/><link name="body"><inertial><mass value="1"/>'
    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
    '<joint name="free" type="floating"><parent link="base"/><child link="body"/>'
    "</joint></robot>"
)


def test_bad_input(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    model_names = list(Dynamics.from_urdf(URDF).joint_names)
    assert sorted(model_names) == NAMES
    with Peer(domain_id) as peer:
        peer.collect_states()
        peer.collect_diagnostics()
        node = NodeProcess(
            env,
            tmp_path / "node.log",
            params={"diagnostics_period": 0.2, "warning_period": 0.5, "joint_state_timeout": 0.5},
        )
        try:
            node.wait_for_log("waiting for a URDF", timeout=120)
            desc = peer.description_publisher()
            js = peer.joint_state_publisher()
            peer.wait_matched(js, desc)
            stamps_bad = set()

            def send(names, position, velocity=(), effort=(), stamp=None, bad=True):
                if bad:
                    stamps_bad.add(stamp)
                js.publish(peer.joint_state(names, position, velocity, effort, stamp_ns=stamp))

            # No model yet: joint states are refused with a reason; diagnostics say ERROR.
            stamps_bad.add(1)
            peer.publish_until(
                js,
                peer.joint_state(NAMES, [0.0] * 4, stamp_ns=1),
                lambda: node.has_log(r"joint_states received but there is no robot model yet"),
            )
            d = peer.wait_for_diagnostic(lambda d: "no robot model" in d.message)
            assert level_of(d) == 2

            # Malformed URDF and an unsupported joint type: rejected with the parser's reason.
            peer.publish_description(desc, MALFORMED)
            m = node.wait_for_log(
                r"robot_description from topic /robot_description rejected "
                r"\(still no robot model\): (.+)"
            )
            assert m.group(1).strip()
            peer.publish_description(desc, FLOATING)
            m = node.wait_for_log(
                r"rejected \(still no robot model\): (.*floating.*)", start=m.end()
            )
            d = peer.wait_for_diagnostic(lambda d: "floating" in d.message)
            assert level_of(d) == 2 and "robot_description rejected" in d.message

            # The topic is data: a path (to a good URDF, even) is refused, never opened.
            good_file = tmp_path / "good.urdf"
            good_file.write_text(URDF)
            peer.publish_description(desc, f"  {good_file}\n")
            m = node.wait_for_log(
                r"rejected \(still no robot model\): not URDF XML \(a robot description is XML "
                r"text; a file is read only from the robot_description_file parameter\)",
                start=m.end(),
            )

            # A good model.
            peer.publish_description(desc, URDF)
            node.wait_ready("tiny")
            mark = len(node.log())

            # Missing joints: nothing published, and the log says which ones.
            send(NAMES[:3], [0.1, 0.2, 0.3], [0.0] * 3, stamp=2)
            node.wait_for_log(r"waiting for joint_states of 1 of 4 joints: tj4", start=mark)
            d = peer.wait_for_diagnostic(lambda d: "waiting for joints: tj4" in d.message)
            assert level_of(d) == 1

            # Unknown names are ignored (one warning per name); the known ones are used.
            send(["ghost", "tj4"], [9.0, 0.4], [0.0, 0.0], stamp=3, bad=False)
            node.wait_for_log(r"ignoring unknown joint 'ghost'", start=mark)
            first = peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == 3)
            assert list(first.joint_names) == model_names
            values = {"tj1": 0.1, "tj2": 0.2, "tj3": 0.3, "tj4": 0.4}
            np.testing.assert_array_equal(first.position, [values[j] for j in model_names])

            # Malformed messages: each rejected whole, with a clear reason.
            cases = [
                (
                    dict(names=NAMES, position=[0.0, math.nan, 0.0, 0.0]),
                    r"rejected: non-finite position \(NaN/inf\) for tj2",
                ),
                (
                    dict(names=NAMES, position=[0.0] * 4, velocity=[0.0, 0.0, 0.0, math.inf]),
                    r"rejected: non-finite velocity \(NaN/inf\) for tj4",
                ),
                (dict(names=NAMES, position=[0.0] * 3), r"rejected: 4 joint names but 3 positions"),
                (
                    dict(names=NAMES, position=[0.0] * 4, velocity=[0.0] * 2),
                    r"rejected: 4 joint names but 2 velocities",
                ),
                (
                    dict(names=NAMES, position=[0.0] * 4, effort=[0.0] * 5),
                    r"rejected: 4 joint names but 5 efforts",
                ),
                (
                    dict(names=["tj1", "tj1"], position=[0.0, 0.0]),
                    r"rejected: duplicate joint names: tj1",
                ),
            ]
            # At most one line per kind of warning per min(1 s, warning_period): each is sent
            # until its line appears (a line held back is counted in the next one).
            for k, (fields, pattern) in enumerate(cases):
                stamps_bad.add(100 + k)
                f = {"velocity": (), "effort": (), **fields}
                msg = peer.joint_state(f["names"], f["position"], f["velocity"], f["effort"],
                                       stamp_ns=100 + k)  # fmt: skip
                peer.publish_until(js, msg, lambda: node.has_log(pattern, start=mark))
            d = peer.wait_for_diagnostic(lambda d: int(diag_values(d)["rejected"]) >= len(cases))
            assert "duplicate joint names" in diag_values(d)["last_rejected_input"]

            # A new model with other joint names (model replacement); its joints have no
            # velocity yet: an empty velocity array then means zero, with a warning.
            urdf2 = small_robot_urdf("tiny2", "uj")
            names2 = list(Dynamics.from_urdf(urdf2).joint_names)
            assert sorted(names2) == ["uj1", "uj2", "uj3", "uj4"]
            ref2 = PinReference(urdf2)
            peer.publish_description(desc, urdf2)
            node.wait_ready("tiny2")
            mark = len(node.log())
            q = np.array([0.3, -0.2, 0.1, 0.5])
            send(names2, q, [], stamp=200, bad=False)
            node.wait_for_log(
                rf"joint_states without velocity for {', '.join(names2)}: using 0", start=mark
            )
            msg = peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == 200)
            assert list(msg.joint_names) == names2
            np.testing.assert_array_equal(msg.velocity, np.zeros(4))
            np.testing.assert_array_equal(msg.coriolis_matrix, np.zeros(16))
            # ... and keeps the last known velocity once one was received.
            qd = np.array([1.0, -1.0, 0.5, 0.25])
            send(names2, q, qd, stamp=201, bad=False)
            peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == 201)
            send(names2[::-1], q[::-1] * 0.5, [], stamp=202, bad=False)
            msg = peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == 202)
            np.testing.assert_array_equal(msg.velocity, qd)
            assert close(
                as_matrix(msg.coriolis_matrix, 4),
                ref2.evaluate(names2, q * 0.5, qd)["coriolis_matrix"],
                rtol=1e-8,
            )

            # A malformed description now: the old model keeps serving.
            peer.publish_description(desc, MALFORMED)
            node.wait_for_log(r"rejected \(keeping model tiny2\)", start=mark)
            send(names2, q, qd, stamp=300, bad=False)
            msg = peer.wait_for_state(lambda m: stamp_ns(m.header.stamp) == 300)
            assert close(
                as_matrix(msg.coriolis_matrix, 4),
                ref2.evaluate(names2, q, qd)["coriolis_matrix"],
                rtol=1e-8,
            )
            d = peer.wait_for_diagnostic(lambda d: "old model kept" in d.message)
            assert level_of(d) == 1

            # Stale joints: one joint stops updating for longer than joint_state_timeout.
            mark = len(node.log())
            quiet = names2[-1]
            end = time.monotonic() + 1.5
            k = 0
            while time.monotonic() < end:
                send(names2[:-1], q[:-1], qd[:-1], stamp=400 + k, bad=False)
                k += 1
                time.sleep(0.05)
            node.wait_for_log(
                rf"(?m)stale joint_states: no value for more than 0.5 s from {quiet}$", start=mark
            )
            d = peer.wait_for_diagnostic(lambda d: f"stale joints: {quiet}" in d.message)
            assert level_of(d) == 1 and diag_values(d)["stale_joints"] == quiet

            # No output ever carried a rejected message's stamp, and the node is still up.
            assert not stamps_bad & {stamp_ns(m.header.stamp) for m, _ in peer.received()}
            assert node.alive()
        finally:
            assert node.stop() == 0, node.log()
