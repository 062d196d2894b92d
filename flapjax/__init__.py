"""flapjax: a JAX-vectorized, differentiable simulator for small aerial robots
flying close to structures.

Pure kernels live in :mod:`flapjax.aero` (flapping wings) and
:mod:`flapjax.rotor` (multirotor chain); :mod:`flapjax.sim` is the MuJoCo MJX
bridge (imported on demand because it loads MuJoCo).
"""

from flapjax import aero, rotor
from flapjax.validation import ConfigError

__all__ = ["aero", "rotor", "ConfigError"]
__version__ = "0.1.0"
