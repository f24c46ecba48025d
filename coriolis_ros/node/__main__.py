"""`python -m coriolis_ros.node [--ros-args ...]` runs the coriolis node."""

import sys

from .coriolis_node import main

sys.exit(main())
