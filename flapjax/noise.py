"""Sensor and command noise, kept apart from task randomization.

Noise perturbs what the controller sees (sensor noise, :func:`sense`) and
what the rotors are told (command noise, :func:`command_noise`); task
randomization changes the scene and the physical parameters. The two never
share a PRNG stream: :func:`split_streams` derives independent keys for
randomization, noise and turbulence from one seed by ``fold_in`` with fixed
stream ids, so changing one stream's key leaves every draw of the others
unchanged. The per-step draws themselves come from the counter-based streams
of :mod:`flapjax.rng`; the functions here only scale standard normal draws.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from flapjax.math import quat_integrate, quat_to_mat
from flapjax.validation import as_float_array, check_range, is_traced

STREAM_RANDOMIZATION = 0
STREAM_NOISE = 1
STREAM_TURBULENCE = 2


class Streams(eqx.Module):
    """Independent PRNG keys of one world.

    Attributes:
      randomization: key for task/scene randomization.
      noise: key for sensor and command noise.
      turbulence: key for the OU wind turbulence.
    """

    randomization: PRNGKeyArray
    noise: PRNGKeyArray
    turbulence: PRNGKeyArray


def split_streams(key: PRNGKeyArray) -> Streams:
    """Derive the three independent streams of a world from one key."""
    return Streams(
        randomization=jax.random.fold_in(key, STREAM_RANDOMIZATION),
        noise=jax.random.fold_in(key, STREAM_NOISE),
        turbulence=jax.random.fold_in(key, STREAM_TURBULENCE),
    )


class SensorNoise(eqx.Module):
    """White Gaussian noise on the state estimate, per axis.

    Attributes:
      position_std: (3,) world position noise [m].
      velocity_std: (3,) world velocity noise [m/s].
      attitude_std: (3,) small-angle attitude noise about body axes [rad].
      rate_std: (3,) body angular-rate noise [rad/s].
    """

    position_std: Float[Array, "3"]
    velocity_std: Float[Array, "3"]
    attitude_std: Float[Array, "3"]
    rate_std: Float[Array, "3"]

    def __init__(self, position_std=(0.0, 0.0, 0.0), velocity_std=(0.0, 0.0, 0.0), attitude_std=(0.0, 0.0, 0.0),
                 rate_std=(0.0, 0.0, 0.0)):
        vals = dict(position_std=position_std, velocity_std=velocity_std, attitude_std=attitude_std, rate_std=rate_std)
        for name, v in vals.items():
            if not is_traced(v):
                as_float_array(name, v, (3,))
                check_range(name, v, 0.0, None)
            setattr(self, name, jnp.asarray(v, dtype=float))


class CommandNoise(eqx.Module):
    """White Gaussian noise added to the rotor thrust commands before the clamp.

    Attributes:
      thrust_std: () per-rotor thrust command noise [N].
    """

    thrust_std: Float[Array, ""]

    def __init__(self, thrust_std=0.0):
        if not is_traced(thrust_std):
            as_float_array("thrust_std", thrust_std, ())
            check_range("thrust_std", thrust_std, 0.0, None)
        self.thrust_std = jnp.asarray(thrust_std, dtype=float)


class NoiseParams(eqx.Module):
    """Sensor and command noise of one world.

    Attributes:
      sensor: :class:`SensorNoise`.
      command: :class:`CommandNoise`.
    """

    sensor: SensorNoise = eqx.field(default_factory=SensorNoise)
    command: CommandNoise = eqx.field(default_factory=CommandNoise)


class SensorSample(eqx.Module):
    """One draw of sensor noise.

    Attributes:
      position: (3,) [m]; velocity: (3,) [m/s]; attitude: (3,) rotation vector
      applied on the body side [rad]; rate: (3,) [rad/s].
    """

    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    attitude: Float[Array, "3"]
    rate: Float[Array, "3"]


class StateEstimate(eqx.Module):
    """What the controller knows about the body (what the sensors report).

    Attributes:
      position: (3,) CoM, world [m]; velocity: (3,) CoM velocity, world [m/s];
      rotation: (3, 3) body-to-world [-]; rate: (3,) angular velocity, body [rad/s].
    """

    position: Float[Array, "3"]
    velocity: Float[Array, "3"]
    rotation: Float[Array, "3 3"]
    rate: Float[Array, "3"]


def sensor_noise(params: SensorNoise, z: Float[Array, "4 3"]) -> SensorSample:
    """Sensor noise from (4, 3) standard normal draws ``z`` (rows: position,
    velocity, attitude, rate)."""
    return SensorSample(
        position=params.position_std * z[0],
        velocity=params.velocity_std * z[1],
        attitude=params.attitude_std * z[2],
        rate=params.rate_std * z[3],
    )


def command_noise(params: CommandNoise, z: Float[Array, " n"]) -> Float[Array, " n"]:
    """(n,) additive thrust command noise [N] from (n,) standard normal draws ``z``."""
    return params.thrust_std * z



def sense(params: SensorNoise, z: Float[Array, "4 3"], position: Float[Array, "3"], quat: Float[Array, "4"],
          velocity: Float[Array, "3"], rate: Float[Array, "3"]) -> StateEstimate:
    """The state as the sensors report it: the true CoM ``position`` (3,) [m],
    attitude ``quat`` (4,) ``[w, x, y, z]``, world ``velocity`` (3,) [m/s]
    and body ``rate`` (3,) [rad/s] plus the sensor noise of the (4, 3)
    standard normal draws ``z`` (:func:`sensor_noise`); the attitude noise is
    a rotation vector applied on the body side."""
    ns = sensor_noise(params, z)
    return StateEstimate(
        position=position + ns.position, velocity=velocity + ns.velocity,
        rotation=quat_to_mat(quat_integrate(quat, ns.attitude, 1.0)), rate=rate + ns.rate,
    )
