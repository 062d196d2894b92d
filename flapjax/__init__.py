"""flapjax: a JAX-vectorized, differentiable simulator for small aerial robots
flying close to structures.

Pure kernels live in :mod:`flapjax.aero` (flapping wings) and
:mod:`flapjax.rotor` (multirotor chain); :mod:`flapjax.sim` is the MuJoCo MJX
bridge (imported on demand because it loads MuJoCo). Every formula, its frames,
units and sources are in ``docs/physics.md``; the MJX behaviour the bridge
relies on is in ``docs/mjx_notes.md``.
"""

import os as _os
import sys as _sys

if _os.path.basename(_sys.argv[0] if _sys.argv else "") == "flapjax":
    # The flapjax command ends on Ctrl-C (130 and one line) from its first
    # import on, before JAX loads; flapjax.cli_evaluate.end_on_ctrl_c says why.
    import signal as _signal

    try:
        _signal.signal(_signal.SIGINT, lambda signum, frame: (_os.write(2, b"interrupted\n"), _os._exit(130)))
    except ValueError:  # not the main thread: leave Python's default
        pass

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
    "cache", "control", "data", "devices", "evaluate", "identify", "math", "noise", "render", "rng", "runs", "scene", "sim",
    "tasks", "validation"), globals())
