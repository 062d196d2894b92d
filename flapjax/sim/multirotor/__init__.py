"""Multirotor worlds on MJX or the pure-JAX rigid body.

``world`` (:class:`MultirotorWorld`: construction, ``prepare``, ``step``,
``rollout``), ``step`` (the named stages of one step), ``backends`` (the MJX
and rigid backends, ``STAGES``, chosen once; the protocol of
:mod:`flapjax.sim.backend` the flapper implements too), ``model`` (the MJCF and the per-world MJX
model), ``types`` (the pytrees), ``report`` (saturation use).
"""

from flapjax.sim.backend import BACKENDS
from flapjax.sim.multirotor import backends, model, report, step, types, world
from flapjax.sim.multirotor.report import SaturationReport, saturation_report
from flapjax.sim.multirotor.types import Prepared, StepInfo, WorldParams, WorldState
from flapjax.sim.multirotor.world import MultirotorWorld

__all__ = [
    "backends", "model", "report", "step", "types", "world",
    "BACKENDS", "MultirotorWorld", "Prepared", "SaturationReport", "StepInfo", "WorldParams", "WorldState",
    "saturation_report",
]
