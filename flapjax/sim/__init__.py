"""The MuJoCo MJX bridge: the only package that imports MuJoCo.

MJX prints a notice on import when the optional GPU ``warp`` package is absent
(it is not needed here); it is silenced so that command output stays clean.
"""

import contextlib as _contextlib
import io as _io

with _contextlib.redirect_stdout(_io.StringIO()):
    from mujoco import mjx as _mjx  # noqa: F401

import importlib as _importlib  # noqa: E402

#: Modules loaded on first use (``flapjax.sim.flapper`` after ``import flapjax.sim``).
_LAZY = ("backend", "flapper", "multirotor", "render", "rigid", "rollout", "sharding", "tree", "tree_kinematics")


def __getattr__(name: str):
    if name in _LAZY:
        return _importlib.import_module(f"flapjax.sim.{name}")
    raise AttributeError(f"module 'flapjax.sim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
