"""Fixed-base stand rollouts: the cycle-mean loads of fixed flapping-wing
worlds as differentiable functions of per-wing physical parameters.

:class:`LiftRollout` gives the cycle-mean world F_z of vmapped fixed-base
worlds, one per frequency, as a function of the feathering hinge stiffness
and damping and the lift and moment scales (:func:`with_physical`);
:class:`StandRollout` the cycle-mean F_z and optionally the body moments at
a stand table's frequencies and plate angles, with a scale of the wings'
rotational inertia (:func:`with_wing_inertia`) among the parameters.
:func:`apply_physical` puts identified values onto a robot and its
parameters, :func:`calibrate` a study's calibration values. :func:`run_lift` and :func:`run_stand` are their jitted programs.
"""

from __future__ import annotations

from typing import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.sim import tree
from flapjax.sim.flapper.driven import robot_com_offset
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, default_params, make_robot
from flapjax.sim.flapper.sweep import cycle_mean, sweep_params
from flapjax.validation import ConfigError

__all__ = ["STAND_PHYSICAL_PARAMETERS", "LiftRollout", "StandRollout", "apply_physical", "calibrate", "nominal_physical", "nominal_stops",
           "run_lift", "run_stand", "with_physical", "with_wing_inertia"]


def with_physical(params: FlapperParams, values: Mapping[str, jax.Array]) -> FlapperParams:
    """Write per-wing physical parameters into (batched) FlapperParams: the
    hinge's ``hinge_stiffness``, ``hinge_damping`` and its stops
    (``stop_angle``, ``stop_stiffness``, ``stop_width``), the aerodynamic
    ``lift_scale`` and ``moment_scale``."""
    where = {
        "hinge_stiffness": lambda p: p.hinge.stiffness,
        "hinge_damping": lambda p: p.hinge.damping,
        "stop_angle": lambda p: p.hinge.stop_angle,
        "stop_stiffness": lambda p: p.hinge.stop_stiffness,
        "stop_width": lambda p: p.hinge.stop_width,
        "lift_scale": lambda p: p.aero.lift_scale,
        "moment_scale": lambda p: p.aero.moment_scale,
    }
    for name, value in values.items():
        leaf = where[name](params)
        params = eqx.tree_at(where[name], params, jnp.broadcast_to(jnp.asarray(value, dtype=leaf.dtype), leaf.shape))
    return params


def nominal_physical(robot: FlapperRobot) -> dict[str, float]:
    """The per-wing model's nominal physical parameters (MJCF and defaults)."""
    p = default_params(robot)
    return {
        "hinge_stiffness": float(p.hinge.stiffness),
        "hinge_damping": float(p.hinge.damping),
        "lift_scale": float(p.aero.lift_scale),
        "moment_scale": float(p.aero.moment_scale),
    }


def nominal_stops(robot: FlapperRobot) -> dict[str, float]:
    """The feathering stops' nominal ``stop_angle`` [rad], ``stop_stiffness``
    [N m/rad] and smoothing ``stop_width`` [rad] (flapper_params.json)."""
    h = default_params(robot).hinge
    return {"stop_angle": float(h.stop_angle), "stop_stiffness": float(h.stop_stiffness),
            "stop_width": float(h.stop_width)}


def _fixed_base_run(robot, duration: float, discard: float) -> tuple[FlapperRobot, int, int]:
    """``(robot, n_steps, discard_steps)`` of a fixed-base rollout of ``duration``
    [s] whose first ``discard`` [s] are dropped (default robot: the fixed-base
    per-wing robot on the pure-JAX joint tree)."""
    robot = make_robot("fixed", "wing", backend="rigid") if robot is None else robot
    n_steps = int(round(duration / robot.dt))
    discard_steps = int(round(discard / robot.dt))
    if not 0 <= discard_steps < n_steps:
        raise ConfigError(f"discard: must be shorter than duration ({duration}), got {discard}")
    return robot, n_steps, discard_steps


class LiftRollout(eqx.Module):
    """Cycle-mean world F_z of fixed-base worlds as a differentiable function
    of per-wing physical parameters (the fixed-base rollout inside; by
    default on the pure-JAX joint tree, :mod:`flapjax.sim.tree`, which gives
    the MJX robot's cycle means to round-off at a fraction of the cost).

    Attributes:
      robot: fixed-base per-wing robot.
      params: batched FlapperParams, one world per frequency.
      n_steps, discard_steps: run length and transient (static).
    """

    robot: FlapperRobot
    params: FlapperParams
    n_steps: int = eqx.field(static=True)
    discard_steps: int = eqx.field(static=True)

    @classmethod
    def make(cls, frequencies, *, duration: float, discard: float, robot=None, params=None) -> "LiftRollout":
        robot, n_steps, discard_steps = _fixed_base_run(robot, duration, discard)
        params = sweep_params(np.asarray(frequencies, dtype=float), params=params, robot=robot)
        return cls(robot=robot, params=params, n_steps=n_steps, discard_steps=discard_steps)

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(n,) cycle-mean F_z [N] with the given physical parameters."""
        params = with_physical(self.params, values)
        out = jax.vmap(lambda p: cycle_mean(self.robot, p, self.n_steps, self.discard_steps))(params)
        return out.force[:, 2]


#: Parameters a stand rollout takes: the per-wing model's (see
#: :func:`with_physical`) and ``wing_inertia_scale``, a factor on the
#: rotational inertia of both wing bodies in the MJCF [-].
STAND_PHYSICAL_PARAMETERS = ("lift_scale", "hinge_stiffness", "wing_inertia_scale", "hinge_damping", "moment_scale")


def with_wing_inertia(robot: FlapperRobot, scale: jax.Array) -> FlapperRobot:
    """``robot`` with the wing bodies' rotational inertia multiplied by ``scale``."""
    idx = np.asarray(robot.wing_bodies)
    inertia = robot.model.body_inertia
    new = inertia.at[idx].set(inertia[idx] * jnp.asarray(scale, dtype=inertia.dtype))
    return eqx.tree_at(lambda r: r.model.body_inertia, robot, new)


def apply_physical(robot: FlapperRobot, params: FlapperParams,
                   values: Mapping[str, float]) -> tuple[FlapperRobot, FlapperParams]:
    """``(robot, params)`` with identified per-wing values applied:
    ``wing_inertia_scale`` on the robot's wing inertia, the others
    (:func:`with_physical`: lift and moment scale, hinge stiffness and
    damping) on ``params``; e.g. the ``per_wing.json`` that ``flapjax
    identify --data RECORD.csv`` writes for a phase-resolved stand record.
    Raises :class:`ConfigError` for an unknown name or a non-positive value."""
    for name, v in values.items():
        if name not in STAND_PHYSICAL_PARAMETERS:
            raise ConfigError(f"values: unknown per-wing parameter {name!r}; known: {list(STAND_PHYSICAL_PARAMETERS)}")
        if not float(v) > 0:
            raise ConfigError(f"values: {name} must be > 0, got {v!r}")
    return calibrate(robot, params, {k: float(v) for k, v in values.items()})


def calibrate(robot: FlapperRobot | None, params: FlapperParams | None, values: Mapping[str, float] | None
              ) -> tuple[FlapperRobot | None, FlapperParams | None]:
    """``(robot, params)`` of a per-wing robot with calibration ``values``
    applied (SI, already checked: ``wing_inertia_scale`` on the robot's wing
    inertia, the names of :func:`with_physical`, the stops included, on
    ``params``); both returned as given when ``values`` is empty or None
    (the nominal model, bit for bit). ``robot`` None: a sweep's default,
    the fixed-base per-wing robot on the pure-JAX joint tree; ``params``
    None: the robot's :func:`default_params`."""
    if not values:
        return robot, params
    robot = make_robot("fixed", "wing", backend="rigid") if robot is None else robot
    params = default_params(robot) if params is None else params
    if "wing_inertia_scale" in values:
        robot = with_wing_inertia(robot, values["wing_inertia_scale"])
    return robot, with_physical(params, {k: v for k, v in values.items() if k != "wing_inertia_scale"})


class StandRollout(eqx.Module):
    """Cycle-mean loads of fixed-base worlds at a stand table's conditions as
    a differentiable function of per-wing physical parameters.

    Attributes:
      robot: fixed-base per-wing robot.
      params: batched FlapperParams, one world per row (frequency, plate).
      lever: (3,) robot centre of mass minus base origin at rest [m].
      n_steps, discard_steps: run length and transient (static).
      moments: also return the body x/y moments about the centre of mass (static).
    """

    robot: FlapperRobot
    params: FlapperParams
    lever: jax.Array
    n_steps: int = eqx.field(static=True)
    discard_steps: int = eqx.field(static=True)
    moments: bool = eqx.field(static=True, default=False)

    @classmethod
    def make(cls, frequencies, plates, *, duration: float, discard: float, moments: bool = False,
             robot=None) -> "StandRollout":
        robot, n_steps, discard_steps = _fixed_base_run(robot, duration, discard)
        params = sweep_params(np.asarray(frequencies, dtype=float), plate=np.asarray(plates, dtype=float),
                                 robot=robot)
        return cls(robot=robot, params=params, lever=jnp.asarray(robot_com_offset()), n_steps=n_steps,
                   discard_steps=discard_steps, moments=bool(moments))

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(n, 1) cycle-mean F_z [N], or (n, 3) F_z, M_x, M_y [N, N m, N m]."""
        robot, params = calibrate(self.robot, self.params, values)
        out = jax.vmap(lambda p: cycle_mean(robot, p, self.n_steps, self.discard_steps))(params)
        fz = out.force[:, 2:3]
        if not self.moments:
            return fz
        moment = out.moment - jnp.cross(self.lever, out.force)  # fixed base: body = world frame
        return jnp.concatenate([fz, moment[:, :2]], axis=1)


@tree.filter_jit
def run_lift(rollout: LiftRollout, values: Mapping[str, jax.Array]) -> jax.Array:
    """(n,) cycle-mean F_z [N] of ``rollout`` at ``values`` (name -> array),
    jitted with the simulator's compiler options; pass strongly typed,
    committed arrays (a Python float is baked into the program)."""
    return rollout(values)


@tree.filter_jit
def run_stand(rollout: StandRollout, values: Mapping[str, jax.Array]) -> jax.Array:
    """(n, C) cycle-mean loads of ``rollout`` at ``values`` (jitted as :func:`run_lift`)."""
    return rollout(values)
