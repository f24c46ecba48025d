"""Running the node from the venv, and its input hygiene (issue 11, items 1 and 5).

* `python -m coriolis_ros.node --ros-args -p robot_description_file:=PATH` (what `make run
  URDF=PATH` runs) starts the node on a URDF file and it publishes; setting the parameter
  later loads the new file, a missing file is refused;
* a bad ROS argument or parameter gives exit status 2 and one line, never a traceback;
* a zero or future-dated stamp is used as is, with a throttled warning;
* a velocity older than joint_state_timeout is still used but reported (log + diagnostics);
* merged partial messages: the output carries the stamp of the newest message merged.
"""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    diag_values,
    level_of,
    small_robot_urdf,
    stamp_ns,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
URDF = small_robot_urdf("tiny", "tj")
URDF2 = small_robot_urdf("tiny2", "uj")


def _names(urdf):
    return list(Dynamics.from_urdf(urdf).joint_names)


def test_make_run_is_the_documented_command(tmp_path):
    """`make run URDF=...` runs `python -m coriolis_ros.node` with robot_description_file."""
    urdf = tmp_path / "robot.urdf"
    out = subprocess.run(
        [
            "make",
            "-n",
            "--no-print-directory",
            "-C",
            str(REPO),
            "run",
            f"URDF={urdf}",
            "ARGS=-p update_rate:=50.0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    assert last == (
        "scripts/run.sh python -m coriolis_ros.node --ros-args "
        f"-p robot_description_file:={urdf} -p update_rate:=50.0"
    )


def test_runs_on_a_urdf_file_and_reloads_it(ros_domain_env, tmp_path):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    domain_id, env = ros_domain_env
    first, second = tmp_path / "first.urdf", tmp_path / "second.urdf"
    first.write_text(URDF)
    second.write_text(URDF2)
    names, names2 = _names(URDF), _names(URDF2)
    with Peer(domain_id) as peer:
        peer.collect_states()
        node = NodeProcess(
            env, tmp_path / "node.log", params={"robot_description_file": str(first)}
        )
        try:
            node.wait_ready("tiny")
            assert f"file {first}" in node.log()
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            q = np.linspace(0.1, 0.4, len(names))
            msg = peer.send_until_state(js, peer.joint_state(names, q, q, stamp_ns=11))
            assert list(msg.joint_names) == names
            np.testing.assert_array_equal(msg.position, q)

            client = peer.client(SetParameters, "/coriolis/set_parameters")

            def set_file(path):
                value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=path)
                request = SetParameters.Request(
                    parameters=[Parameter(name="robot_description_file", value=value)]
                )
                return peer.call(client, request).results[0]

            # A missing file is refused with a reason; the model keeps serving.
            result = set_file(str(tmp_path / "missing.urdf"))
            assert not result.successful and "no such file" in result.reason
            # A new file is read and replaces the model.
            mark = len(node.log())
            assert set_file(str(second)).successful
            node.wait_for_log(r"robot model replaced: tiny \(4 DoF\) -> tiny2", start=mark)
            msg = peer.send_until_state(js, peer.joint_state(names2, q, q, stamp_ns=12))
            assert list(msg.joint_names) == names2
        finally:
            assert node.stop() == 0, node.log()


@pytest.mark.parametrize(
    "ros_args, words",
    [
        (["-p", "update_rate:=abc"], "invalid parameter: Trying to set parameter 'update_rate'"),
        (["-p", "update_rate:=-1.0"], "invalid parameter: Invalid parameter value (-1.0)"),
        (["-p", "robot_description_file:=/no/such/robot.urdf"], "no such file"),
        (["-p", "executor:=fast"], "executor must be one of events, single"),
        (["-p", "cpu_affinity:=[4096]"], "cpu_affinity: CPU(s) [4096] not available"),
        (["-p", "cpu_affinity:=[0, 0]"], "cpu_affinity names a CPU twice: [0, 0]"),
        (["-p", "realtime_priority:=100"], "invalid parameter: Invalid parameter value (100)"),
        (["-p", "realtime_priority:=-1"], "invalid parameter: Invalid parameter value (-1)"),
        (["--no-such-flag"], "invalid ROS arguments: not understood: --no-such-flag"),
        (["-p"], "invalid ROS arguments: Couldn't parse trailing -p flag"),
        (["-r", "foo"], "invalid ROS arguments: Couldn't parse remap rule"),
        # An unquoted URDF, split by the shell into words.
        (["-p", "robot_description:=<robot", 'name="x">', "</robot>"], "a value with spaces"),
    ],
)
def test_bad_ros_arguments_exit_2_with_one_line(ros_args, words, ros_domain_env):
    _, env = ros_domain_env
    out = subprocess.run(
        [sys.executable, "-m", "coriolis_ros.node", "--ros-args", *ros_args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2, text
    assert len(text.splitlines()) == 1, text
    assert text.startswith("coriolis: ") and words in text, text
    assert "Traceback" not in text


def test_realtime_settings_reach_every_thread_of_the_running_node(ros_domain_env, tmp_path):
    """-p realtime_priority -p cpu_affinity: every thread of the node (rclpy's, the DDS
    threads, the builder's) runs FIFO on that CPU, the log says so, and it still publishes."""
    import os

    domain_id, env = ros_domain_env
    cpu = max(os.sched_getaffinity(0))
    path = tmp_path / "robot.urdf"
    path.write_text(URDF)
    names = _names(URDF)
    with Peer(domain_id) as peer:
        peer.collect_states()
        node = NodeProcess(
            env,
            tmp_path / "node.log",
            params={
                "robot_description_file": str(path),
                "realtime_priority": 7,
                "cpu_affinity": [cpu],
            },
        )
        try:
            node.wait_ready("tiny")
            if "realtime_priority 7 not applied" in node.log():
                pytest.skip("this account may not use SCHED_FIFO (the node said so)")
            assert "real-time settings: " in node.log()
            assert f"FIFO 7, CPUs {cpu}" in node.log()
            tids = os.listdir(f"/proc/{node.pid}/task")
            assert len(tids) > 3
            for tid in map(int, tids):
                assert os.sched_getaffinity(tid) == {cpu}
                assert os.sched_getscheduler(tid) == os.SCHED_FIFO
                assert os.sched_getparam(tid).sched_priority == 7
            js = peer.joint_state_publisher()
            peer.wait_matched(js)
            q = np.linspace(0.1, 0.4, len(names))
            msg = peer.send_until_state(js, peer.joint_state(names, q, q, stamp_ns=21))
            np.testing.assert_array_equal(msg.position, q)
        finally:
            assert node.stop() == 0, node.log()


def test_without_realtime_settings_the_node_keeps_the_normal_policy(ros_domain_env, tmp_path):
    import os

    _, env = ros_domain_env
    path = tmp_path / "robot.urdf"
    path.write_text(URDF)
    node = NodeProcess(env, tmp_path / "node.log", params={"robot_description_file": str(path)})
    try:
        node.wait_ready("tiny")
        assert "real-time settings" not in node.log()
        for tid in map(int, os.listdir(f"/proc/{node.pid}/task")):
            assert os.sched_getscheduler(tid) == os.SCHED_OTHER
            assert os.sched_getaffinity(tid) == os.sched_getaffinity(0)
    finally:
        assert node.stop() == 0, node.log()


def test_stamps_and_old_velocity(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    names = _names(URDF)
    n = len(names)
    q = np.linspace(-0.5, 0.5, n)
    qd = np.linspace(1.0, 2.0, n)
    with Peer(domain_id) as peer:
        desc = peer.description_publisher()
        peer.publish_description(desc, URDF)
        peer.collect_states()
        peer.collect_diagnostics()
        node = NodeProcess(
            env,
            tmp_path / "node.log",
            params={"warning_period": 60.0, "diagnostics_period": 0.2, "joint_state_timeout": 0.4},
        )
        try:
            node.wait_ready("tiny")
            js = peer.joint_state_publisher()
            peer.wait_matched(js)

            # A current stamp: no stamp warning.
            now = time.time_ns()
            msg = peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=now))
            assert stamp_ns(msg.header.stamp) == now
            assert "stamp" not in node.log()

            # Zero stamp: used as is (output stamped 0), warned once (throttled).
            msg = peer.send_until_state(js, peer.joint_state(names, q * 2, qd, stamp_ns=0))
            np.testing.assert_array_equal(msg.position, q * 2)
            node.wait_for_log("joint_states with a zero header.stamp: used as is")
            for _ in range(5):
                js.publish(peer.joint_state(names, q, qd, stamp_ns=0))
            peer.wait_for_diagnostic(lambda d: int(diag_values(d)["zero_stamp_messages"]) >= 6)
            assert node.log().count("zero header.stamp") == 1  # throttled

            # Future-dated (10 s ahead): used as is with its stamp, warned.
            future = time.time_ns() + 10_000_000_000
            msg = peer.send_until_state(js, peer.joint_state(names, q * 3, qd, stamp_ns=future))
            np.testing.assert_array_equal(msg.position, q * 3)
            node.wait_for_log(r"joint_states stamped (9|10)\.\d+ s ahead of this node's clock")
            # Within the tolerance (clock skew of 0.1 s): no warning.
            soon = time.time_ns() + 100_000_000
            peer.send_until_state(js, peer.joint_state(names, q, qd, stamp_ns=soon))
            d = peer.wait_for_diagnostic(lambda d: int(diag_values(d)["published"]) >= 9)
            assert int(diag_values(d)["future_stamp_messages"]) == 1

            # Positions keep coming without velocity: while the last velocity is younger than
            # joint_state_timeout nothing is said; after that it is still used, and reported.
            mark = len(node.log())
            t0 = time.monotonic()
            js.publish(peer.joint_state(names, q, qd * 2))
            k = 0
            while time.monotonic() - t0 < 0.25:
                js.publish(peer.joint_state(names, q + 0.001 * k, ()))
                k += 1
                time.sleep(0.02)
            assert "still using their last velocity" not in node.log()[mark:]
            while time.monotonic() - t0 < 1.0:
                js.publish(peer.joint_state(names, q + 0.001 * k, ()))
                k += 1
                time.sleep(0.02)
            node.wait_for_log(
                r"joint_states without velocity for more than 0.4 s for .*: still using their "
                "last velocity",
                start=mark,
            )
            last = peer.received()[-1][0]
            np.testing.assert_array_equal(last.velocity, qd * 2)
            d = peer.wait_for_diagnostic(lambda d: diag_values(d)["joints_with_old_velocity"] != "")
            assert level_of(d) == 1 and "velocity older than the timeout" in d.message
            # A velocity again: the report clears.
            js.publish(peer.joint_state(names, q, qd))
            peer.wait_for_diagnostic(lambda d: diag_values(d)["joints_with_old_velocity"] == "")

            # Partial messages: the output carries the stamp of the newest message merged.
            arm, tip = names[:2], names[2:]
            js.publish(peer.joint_state(arm, q[:2], qd[:2], stamp_ns=now + 1))
            msg = peer.send_until_state(js, peer.joint_state(tip, q[2:], qd[2:], stamp_ns=now + 2))
            assert stamp_ns(msg.header.stamp) == now + 2
        finally:
            assert node.stop() == 0, node.log()
