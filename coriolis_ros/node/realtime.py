"""Real-time settings of the node's process (ROS-free): CPU affinity and SCHED_FIFO priority.

A node that keeps 1 kHz shares its cores with the robot's other processes; its latency tail is
set by the scheduler, not by its arithmetic (bench/results: 0.02 ms of kernels a tick, a p99 of
several ms when three processes share two cores). The usual remedy on a control computer is
the one ros2_control's controller manager offers: pin the loop to cores of its own and run it
under the real-time FIFO policy. Both are applied to every thread the process has (rclpy's and
the DDS threads included), and threads started later (the model builder, the compute thread)
inherit them from the thread that starts them (Linux's default for new threads).
"""

from __future__ import annotations

import os

from .param_spec import ParamSpec

PARAMETERS = (
    ParamSpec(
        "realtime_priority",
        0,
        "SCHED_FIFO priority of every thread of the node (1-99; 0: the normal time-sharing "
        "policy). Needs CAP_SYS_NICE or an rtprio limit (/etc/security/limits.conf) at least "
        "this high; when the system refuses, the node says why and runs at normal priority. "
        "Use it with cpu_affinity: a FIFO thread that never blocks would starve its core.",
        read_only=True,
        minimum=0,
        maximum=99,  # SCHED_FIFO's range on Linux: 1..99
    ),
    ParamSpec(
        "cpu_affinity",
        [],
        "CPUs (0-based indices) every thread of the node may run on, e.g. [3] for a core "
        "of its own. []: unchanged (all the CPUs the process was started with).",
        constraints="a list of distinct CPU indices this process may use",
        array_type="integer",
    ),
)


def affinity_problem(cpus, allowed=None) -> str | None:
    """None for an empty list or distinct CPU indices within `allowed` (default: the CPUs
    this process may use now), else the reason."""
    values = list(cpus)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return f"cpu_affinity must be a list of CPU indices, got {values!r}"
    if len(set(values)) != len(values):
        return f"cpu_affinity names a CPU twice: {values}"
    allowed = sorted(os.sched_getaffinity(0) if allowed is None else allowed)
    outside = [v for v in values if v not in allowed]
    if outside:
        return (
            f"cpu_affinity: CPU(s) {outside} not available to this process "
            f"(it may use {_ranges(allowed)})"
        )
    return None


def apply(priority: int, cpus, threads=None) -> list[str]:
    """Set `cpus` (unless empty) and SCHED_FIFO at `priority` (unless 0) on every thread in
    `threads` (default: all the process's threads now). Returns one line per setting the
    system refused, naming the cause; [] when everything was applied."""
    tids = _threads() if threads is None else list(threads)
    problems = []
    if cpus:
        failed = _each(tids, lambda tid: os.sched_setaffinity(tid, set(cpus)))
        if failed:
            problems.append(f"cpu_affinity {list(cpus)} not applied: {failed}")
    if priority:
        param = os.sched_param(int(priority))
        failed = _each(tids, lambda tid: os.sched_setscheduler(tid, os.SCHED_FIFO, param))
        if failed:
            problems.append(
                f"realtime_priority {priority} not applied ({failed}): running at normal "
                "priority; grant CAP_SYS_NICE or raise the rtprio limit "
                "(/etc/security/limits.conf, or LimitRTPRIO= in a systemd unit)"
            )
    return problems


def describe(threads=None) -> str:
    """The policy and CPUs of the calling process's threads, for the start-up log."""
    tids = _threads() if threads is None else list(threads)
    policies = set()
    cpus = set()
    for tid in tids:
        try:
            policy = os.sched_getscheduler(tid)
            prio = os.sched_getparam(tid).sched_priority
            policies.add(f"FIFO {prio}" if policy == os.SCHED_FIFO else "normal")
            cpus |= os.sched_getaffinity(tid)
        except OSError:  # the thread ended meanwhile
            continue
    return f"{len(tids)} threads, {'/'.join(sorted(policies))}, CPUs {_ranges(sorted(cpus))}"


def _threads() -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task"))
    except OSError:  # no procfs: the calling thread only
        return [0]


def _each(tids, call) -> str:
    """Apply `call` to every thread; '' or the first refusal (a thread that ended is fine)."""
    for tid in tids:
        try:
            call(tid)
        except ProcessLookupError:
            continue
        except OSError as exc:
            return exc.strerror or type(exc).__name__
    return ""


def _ranges(cpus) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    parts, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts) or "none"
