"""Load: JointState at 1 kHz for 10 s on Panda and Talos.

Asserts accounting, not speed: every message the node received is either published (and
received here, over a reliable subscription) or counted as skipped; services keep answering;
the node's RSS does not grow between the 2nd and the 10th second. The measured figures (rates,
skips, latency, RSS) are printed (`pytest -s`) and, when NODE_LOAD_REPORT names a file,
appended to it as JSON lines.
"""

import json
import os
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2 wheels) is needed for node tests")

from support.ros_helpers import (  # noqa: E402
    NodeProcess,
    Peer,
    diag_values,
    panda_urdf,
    percentile,
    stamp_ns,
    talos_urdf,
)

from coriolis_ros.dynamics import Dynamics  # noqa: E402

RATE = 1000.0
SECONDS = 10
RSS_GROWTH_LIMIT_KB = 8 * 1024
COUNTERS = ("received", "published", "skipped", "withheld", "rejected", "ignored", "failed")


def _counters(status) -> dict:
    values = diag_values(status)
    return {k: int(values[k]) for k in COUNTERS}


@pytest.mark.parametrize("robot", ["panda", "talos"])
def test_load_1khz(robot, ros_domain_env, tmp_path):
    from coriolis_ros.srv import ComputeDynamics

    domain_id, env = ros_domain_env
    urdf = panda_urdf() if robot == "panda" else talos_urdf()
    names = list(Dynamics.from_urdf(urdf, mimic="independent").joint_names)
    n = len(names)
    with Peer(domain_id) as peer:
        desc = peer.description_publisher()
        peer.publish_description(desc, urdf)
        peer.collect_states(depth=5000)
        peer.collect_diagnostics()
        # A reliable output queue deep enough that nothing published is dropped before this
        # (reliable) subscriber acknowledges it: "published" then equals "received here".
        node = NodeProcess(
            env,
            tmp_path / "node.log",
            params={"output_queue_depth": 5000, "diagnostics_period": 0.5, "mimic": "independent"},
        )
        try:
            node.wait_ready(robot)
            js = peer.joint_state_publisher(depth=1000)
            peer.wait_matched(js)
            client = peer.client(ComputeDynamics, "compute_dynamics")

            # Prime: one state through, then take the counters as the baseline once the node is
            # at rest (every message accounted for, every output arrived here), so a repeated
            # priming message cannot be counted on one side only.
            peer.send_until_state(js, peer.joint_state(names, np.zeros(n), np.zeros(n), stamp_ns=1))

            def at_rest():
                d = peer.last_diagnostic()
                if d is None:
                    return None
                c = _counters(d)
                seen = len(peer.received())
                outcomes = sum(c[k] for k in COUNTERS[1:])
                if c["published"] >= 1 and outcomes == c["received"] and c["published"] == seen:
                    return c, seen, len(peer.diagnostics)
                return None

            base, seen0, diag0 = peer.wait_for(at_rest, what="counters at rest after priming")

            # Services while the ticks run.
            stop = threading.Event()
            service_times, service_failures = [], []

            def call_services():
                rng = np.random.default_rng(0)
                while not stop.is_set():
                    q = rng.uniform(-1, 1, n)
                    t = time.perf_counter()
                    r = peer.call(
                        client,
                        ComputeDynamics.Request(
                            joint_names=names, position=q.tolist(), velocity=q.tolist()
                        ),
                    )
                    service_times.append(time.perf_counter() - t)
                    if not r.success:
                        service_failures.append(r.message)
                    stop.wait(0.05)

            caller = threading.Thread(target=call_services, daemon=True)
            caller.start()

            # 1 kHz paced sleep loop (not an rclpy timer: those top out near 870 Hz).
            total = int(RATE * SECONDS)
            phase = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
            rss = []
            start = time.perf_counter()
            for k in range(total):
                target = start + k / RATE
                delay = target - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                t = k / RATE
                q = 0.5 * np.sin(2.0 * np.pi * 0.5 * t + phase)
                qd = 0.5 * np.pi * np.cos(2.0 * np.pi * 0.5 * t + phase)
                js.publish(peer.joint_state(names, q, qd))
                if (k + 1) % int(RATE) == 0:
                    rss.append(node.rss_kb())
            send_seconds = time.perf_counter() - start
            stop.set()
            caller.join(10)

            # Settle: everything published has arrived and the counters add up at rest.
            def settled():
                d = peer.last_diagnostic()
                if d is None:
                    return None
                c = {k: v - base[k] for k, v in _counters(d).items()}
                outcomes = sum(c[k] for k in COUNTERS[1:])
                if (
                    c["received"]
                    and outcomes == c["received"]
                    and c["published"] == len(peer.received()) - seen0
                ):
                    return c
                return None

            try:
                c = peer.wait_for(settled, timeout=60, what="counters to settle")
            except AssertionError as exc:
                last = peer.last_diagnostic()
                raise AssertionError(
                    f"{exc}: base {base}, last {last and _counters(last)}, "
                    f"states received here {len(peer.received()) - seen0}"
                ) from None
            states = peer.received()[seen0:]

            assert c["received"] == len(states) + c["skipped"]  # in == out + skips
            assert c["rejected"] == c["ignored"] == c["withheld"] == c["failed"] == 0
            assert not service_failures, service_failures[:3]
            assert service_times, "no service call completed during the load"
            assert len(rss) == SECONDS
            growth = rss[-1] - rss[1]
            assert growth < RSS_GROWTH_LIMIT_KB, f"RSS grew {growth} kB: {rss}"
            assert node.alive()

            latency_ms = [
                (t - stamp_ns(m.header.stamp)) / 1e6
                for m, t in states
                if stamp_ns(m.header.stamp) > 1
            ]
            figures = {
                "robot": robot,
                "dof": n,
                "sent": total,
                "send_rate_hz": total / send_seconds,
                "node_received": c["received"],
                "published": c["published"],
                "skipped": c["skipped"],
                "received_here": len(states),
                "latency_p50_ms": percentile(latency_ms, 50),
                "latency_p99_ms": percentile(latency_ms, 99),
                "service_calls": len(service_times),
                "service_p50_ms": percentile(service_times, 50) * 1e3,
                "service_p99_ms": percentile(service_times, 99) * 1e3,
                "rss_kb_2s": rss[1],
                "rss_kb_10s": rss[-1],
            }
            periods = [diag_values(d) for d in list(peer.diagnostics)[diag0:]]
            busy = [v for v in periods if v["compute_time_mean_ms"] != "nan"]
            if busy:
                figures["node_input_rate_hz_max"] = max(float(v["input_rate_hz"]) for v in busy)
                figures["node_output_rate_hz_mean"] = float(
                    np.mean([float(v["output_rate_hz"]) for v in busy])
                )
                figures["compute_ms_mean"] = float(
                    np.mean([float(v["compute_time_mean_ms"]) for v in busy])
                )
                figures["compute_ms_max"] = max(float(v["compute_time_max_ms"]) for v in busy)
                figures["tick_ms_mean"] = float(
                    np.mean([float(v["tick_time_mean_ms"]) for v in busy])
                )
            print("\nLOAD", json.dumps(figures))
            report = os.environ.get("NODE_LOAD_REPORT")
            if report:
                with open(report, "a") as f:
                    f.write(json.dumps(figures) + "\n")
        finally:
            assert node.stop() == 0, node.log()
