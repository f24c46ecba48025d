"""Test helpers shared by several test modules (from test_cli.py)."""

from __future__ import annotations

import os
import subprocess
import sys


def run_cli(*args: str, code: str | None = None, timeout: float = 120.0):
    """Run the CLI in a fresh interpreter; ``code`` runs first (e.g. to patch the library)."""
    if code is None:
        cmd = [sys.executable, "-m", "coriolis_ros.cli", *args]
    else:
        prog = (
            code + "\nimport sys\nfrom coriolis_ros.cli import main\nsys.exit(main(sys.argv[1:]))"
        )
        cmd = [sys.executable, "-c", prog, *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ), cwd="/"
    )
