"""The ROS-free dynamics library: URDF to M, Mdot, C, Christoffel symbols, g and RNEA.

    from coriolis_ros.dynamics import Dynamics
    dyn = Dynamics.from_urdf("robot.urdf")
    M, Mdot, C = dyn.coriolis(q, qd)

See :class:`Dynamics` for the whole API.
"""

from .numba_cache import configure as _configure_cache

NUMBA_CACHE_DIR = _configure_cache()

from .api import Dynamics  # noqa: E402
from .model import Model  # noqa: E402
from .observer import MomentumObserver  # noqa: E402
from .urdf_checks import URDFInertiaWarning  # noqa: E402
from .urdf_model import URDFError, model_from_urdf  # noqa: E402

__all__ = [
    "Dynamics",
    "Model",
    "MomentumObserver",
    "URDFError",
    "URDFInertiaWarning",
    "model_from_urdf",
    "NUMBA_CACHE_DIR",
]
