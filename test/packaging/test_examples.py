"""The controller snippets of docs/controllers.md and examples/slotine_li.py run, and say what
the doc says they say.

* The in-process snippet is extracted from docs/controllers.md and run in a fresh interpreter;
  its torque is checked against the Slotine–Li law evaluated here with Pinocchio's M, C and g (an
  independent implementation).
* The topic snippet is extracted and its node subscribed to a real publisher of CoriolisState.
* examples/slotine_li.py: in-process tracking beats terms one sample old, which beats
  everything one sample old (the ordering the doc's table reports).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


DOC = REPO / "docs" / "controllers.md"


def readme_snippet(name: str) -> str:
    text = DOC.read_text()
    match = re.search(rf"<!-- example: {name} -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert match, f"{DOC.name} has no '<!-- example: {name} -->' python block"
    return match.group(1)


def test_in_process_snippet_runs_and_computes_slotine_li():
    code = readme_snippet("in-process") + (
        "\nimport json\n"
        "print(json.dumps({'tau': tau.tolist(), 'names': list(dyn.joint_names),"
        " 'urdf': str(robot_path('arm7'))}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd="/"
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    tau = np.array(result["tau"])

    # The same law with Pinocchio's terms, in the library's joint order.
    from support.oracle import PinOracle

    oracle = PinOracle(result["urdf"], order=result["names"])
    n = len(result["names"])
    q, qd = np.full(n, 0.1), np.zeros(n)
    lam, k = 20.0, 50.0
    e, ed = q, qd  # q_des = qd_des = qdd_des = 0
    qd_r, qdd_r = -lam * e, -lam * ed
    s = qd - qd_r
    M, C, g = oracle.M(q), oracle.C(q, qd), oracle.g(q)
    expected = M @ (qdd_r - k * s) + C @ qd_r + g
    np.testing.assert_allclose(tau, expected, rtol=1e-10, atol=1e-10)
    assert np.linalg.norm(tau - g) > 1e-3  # the feedback terms contribute


def test_topic_snippet_receives_a_state(ros_domain_env):
    """The snippet's node (on rclpy's default context, as written) gets a published state."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from coriolis_ros.messages import numpy_to_state
    from coriolis_ros.msg import CoriolisState

    namespace: dict = {}
    exec(compile(readme_snippet("topic"), "docs/controllers.md:topic", "exec"), namespace)
    domain_id, _ = ros_domain_env
    rclpy.init(domain_id=domain_id)
    try:
        monitor = namespace["EnergyMonitor"]()
        publisher_node = rclpy.create_node("snippet_publisher")
        publisher = publisher_node.create_publisher(CoriolisState, "coriolis_state", 10)
        rng = np.random.default_rng(3)
        n = 4
        A = rng.normal(size=(n, n))
        M = A @ A.T + np.eye(n)
        qd = rng.normal(size=n)
        msg = numpy_to_state(
            {"joint_names": [f"j{i}" for i in range(n)], "velocity": qd, "momentum": M @ qd}
        )
        executor = SingleThreadedExecutor()
        executor.add_node(monitor)
        executor.add_node(publisher_node)
        deadline = time.monotonic() + 30
        while monitor.energy is None and time.monotonic() < deadline:
            publisher.publish(msg)
            executor.spin_once(timeout_sec=0.1)
        assert monitor.energy == pytest.approx(0.5 * qd @ M @ qd, rel=1e-12)
        executor.shutdown()
        monitor.destroy_node()
        publisher_node.destroy_node()
    finally:
        rclpy.try_shutdown()


def test_slotine_li_example_orders_the_three_controllers():
    out = subprocess.run(
        [sys.executable, str(REPO / "examples" / "slotine_li.py"), "--duration", "1.5"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr
    rms = {}
    for line in out.stdout.splitlines():
        m = re.match(r"^(in-process|M, C, g 1 late|all 1 late)\s+(\S+)\s+(\S+)", line)
        if m:
            rms[m.group(1)] = float(m.group(2))
    assert set(rms) == {"in-process", "M, C, g 1 late", "all 1 late"}, out.stdout
    assert rms["in-process"] < 1e-4, out.stdout  # converged: discretisation-level error
    assert rms["in-process"] < rms["M, C, g 1 late"] < rms["all 1 late"], out.stdout
    assert rms["all 1 late"] > 5 * rms["in-process"], out.stdout
