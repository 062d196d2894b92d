"""The hover controller's default gains for each flapper robot
(docs/physics.md, Hover controller, Defaults).

* per-wing model: the designed gains, :func:`flapjax.control.design.design_gains`
  (LQR on :meth:`~flapjax.control.design.LinearHoverModel.per_wing`, cycle
  filter on) at the params' hover frequency ``sqrt(m g / k_f)`` and gravity.
  The legacy gains flip this robot over within 2 s; the designed ones hold it
  within 1 deg cycle-mean tilt.
* cycle-averaged model: :meth:`~flapjax.control.hover.HoverGains.legacy`,
  the gains it was tuned with (its hover needs no cycle filter).

The design is a small Riccati solve; it runs once per hover frequency and
gravity (keyed by :func:`flapjax.programs.tree_digest` of the two numbers)
and is cached for the process.
"""

from __future__ import annotations

import math

from flapjax.control.hover import HoverGains
from flapjax.programs import tree_digest
from flapjax.sim.flapper.channels import SEED_KINDS
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot
from flapjax.validation import ConfigError, is_traced

#: The names :func:`hover_gains` accepts besides a :class:`HoverGains`.
GAIN_NAMES = ("default", "designed", "legacy")
# Hover frequency [Hz] and gravity [m/s^2] the README's design_gains() uses;
# the design falls back to them when the params are traced (inside jit).
NOMINAL = (42.2213, 9.81)
_DESIGNED: dict[str, HoverGains] = {}


def designed_gains(params: FlapperParams) -> HoverGains:
    """:func:`~flapjax.control.design.design_gains` for the per-wing robot at
    ``params.averaged``'s hover frequency and gravity (cached; the nominal
    42.2213 Hz and 9.81 m/s^2 when those are traced)."""
    f_h, g = params.averaged.hover_frequency, params.averaged.gravity
    if is_traced(f_h) or is_traced(g):
        f_h, g = NOMINAL
    f_h, g = float(f_h), float(g)
    if not (math.isfinite(f_h) and f_h > 0 and math.isfinite(g) and g > 0):
        raise ConfigError(f"params.averaged: the design needs a positive hover frequency and gravity, "
                          f"got f_h = {f_h:g} Hz, g = {g:g} m/s^2")
    key = tree_digest((f_h, g))
    if key not in _DESIGNED:
        from flapjax.control import design  # scipy's Riccati solver, only when a per-wing robot hovers

        model = design.LinearHoverModel.per_wing(gravity=g)
        _DESIGNED[key] = design.design_gains(model, hover_frequency=f_h)
    return _DESIGNED[key]


def hover_gains(robot: FlapperRobot, params: FlapperParams, gains: HoverGains | str | None = None) -> HoverGains:
    """The gains :func:`flapjax.sim.flapper.hover_rollout` flies: ``gains``
    itself when it is a :class:`HoverGains`; ``"legacy"``:
    :meth:`HoverGains.legacy`; ``"designed"``: :func:`designed_gains`;
    None or ``"default"``: the robot's default (designed for the per-wing
    model, legacy for the cycle-averaged one; see the module docstring). A
    robot with other channels than the seed's two plates gets, for
    ``"default"`` and ``"designed"``, gains designed through its channels
    (:func:`flapjax.sim.flapper.channel_gains.channel_gains`)."""
    if isinstance(gains, HoverGains):
        return gains
    if gains is None:
        gains = "default"
    if not isinstance(gains, str) or gains not in GAIN_NAMES:
        raise ConfigError(f"gains: must be a HoverGains or one of {', '.join(map(repr, GAIN_NAMES))}, got {gains!r}")
    if robot.channel_kinds != SEED_KINDS and gains in ("default", "designed"):
        from flapjax.sim.flapper.channel_gains import channel_gains  # a robot that steers through other channels

        return channel_gains(robot, params)
    if gains == "default":
        gains = "designed" if robot.aero_model == "wing" else "legacy"
    return HoverGains.legacy() if gains == "legacy" else designed_gains(params)
