"""The entry point :mod:`coriolis_ros.cli` hands ``echo``, ``call`` and ``plot`` to."""

from __future__ import annotations

import os
import sys

from .call import call
from .echo import echo
from .plot import plot
from .session import EXIT_OK, ToolError

TOOLS = {"echo": echo, "call": call, "plot": plot}


def run_tool(args) -> int:
    """Run the tool ``args.command``: its exit status; a ToolError is one line on stderr,
    Ctrl-C and a closed output pipe (``| head``) end it quietly."""
    try:
        return TOOLS[args.command](args)
    except ToolError as exc:
        print(f"coriolis-ros {args.command}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return EXIT_OK
    except BrokenPipeError:
        # Nothing more can be written: point stdout at /dev/null so the exit flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
