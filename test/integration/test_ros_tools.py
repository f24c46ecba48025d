"""``coriolis-ros echo``, ``call`` and ``plot`` against a running node, as a user without the
``ros2`` command runs them (the console script, in a fresh process, in the node's domain).

The node is started from a ``.xacro`` file (its robot_description_file), so the same run
checks that the node expands xacro. Numbers printed by the tools are compared with Pinocchio
(an independent implementation) at the state that was published or requested.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for the ROS tools")
pytest.importorskip("xacro", reason="the node is started from a .xacro file")

from support.ros_helpers import NodeProcess, Peer, PinReference  # noqa: E402

from coriolis_ros.robots import robot_path  # noqa: E402

XACRO = """<?xml version="1.0"?>
<robot name="arm7_from_xacro" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:include filename="$(find coriolis_ros)/urdf/arm7.urdf"/>
</robot>
"""


def cli(env, *args, timeout=120.0):
    """The console script's entry point in a fresh interpreter (as `coriolis-ros ...`)."""
    return subprocess.run(
        [sys.executable, "-m", "coriolis_ros.cli", *args],
        env=env, capture_output=True, text=True, timeout=timeout, cwd="/",
    )  # fmt: skip


def nums(values) -> list[str]:
    """Numbers as command-line arguments, exactly (repr of a float round-trips)."""
    return [repr(float(v)) for v in values]


class Publisher:
    """Joint states of a fixed (q, qd) at ~50 Hz from the peer, stamps increasing."""

    def __init__(self, peer, names, q, qd):
        self.peer, self.names, self.q, self.qd = peer, names, q, qd
        self.publisher = peer.joint_state_publisher()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.publisher.publish(self.peer.joint_state(self.names, self.q, self.qd))
            time.sleep(0.02)

    def stop(self):
        self._stop.set()
        self._thread.join(5)


@pytest.fixture
def running_node(ros_domain_env, tmp_path):
    domain_id, env = ros_domain_env
    path = tmp_path / "arm7.urdf.xacro"
    path.write_text(XACRO)
    urdf = robot_path("arm7").read_text()
    ref = PinReference(urdf)
    names = ref.joint_names()
    rng = np.random.default_rng(11)
    q, qd = rng.uniform(-1, 1, len(names)), rng.uniform(-1, 1, len(names))
    with Peer(domain_id) as peer:
        node = NodeProcess(env, tmp_path / "node.log", params={"robot_description_file": path})
        publisher = None
        try:
            node.wait_ready("arm7_from_xacro")  # the xacro was expanded by the node
            publisher = Publisher(peer, names, q, qd)
            yield env, ref, names, q, qd, tmp_path
        finally:
            if publisher is not None:
                publisher.stop()
            assert node.stop() == 0, node.log()


def test_echo_call_and_plot_against_the_node(running_node):
    env, ref, names, q, qd, tmp_path = running_node

    # echo --once, JSON: the published state, and the terms Pinocchio gives there.
    r = cli(env, "echo", "--once", "--format", "json")
    assert r.returncode == 0, r.stderr
    (line,) = r.stdout.strip().splitlines()
    state = json.loads(line)
    assert state["topic"] == "/coriolis_state" and state["stamp_ns"] > 0
    order = [state["joint_names"].index(name) for name in names]
    np.testing.assert_array_equal(np.asarray(state["position"])[order], q)
    expected = ref.evaluate(state["joint_names"], np.asarray(state["position"]),
                            np.asarray(state["velocity"]))  # fmt: skip
    for key, value in expected.items():
        np.testing.assert_allclose(state[key], value, rtol=1e-10, atol=1e-10, err_msg=key)

    # echo --count 2, text, one field: two messages, the matrix printed with its shape.
    r = cli(env, "echo", "coriolis_state", "--count", "2", "--field", "mass_matrix")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("--- /coriolis_state  stamp ") == 2, r.stdout
    assert r.stdout.count("mass_matrix:\n[[") == 2 and "coriolis_matrix" not in r.stdout

    # echo /diagnostics: the node's status, readable.
    r = cli(env, "echo", "/diagnostics", "--once")
    assert r.returncode == 0, r.stderr
    assert "/coriolis: dynamics" in r.stdout and "      " in r.stdout, r.stdout

    # call compute_dynamics with names in another order, Slotine-Li reference included.
    perm = np.arange(len(names))[::-1]
    qd_r, qdd_r = np.linspace(-1, 1, len(names)), np.linspace(0.5, -0.5, len(names))
    args = ["call", "compute_dynamics", "--format", "json",
            "--joint-names", *[names[i] for i in perm],
            "--position", *nums(q[perm]), "--velocity", *nums(qd[perm])]  # fmt: skip
    r = cli(env, *args)
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert answer["service"] == "/compute_dynamics" and answer["success"] is True
    assert answer["joint_names"] == state["joint_names"]
    model_q = np.asarray(answer["position"])
    model_qd = np.asarray(answer["velocity"])
    expected = ref.evaluate(answer["joint_names"], model_q, model_qd)
    for key, value in expected.items():
        np.testing.assert_allclose(answer[key], value, rtol=1e-10, atol=1e-10, err_msg=key)
    assert answer["slotine_li_torque"] is None  # no reference given: left empty by the node

    names_model = answer["joint_names"]
    r = cli(env, *args, "--reference-velocity", *nums(qd_r),
            "--reference-acceleration", *nums(qdd_r))  # fmt: skip
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    M = np.asarray(answer["mass_matrix"])
    C = np.asarray(answer["coriolis_matrix"])
    g = np.asarray(answer["gravity_force"])
    np.testing.assert_allclose(answer["slotine_li_torque"], M @ qdd_r + C @ qd_r + g,
                               rtol=1e-10, atol=1e-10)  # fmt: skip

    # call christoffel at a given position, text: every Gamma[i] block printed.
    r = cli(env, "call", "christoffel", "--joint-names", *names_model,
            "--position", *nums(model_q))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "symbols: Gamma[i]" in r.stdout and all(f"] {n}:" in r.stdout for n in names_model)
    # ... and as JSON: contracted with qd it is Pinocchio's C.
    r = cli(env, "call", "christoffel", "--format", "json")  # the latest joint state
    assert r.returncode == 0, r.stderr
    gamma = np.asarray(json.loads(r.stdout)["symbols"])
    assert gamma.shape == (len(names),) * 3
    np.testing.assert_allclose(gamma @ model_qd, expected["coriolis_matrix"], rtol=1e-10,
                               atol=1e-10)  # fmt: skip

    # Refusals: exit 1, the node's reason on stderr, nothing on stdout.
    r = cli(env, "call", "compute_dynamics", "--joint-names", "nope", "--position", "0")
    assert r.returncode == 1 and r.stdout == ""
    assert "refused: request: unknown joint names: nope" in r.stderr, r.stderr
    r = cli(env, "call", "reset_observer")
    assert r.returncode == 1 and "success: False" in r.stdout, r.stdout + r.stderr

    # plot to a file.
    out = tmp_path / "state.png"
    r = cli(env, "plot", "-o", str(out), "--count", "5", "--duration", "60",
            "--field", "coriolis_force", "gravity_force", "velocity")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "5 messages of /coriolis_state" in r.stdout, r.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_usage_errors_need_no_node(ros_domain_env):
    _, env = ros_domain_env
    cases = [
        (("echo", "--count", "0"), 2, "--count must be at least 1"),
        (("echo", "--once", "--count", "2"), 2, "not allowed with argument"),
        (("call", "christoffel", "--velocity", "1"), 2, "christoffel takes no --velocity"),
        (("call", "compute_dynamics", "--position", "1"), 2, "--position needs --joint-names"),
        (("plot", "--field", "mass_matrix", "-o", "x.png"), 2, "cannot plot mass_matrix"),
        (("echo", "/nobody_publishes_this", "--timeout", "1"), 1,
         "no publisher of /nobody_publishes_this within 1 s (ROS_DOMAIN_ID"),
        (("call", "reset_observer", "--timeout", "1"), 1,
         "service /reset_observer not available within 1 s"),
    ]  # fmt: skip
    for args, status, text in cases:
        r = cli(env, *args)
        assert r.returncode == status, (args, r.stdout, r.stderr)
        assert text in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr, r.stderr


def test_without_rclpy_the_tools_say_what_they_need(tmp_path):
    code = (
        "import sys; sys.modules['rclpy'] = None\n"
        "from coriolis_ros.cli import main\nsys.exit(main(sys.argv[1:]))"
    )
    r = subprocess.run([sys.executable, "-c", code, "echo", "--once"], capture_output=True,
                       text=True, timeout=120, cwd="/")  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "coriolis-ros echo: error: needs ROS 2 (rclpy)" in r.stderr, r.stderr
