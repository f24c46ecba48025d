"""Start and stop the node many times, at every stage (before the model, while it builds, once
ready, under input): exit status 0 and no traceback, ever. STARTS bounds the suite's time; set
CORIOLIS_RESTARTS=50 to run more by hand."""

import os
import signal
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import NodeProcess, Peer, small_robot_urdf  # noqa: E402

STARTS = int(os.environ.get("CORIOLIS_RESTARTS", "20"))
URDF = small_robot_urdf()


def test_many_starts_and_stops_print_no_traceback(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    names = ["tj1", "tj2", "tj3", "tj4"]
    with Peer(domain_id) as peer:
        js = peer.joint_state_publisher()
        for k in range(STARTS):
            log = tmp_path / f"node{k}.log"
            node = NodeProcess(env, log, params={"robot_description": URDF,
                                                 "diagnostics_period": 0.05})  # fmt: skip
            try:
                stage = k % 4
                if stage == 0:
                    time.sleep(0.3 + 0.05 * (k % 5))  # starting: before or while it builds
                else:
                    node.wait_ready("tiny")
                if stage == 3:  # under input at ~500 Hz
                    end = time.monotonic() + 0.5
                    while time.monotonic() < end:
                        js.publish(peer.joint_state(names, np.full(4, 0.1), np.zeros(4)))
                        time.sleep(0.002)
                sig = signal.SIGTERM if k % 2 else signal.SIGINT
                code = node.stop(sig)
                text = node.log()
                assert code == 0, f"start {k}: exit {code}\n{text}"
                assert "Traceback" not in text, f"start {k}:\n{text}"
            finally:
                node.stop(signal.SIGKILL)
