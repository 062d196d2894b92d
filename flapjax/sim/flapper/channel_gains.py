"""Designed hover gains of a robot that steers through control channels
(docs/flapper_robots.md, Hover).

The hover controller (:func:`flapjax.control.hover.hover_command`) asks for
one input per axis; a channel robot turns them into its channel vector
through its averaged model's control matrix
(:func:`flapjax.control.hover.channel_command`). Its gains come from an LQR
on :meth:`~flapjax.control.design.LinearHoverModel.from_averaged` of
``params.averaged`` (control matrix B and thrust tilt T at the hover
frequency), with the base's inertia from the robot's model:

* per-wing model: cycle filter on, the estimate's delay
  :func:`~flapjax.control.design.notch_delay` in the design;
* lumped averaged model: no filter, no delay;
* both: an ideal channel (no servo lag), channels clipped to 0.3 units, the
  frequency held within ``(0.5 f_h, 1.5 f_h)`` (the seed's 20-60 Hz around its
  42 Hz, scaled) unless ``frequency_limits`` is given.
"""

from __future__ import annotations

import jax
import numpy as np
from mujoco import mjx

from flapjax.control.hover import HoverGains
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot
from flapjax.validation import ConfigError, is_traced

#: Frequency limits of the default design, as multiples of f_h [-].
FREQUENCY_SPAN = (0.5, 1.5)
#: Largest channel value the designed controller commands [channel units].
CHANNEL_LIMIT = 0.3


def base_inertia(robot: FlapperRobot) -> np.ndarray:
    """(3, 3) inertia of the base's subtree (wings included) about its centre
    of mass, world axes, at the model's reference pose [kg m^2]."""
    m = robot.model
    with jax.ensure_compile_time_eval():  # concrete even when called under a jit trace
        d = mjx.kinematics(m, mjx.make_data(m))
    parent = np.asarray(m.body_parentid)

    def below_base(b: int) -> bool:
        while b not in (robot.base_body, 0):
            b = int(parent[b])
        return b == robot.base_body

    ids = [b for b in range(m.nbody) if below_base(b)]
    mass = np.asarray(m.body_mass, dtype=float)[ids]
    pos = np.asarray(d.xipos, dtype=float)[ids]
    rot = np.asarray(d.ximat, dtype=float)[ids].reshape(-1, 3, 3)
    com = mass @ pos / mass.sum()
    inertia = np.zeros((3, 3))
    for k, b in enumerate(ids):
        r = pos[k] - com
        inertia += rot[k] @ np.diag(np.asarray(m.body_inertia, dtype=float)[b]) @ rot[k].T
        inertia += mass[k] * (r @ r * np.eye(3) - np.outer(r, r))
    return inertia


def channel_gains(robot: FlapperRobot, params: FlapperParams, *, frequency_limits=None) -> HoverGains:
    """:func:`~flapjax.control.design.design_gains` through the robot's
    channels (module docstring), at ``params.averaged``'s hover frequency.

    Args:
      robot: a robot with a free or lumped root.
      params: its parameters; ``params.averaged`` must hold a control matrix
        (3, nc) (``flapjax identify --robot`` writes one) and be concrete
        (design outside ``jit``, pass the gains in).
      frequency_limits: (2,) [Hz]; default ``FREQUENCY_SPAN`` times f_h.
    """
    from flapjax.control import design  # scipy's Riccati solver, only when a channel robot hovers

    avg = params.averaged
    if avg.control_matrix is None:
        raise ConfigError(f"params.averaged.control_matrix: the robot's channels {list(robot.channel_kinds)} need "
                          "the averaged model's control matrix (flapjax identify --robot writes it)")
    if any(is_traced(x) for x in jax.tree.leaves(avg)):
        raise ConfigError("params.averaged: a channel robot's gains are designed from concrete values; call "
                          "flapper.hover_gains(robot, params) outside jit and pass gains=...")
    # f_h = sqrt(m g / k_f) in numpy: under a jit trace even jnp on constants gives tracers.
    f_h = float(np.sqrt(float(avg.mass) * float(avg.gravity) / float(avg.lift_coefficient)))
    inertia = np.diag(base_inertia(robot))
    wing = robot.aero_model == "wing"
    model = design.LinearHoverModel.from_averaged(avg, inertia=(inertia[1], inertia[0]), plate_lag=0.0, frequency=f_h,
                                                  estimate_lag=design.notch_delay(f_h) if wing else 0.0)
    limits = tuple(s * f_h for s in FREQUENCY_SPAN) if frequency_limits is None else tuple(frequency_limits)
    return design.design_gains(model, hover_frequency=f_h, plate_limit=CHANNEL_LIMIT, frequency_limits=limits,
                               cycle_filter=wing, filter_settle=0.05, command_lag=0.0)
