"""flapjax: a JAX-vectorized, differentiable simulator for small aerial robots
flying close to structures.

Pure kernels live in :mod:`flapjax.aero` (flapping wings) and
:mod:`flapjax.rotor` (multirotor chain); :mod:`flapjax.sim` is the MuJoCo MJX
bridge (imported on demand because it loads MuJoCo). Every formula, its frames,
units and sources are in ``docs/physics.md``; the MJX behaviour the bridge
relies on is in ``docs/mjx_notes.md``.
"""

# The package's one version source: pyproject.toml reads it
# ([tool.setuptools.dynamic]), installed metadata reports it.
__version__ = "0.1.0"

from flapjax import aero, rotor  # noqa: E402
from flapjax._lazy import lazy_submodules  # noqa: E402
from flapjax.validation import ConfigError  # noqa: E402

__all__ = ["aero", "rotor", "ConfigError", "__version__"]

# Loaded on first use (``flapjax.tasks.make(...)`` works after ``import
# flapjax``), so importing flapjax does not load MuJoCo.
__getattr__, __dir__ = lazy_submodules(__name__, (
    "cache", "control", "devices", "evaluate", "identify", "math", "noise", "render", "rng", "scene", "sim", "tasks",
    "validation"), globals())
