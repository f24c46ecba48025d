"""``python -m coriolis_ros.demo``: see coriolis_ros.demo.run."""

import sys

from coriolis_ros.demo.run import main

sys.exit(main())
