"""Start, spin and stop the node: exit status 0 on SIGINT/SIGTERM, 2 with one line for bad
ROS arguments or parameters (a model file that cannot be used included), 1 otherwise."""

from __future__ import annotations

import ast
import re
import sys
import time

import rclpy
import rclpy.logging
from rclpy.exceptions import ParameterException
from rclpy.executors import (
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.experimental import EventsExecutor
from rclpy.logging import get_logger

from . import realtime

NODE_NAME = "coriolis"


def one_line(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ros_args_error(exc: BaseException) -> str:
    """One line for an rclpy.init failure (rcl's message without its source locations)."""
    if type(exc).__name__ == "UnknownROSArgsError":
        unknown = exc.args[0] if exc.args else str(exc)
        if isinstance(unknown, str):  # rclpy passes the list's repr
            try:
                unknown = ast.literal_eval(unknown) if unknown.startswith("[") else [unknown]
            except (ValueError, SyntaxError):
                unknown = [unknown]
        shown = " ".join(str(a) for a in unknown[:5])
        if len(unknown) > 5:
            shown += f" ... ({len(unknown) - 5} more)"
        return one_line(
            f"not understood: {shown} (a value with spaces must be one quoted argument; for a "
            "URDF use -p robot_description_file:=PATH)"
        )
    text = re.sub(r", at /\S+:\d+", "", str(exc))
    return one_line(re.sub(r"^failed to initialize rcl: ", "", text))


def run(node_class, args=None) -> int:
    # The executor thread and the compute worker share the GIL: hand it over sooner than the
    # default 5 ms so a woken worker does not wait a whole interval (tail latency).
    sys.setswitchinterval(5e-4)
    # rcl logs its own "Failed to parse global arguments" line before raising: silence it, the
    # one line below says what is wrong.
    rclpy.logging.set_logger_level("rcl", rclpy.logging.LoggingSeverity.FATAL)
    try:
        rclpy.init(args=args)
    except Exception as exc:  # noqa: BLE001 -- bad ROS arguments: one line, exit 2
        print(f"{NODE_NAME}: invalid ROS arguments: {ros_args_error(exc)}", file=sys.stderr)
        return 2
    rclpy.logging.set_logger_level("rcl", rclpy.logging.LoggingSeverity.UNSET)
    node = None
    try:
        try:
            node = node_class()
        except (ParameterException, ValueError) as exc:  # a -p value, a params file, a model
            print(f"{NODE_NAME}: invalid parameter: {one_line(exc)}", file=sys.stderr)
            return 2
        except Exception as exc:  # noqa: BLE001 -- anything else: say why and exit non-zero
            if not rclpy.ok():
                return 0  # SIGINT/SIGTERM during the start-up shut the context down
            get_logger(NODE_NAME).fatal(f"cannot start: {exc}")
            return 1
        start_exit_watchdog(rclpy.ok, SHUTDOWN_GRACE, _exit_now)
        _realtime(node)
        _spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # SIGINT/SIGTERM shut the context down; the executor may then fail with an RCLError
        # ("context is not valid") instead of ExternalShutdownException, or, while the
        # shutdown is still under way, with a RuntimeError from a callback's arguments. That is
        # a normal exit: the context is down at once or within a moment.
        if not _shut_down_soon(rclpy):
            raise
    finally:
        if node is not None:
            _quietly(node.shutdown)
            _quietly(node.destroy_node)
        _quietly(rclpy.try_shutdown)
    return 0


def _realtime(node) -> None:
    """CPU affinity and FIFO priority on every thread the node has before it spins."""
    values = node.parameter_values()
    priority, cpus = int(values["realtime_priority"]), list(values["cpu_affinity"])
    if not (priority or cpus):
        return
    log = node.get_logger()
    for line in realtime.apply(priority, cpus):
        log.warning(line)
    log.info(f"real-time settings: {realtime.describe()}")


def _spin(node) -> None:
    threads = int(node.get_parameter("executor_threads").value)
    if threads > 1:
        executor = MultiThreadedExecutor(num_threads=threads)
    elif node.get_parameter("executor").value == "events":
        # The C++ event queue: far less CPU per callback than rclpy's Python wait-set loop.
        executor = EventsExecutor()
    else:
        executor = SingleThreadedExecutor()
    executor.add_node(node)
    if isinstance(executor, (MultiThreadedExecutor, SingleThreadedExecutor)):
        executor.spin()
    else:
        # EventsExecutor.spin() does not return when SIGINT/SIGTERM shut the context down
        # (rclpy 9.1.2); spin_once with a timeout lets the signal through.
        while node.context.ok():
            executor.spin_once(timeout_sec=0.2)


# Once SIGINT/SIGTERM has shut the context down, the process ends within this many seconds,
# even if a teardown step (the executor's last wait, destroy_node, rcl's shutdown) hangs.
SHUTDOWN_GRACE = 5.0


def start_exit_watchdog(ok, grace: float, exit_now, poll: float = 0.1):
    """A daemon thread that, once ``ok()`` turns False, gives the teardown ``grace`` seconds
    and then calls ``exit_now()`` (a stop request never leaves the process running)."""
    import threading

    def watch() -> None:
        while ok():
            time.sleep(poll)
        time.sleep(grace)
        exit_now()

    thread = threading.Thread(target=watch, name="coriolis-exit-watchdog", daemon=True)
    thread.start()
    return thread


def _exit_now() -> None:
    import os

    print(f"{NODE_NAME}: shutdown did not finish within {SHUTDOWN_GRACE:g} s; exiting",
          file=sys.stderr, flush=True)  # fmt: skip
    os._exit(0)


def _shut_down_soon(rclpy, wait: float = 0.5) -> bool:
    """Whether the context is shut down now or within ``wait`` seconds."""
    end = time.monotonic() + wait
    while rclpy.ok():
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


def _quietly(step) -> None:
    """A teardown step after the context is gone may fail: the node is ending anyway."""
    try:
        step()
    except (KeyboardInterrupt, Exception):  # noqa: BLE001
        pass
