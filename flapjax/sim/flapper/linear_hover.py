"""The averaged model's linear hover model with the robot's own inertia.

:func:`flapjax.aero.cycle_averaged.linearize_hover` is pure and takes the
inertia as an argument; here the default comes from the robot's MJCF (the
``composite_inertia`` of the base subtree of the ``fixed`` variant), which
only the simulator may read.
"""

from __future__ import annotations

import functools

import numpy as np

from flapjax.aero import cycle_averaged
from flapjax.sim.flapper import model as flapper_model


@functools.lru_cache(maxsize=1)
def _lumped_inertia() -> np.ndarray:
    return flapper_model.composite_inertia(flapper_model.build("fixed"), "base")[2]


def lumped_inertia() -> np.ndarray:
    """(3, 3) inertia of the whole robot (base, plate, stroke arms and wings
    at zero stroke and plate angles) about its centre of mass, world axes of
    the reference pose [kg m^2]; about 5e-6 kg m^2 on the diagonal."""
    return _lumped_inertia().copy()


def linearize_hover(params: cycle_averaged.CycleAveragedParams, inertia=None, *,
                    frequency=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`flapjax.aero.cycle_averaged.linearize_hover` with ``inertia``
    defaulting to :func:`lumped_inertia`.

    Returns: ``A`` (8, 8) and ``B`` (8, 2), float64 numpy arrays (state
    :data:`~flapjax.aero.cycle_averaged.HOVER_STATE`, input
    :data:`~flapjax.aero.cycle_averaged.HOVER_INPUT`, SI units).
    """
    return cycle_averaged.linearize_hover(params, lumped_inertia() if inertia is None else inertia,
                                          frequency=frequency)
