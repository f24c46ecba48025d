"""The ROS-free dynamics library: URDF to M, Mdot, C, Christoffel symbols, g and RNEA.

    from coriolis_ros.dynamics import Dynamics
    dyn = Dynamics.from_urdf("robot.urdf")
    M, Mdot, C = dyn.coriolis(q, qd)

See :class:`Dynamics` for the whole API.
"""

from .adaptive import AdaptiveController
from .api import Dynamics
from .identification import Identification, identify
from .model import Model
from .numba_cache import cache_dir
from .observer import MomentumObserver
from .urdf_checks import URDFInertiaWarning
from .urdf_model import URDFError, model_from_urdf

__all__ = [
    "AdaptiveController",
    "Dynamics",
    "Identification",
    "Model",
    "MomentumObserver",
    "URDFError",
    "URDFInertiaWarning",
    "identify",
    "model_from_urdf",
    "cache_dir",
]
