"""The node's real-time settings (ROS-free): cpu_affinity and realtime_priority, checked as
parameters and applied to every thread of a process (in a child process, so the test run
itself is never pinned or made real-time)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from coriolis_ros.node import realtime
from coriolis_ros.node.params import SPECS, validate

ALLOWED = sorted(os.sched_getaffinity(0))


def _child(body: str) -> dict:
    """Run `body` in a fresh interpreter with two extra threads alive; it sets `result`."""
    code = (
        textwrap.dedent(
            """
        import json, os, threading
        from coriolis_ros.node import realtime
        stop = threading.Event()
        threads = [threading.Thread(target=stop.wait) for _ in range(2)]
        for t in threads:
            t.start()
        result = {}
        try:
        """
        )
        + textwrap.indent(textwrap.dedent(body), "    ")
        + textwrap.dedent(
            """
        finally:
            stop.set()
        print(json.dumps(result))
        """
        )
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60, cwd="/"
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _every_thread(attribute: str) -> str:
    """Code that collects `attribute` (affinity or policy) of every thread into result."""
    return f"""
tids = sorted(int(t) for t in os.listdir("/proc/self/task"))
result["threads"] = len(tids)
if "{attribute}" == "affinity":
    result["{attribute}"] = [sorted(os.sched_getaffinity(t)) for t in tids]
else:
    result["{attribute}"] = [
        [os.sched_getscheduler(t), os.sched_getparam(t).sched_priority] for t in tids
    ]
"""


def test_affinity_accepts_empty_and_cpus_this_process_may_use():
    assert realtime.affinity_problem([]) is None
    assert realtime.affinity_problem(ALLOWED) is None
    assert realtime.affinity_problem(ALLOWED[:1]) is None
    assert validate("cpu_affinity", ALLOWED[-1:]) is None


@pytest.mark.parametrize(
    "cpus, words",
    [
        ([max(ALLOWED) + 1], f"CPU(s) [{max(ALLOWED) + 1}] not available to this process"),
        ([-1], "CPU(s) [-1] not available"),
        ([ALLOWED[0], ALLOWED[0]], "names a CPU twice"),
        ([0.0], "must be a list of CPU indices"),
        ([True], "must be a list of CPU indices"),
        (["0"], "must be a list of CPU indices"),
    ],
)
def test_affinity_refuses_what_the_process_cannot_use(cpus, words):
    reason = validate("cpu_affinity", cpus)
    assert reason is not None and words in reason, reason


def test_affinity_names_the_allowed_cpus_as_ranges():
    reason = realtime.affinity_problem([7], allowed={0, 1, 2, 5})
    assert reason == "cpu_affinity: CPU(s) [7] not available to this process (it may use 0-2,5)"
    assert realtime.affinity_problem([5], allowed={0, 1, 2, 5}) is None


@pytest.mark.parametrize("value, ok", [(-1, False), (0, True), (1, True), (99, True), (100, False)])
def test_priority_range_both_sides(value, ok):
    assert SPECS["realtime_priority"].default == 0
    assert (validate("realtime_priority", value) is None) is ok


def test_nothing_asked_nothing_changed():
    assert realtime.apply(0, []) == []
    result = _child("result['problems'] = realtime.apply(0, [])\n" + _every_thread("affinity"))
    assert result["problems"] == []
    assert result["affinity"] == [ALLOWED] * result["threads"]


def test_affinity_reaches_every_thread_and_threads_started_later():
    cpu = ALLOWED[-1]
    result = _child(
        f"result['problems'] = realtime.apply(0, [{cpu}])\n"
        "late = threading.Thread(target=stop.wait)\n"
        "late.start()\n" + _every_thread("affinity")
    )
    assert result["problems"] == []
    assert result["threads"] == 4  # main, two started before, one after
    assert result["affinity"] == [[cpu]] * 4


def test_affinity_refused_by_the_system_is_reported_not_raised():
    # An index far beyond any machine's CPUs passes no check here (threads= given): the
    # system's refusal comes back as a line naming the setting and the cause.
    problems = realtime.apply(0, [4095], threads=[0])
    assert len(problems) == 1
    assert problems[0].startswith("cpu_affinity [4095] not applied: Invalid argument")
    assert os.sched_getaffinity(0) == set(ALLOWED)


def test_priority_reaches_every_thread_when_permitted():
    result = _child(
        """
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_RTPRIO)
try:
    resource.setrlimit(resource.RLIMIT_RTPRIO, (hard, hard))
except (ValueError, OSError):
    pass
result["problems"] = realtime.apply(10, [])
result["describe"] = realtime.describe()
late = threading.Thread(target=stop.wait)
late.start()
"""
        + _every_thread("policy")
    )
    if result["problems"]:
        pytest.skip(f"this account may not use SCHED_FIFO: {result['problems'][0]}")
    assert result["policy"] == [[os.SCHED_FIFO, 10]] * result["threads"]
    assert result["threads"] == 4
    assert result["describe"].startswith("3 threads, FIFO 10, CPUs ")


def test_priority_refused_says_why_and_leaves_the_normal_policy():
    result = _child(
        """
import resource
resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
if os.geteuid() == 0:  # root has CAP_SYS_NICE: become an unprivileged user
    os.setgid(65534)
    os.setuid(65534)
result["problems"] = realtime.apply(10, [])
result["describe"] = realtime.describe()
"""
        + _every_thread("policy")
    )
    assert len(result["problems"]) == 1
    line = result["problems"][0]
    assert line.startswith("realtime_priority 10 not applied (Operation not permitted)")
    assert "CAP_SYS_NICE" in line and "rtprio" in line
    assert result["policy"] == [[os.SCHED_OTHER, 0]] * result["threads"]
    assert result["describe"].startswith("3 threads, normal, CPUs ")


def test_a_thread_that_ended_is_not_a_refusal():
    # A thread id that no longer exists (ProcessLookupError) is passed over.
    assert realtime._each([2**22 + 12345], lambda tid: os.sched_getaffinity(tid)) == ""


def test_ranges():
    assert realtime._ranges([0, 1, 2, 5]) == "0-2,5"
    assert realtime._ranges([3]) == "3"
    assert realtime._ranges([1, 3, 4]) == "1,3-4"
    assert realtime._ranges([]) == "none"
