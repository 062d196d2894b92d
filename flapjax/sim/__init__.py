"""The MuJoCo MJX bridge: the only package that imports MuJoCo.

MJX prints a notice on import when the optional GPU ``warp`` package is absent
(it is not needed here); it is silenced so that command output stays clean.
"""

import contextlib as _contextlib
import io as _io

with _contextlib.redirect_stdout(_io.StringIO()):
    from mujoco import mjx as _mjx  # noqa: F401

from flapjax._lazy import lazy_submodules  # noqa: E402

# Loaded on first use (``flapjax.sim.flapper`` after ``import flapjax.sim``).
__getattr__, __dir__ = lazy_submodules(__name__, (
    "backend", "flapper", "multirotor", "render", "rigid", "rollout", "sharding", "tree", "tree_kinematics"),
    globals())
