"""Cycle-averaged hover model (seed section 10).

Over one flapping cycle the per-wing loads average to a thrust along the
plate normal, a horizontal damping force and identified control moments:

    L = k_f f^2
    n_B = [-delta_r, -delta_p, 1] / sqrt(1 + delta_r^2 + delta_p^2)
    F_W = R_WB L n_B - k_v [v_x, v_y, 0]_W
    tau_B = (f / f_ref)^2 [k_roll delta_p, -k_pitch delta_r, 0] - D_w omega_B

with ``delta_p`` the pitch_joint and ``delta_r`` the roll_joint angle. The
naming is crossed, as in the seed: pitch_joint makes the *roll* moment and
roll_joint the *pitch* moment. The kernel is pure (parameters and state in,
one body wrench out) so any rigid-body backend can use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.validation import ConfigError, as_float_array, check_positive

Scalar = Float[Array, ""]

_FIELDS = (
    "lift_coefficient",
    "horizontal_damping",
    "roll_gain",
    "pitch_gain",
    "rate_damping",
    "reference_frequency",
    "mass",
    "gravity",
)


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class CycleAveragedParams(eqx.Module):
    """Identified cycle-averaged hover parameters (seed section 10).

    Attributes:
      lift_coefficient: () k_f in L = k_f f^2 [N/Hz^2].
      horizontal_damping: () k_v, world-frame horizontal drag [N s/m].
      roll_gain: () k_roll, roll moment per rad of pitch_joint [N m/rad].
      pitch_gain: () k_pitch, pitch moment per rad of roll_joint [N m/rad].
      rate_damping: (3,) D_w diagonal, body-rate damping [N m s/rad].
      reference_frequency: () f_ref of lambda_f = (f / f_ref)^2 [Hz].
      mass: () m, the rigid body the model flies [kg].
      gravity: () g [m/s^2].
    """

    lift_coefficient: Scalar = eqx.field(converter=_as_array, default=0.14858349039827917 / 30.0**2)
    horizontal_damping: Scalar = eqx.field(converter=_as_array, default=0.06)
    roll_gain: Scalar = eqx.field(converter=_as_array, default=0.01055 / 20.0)
    pitch_gain: Scalar = eqx.field(converter=_as_array, default=0.01144 / 20.0)
    rate_damping: Float[Array, "3"] = eqx.field(converter=_as_array, default=(2e-4, 2e-4, 1e-4))
    reference_frequency: Scalar = eqx.field(converter=_as_array, default=42.0)
    mass: Scalar = eqx.field(converter=_as_array, default=0.03)
    gravity: Scalar = eqx.field(converter=_as_array, default=9.81)

    def __check_init__(self):
        check_positive("CycleAveragedParams.lift_coefficient", self.lift_coefficient)
        check_positive("CycleAveragedParams.horizontal_damping", self.horizontal_damping, allow_zero=True)
        check_positive("CycleAveragedParams.rate_damping", self.rate_damping, allow_zero=True)
        if jnp.shape(self.rate_damping)[-1:] != (3,):
            raise ConfigError(
                f"CycleAveragedParams.rate_damping: expected shape (3,), got shape {jnp.shape(self.rate_damping)}"
            )
        check_positive("CycleAveragedParams.reference_frequency", self.reference_frequency)
        check_positive("CycleAveragedParams.mass", self.mass)
        check_positive("CycleAveragedParams.gravity", self.gravity, allow_zero=True)

    @classmethod
    def flapsim(cls) -> "CycleAveragedParams":
        """The seed's identified values (k_f from the 30 Hz fixed-base point)."""
        return cls()

    @property
    def hover_frequency(self) -> Scalar:
        """f_h = sqrt(m g / k_f) [Hz] (42.2213 Hz for the seed's values)."""
        return jnp.sqrt(self.mass * self.gravity / self.lift_coefficient)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "CycleAveragedParams":
        """Build from a mapping of field name -> number (unknown keys rejected)."""
        unknown = sorted(set(values) - set(_FIELDS) - {"comment", "units"})
        if unknown:
            raise ConfigError(f"CycleAveragedParams: unknown field(s) {unknown}; allowed: {list(_FIELDS)}")
        kwargs = {}
        for name in _FIELDS:
            if name in values:
                shape = (3,) if name == "rate_damping" else ()
                kwargs[name] = as_float_array(f"CycleAveragedParams.{name}", values[name], shape)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, path: str | Path) -> "CycleAveragedParams":
        """Load from a JSON object of field name -> number (see :meth:`from_dict`)."""
        path = Path(path)
        try:
            values = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path.name}: cannot read cycle-averaged parameters ({exc})") from exc
        if not isinstance(values, dict):
            raise ConfigError(f"{path.name}: expected a JSON object of field -> number, got {type(values).__name__}")
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        """Plain floats / lists, the inverse of :meth:`from_dict`."""
        out = {}
        for name in _FIELDS:
            v = jnp.asarray(getattr(self, name))
            out[name] = v.tolist()
        return out


class CycleAveragedLoads(eqx.Module):
    """Cycle-mean wrench of the whole robot.

    Attributes:
      wrench: (6,) ``[F_world; tau_world]`` about the robot's centre of mass,
        MuJoCo order [N, N m].
      force_world: (3,) thrust plus horizontal damping, world frame [N].
      torque_body: (3,) control moment minus rate damping, body frame [N m].
      torque_world: (3,) the same in the world frame [N m].
      thrust: () L = k_f f^2 [N].
      thrust_direction_body: (3,) unit n_B [-].
      moment_scale: () lambda_f = (f / f_ref)^2 [-].
    """

    wrench: Float[Array, "6"]
    force_world: Float[Array, "3"]
    torque_body: Float[Array, "3"]
    torque_world: Float[Array, "3"]
    thrust: Scalar
    thrust_direction_body: Float[Array, "3"]
    moment_scale: Scalar


def cycle_averaged_wrench(
    params: CycleAveragedParams,
    *,
    frequency: Scalar,
    plate: Float[Array, "2"],
    rot_world_body: Float[Array, "3 3"],
    v_world: Float[Array, "3"],
    w_body: Float[Array, "3"],
) -> CycleAveragedLoads:
    """Cycle-averaged wrench (seed section 10); no batch axis.

    Args:
      params: identified model parameters.
      frequency: () flapping frequency f [Hz].
      plate: (2,) plate angles ``(delta_p, delta_r)`` = (pitch_joint,
        roll_joint) [rad].
      rot_world_body: (3, 3) R_WB, body to world.
      v_world: (3,) centre-of-mass velocity, world frame [m/s].
      w_body: (3,) body angular velocity, body frame [rad/s].
    """
    delta_p, delta_r = plate[0], plate[1]
    thrust = params.lift_coefficient * frequency**2
    n_raw = jnp.stack([-delta_r, -delta_p, jnp.ones_like(delta_p)])
    n_body = n_raw / jnp.sqrt(1.0 + delta_r**2 + delta_p**2)
    drag = -params.horizontal_damping * jnp.stack([v_world[0], v_world[1], jnp.zeros_like(v_world[2])])
    force_world = rot_world_body @ (thrust * n_body) + drag
    lam = (frequency / params.reference_frequency) ** 2
    control = jnp.stack([params.roll_gain * delta_p, -params.pitch_gain * delta_r, jnp.zeros_like(delta_p)])
    torque_body = lam * control - params.rate_damping * w_body
    torque_world = rot_world_body @ torque_body
    return CycleAveragedLoads(
        wrench=jnp.concatenate([force_world, torque_world]),
        force_world=force_world,
        torque_body=torque_body,
        torque_world=torque_world,
        thrust=thrust,
        thrust_direction_body=n_body,
        moment_scale=lam,
    )
