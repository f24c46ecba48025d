"""SIGINT while the node's modules are still loading ends the process with status 0, even when
the signal lands inside a callback whose exceptions Python ignores (a weakref callback, as
importlib's module locks use)."""

import subprocess
import sys

CHILD = """
import signal, weakref
from coriolis_ros.node import coriolis_node
signal.signal(signal.SIGINT, coriolis_node._stopped_while_starting)
class Thing:
    pass
thing = Thing()
ref = weakref.ref(thing, lambda _: signal.raise_signal(signal.SIGINT))
del thing
print("went on after the signal", flush=True)
"""


def test_a_signal_inside_an_ignored_callback_still_stops_the_start():
    out = subprocess.run(
        [sys.executable, "-P", "-c", CHILD], capture_output=True, text=True, timeout=60, cwd="/"
    )
    assert out.returncode == 0, out.stderr
    assert "went on" not in out.stdout
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr


def test_without_a_signal_the_child_goes_on():
    """The other side: the same child without the signal prints its line."""
    child = CHILD.replace("signal.raise_signal(signal.SIGINT)", "None")
    out = subprocess.run(
        [sys.executable, "-P", "-c", child], capture_output=True, text=True, timeout=60, cwd="/"
    )
    assert out.returncode == 0, out.stderr
    assert "went on after the signal" in out.stdout
