"""Parameters at start and when set: a model file that cannot be used exits 2 with a line, an
unknown parameter is named with the nearest valid one, a set that would be refused later is
refused (successful=False, with the reason) and the model keeps serving."""

import subprocess
import sys

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import NodeProcess, Peer, small_robot_urdf, write_params_file  # noqa: E402
from support.node_core import XACRO  # noqa: E402

URDF = small_robot_urdf()


@pytest.mark.parametrize(
    "content, words",
    [
        (XACRO, "xacro"),
        ("<robot name='r'><link name='a'></robot>", "malformed XML"),
        ("just words", "not URDF XML"),
    ],
)
def test_a_model_file_that_cannot_be_used_exits_2_with_one_line(
    ros_domain_env, tmp_path, content, words
):
    _, env = ros_domain_env
    path = tmp_path / "robot.urdf"
    path.write_text(content)
    out = subprocess.run(
        [sys.executable, "-m", "coriolis_ros.node", "--ros-args", "-p",
         f"robot_description_file:={path}"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 2, text
    assert f"invalid parameter: robot_description_file {path}: cannot use it" in text
    assert words in text and "Traceback" not in text


def test_unknown_parameters_warned_and_sets_checked(ros_domain_env, tmp_path):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    domain_id, env = ros_domain_env
    good, xacro = tmp_path / "good.urdf", tmp_path / "robot.xacro"
    good.write_text(URDF)
    xacro.write_text(XACRO)
    params = write_params_file(
        tmp_path / "p.yaml",
        {"robot_description_file": str(good), "updte_rate": 5.0, "observer_enabled": True},
    )
    node = NodeProcess(env, tmp_path / "node.log", params_file=params,
                       ros_args=("-p", "warning_perod:=1.0"))  # fmt: skip
    try:
        node.wait_ready("tiny")
        assert "unknown parameter 'updte_rate' ignored; did you mean 'update_rate'?" in node.log()
        assert "unknown parameter 'warning_perod' ignored; did you mean 'warning_period'?" in (
            node.log()
        )
        with Peer(domain_id) as peer:
            client = peer.client(SetParameters, "/coriolis/set_parameters")

            def set_param(name, value):
                if isinstance(value, str):
                    v = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
                else:
                    v = ParameterValue(
                        type=ParameterType.PARAMETER_DOUBLE_ARRAY, double_array_value=value
                    )
                request = SetParameters.Request(parameters=[Parameter(name=name, value=v)])
                return peer.call(client, request).results[0]

            result = set_param("robot_description_file", str(xacro))
            assert not result.successful and "xacro" in result.reason, result.reason
            result = set_param("observer_gain", [1.0, 2.0])
            assert not result.successful and "2 values but the model has 4" in result.reason
            assert set_param("observer_gain", [1.0, 2.0, 3.0, 4.0]).successful
            mark = len(node.log())
            good2 = tmp_path / "good2.urdf"
            good2.write_text(small_robot_urdf("tiny2", "uj"))
            assert set_param("robot_description_file", str(good2)).successful
            node.wait_for_log(r"robot model replaced: tiny \(4 DoF\) -> tiny2", start=mark)
        assert "rejected" not in node.log()
    finally:
        assert node.stop() == 0, node.log()
