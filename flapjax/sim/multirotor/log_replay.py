"""A logged multirotor flight replayed through the rotor chain.

For every logged instant ``k`` the chain of :mod:`flapjax.rotor.chain` runs
on the logged thrust commands ``c_k``: saturation, the actuator lag replayed
over the log from the steady state of the first command (so the rotor speed
``u_k`` is the one the logged command history produced), ground and
near-wall factors and the lateral wall force from the per-rotor distances of
the logged pose in the logged scene (:func:`flapjax.rotor.rotor_proximity`),
the realized rotor wrench and the body drag on the logged velocity (no wind:
an indoor flight). :func:`hover_inputs` gathers what the chain needs per
instant, :func:`specific_force` returns ``F_B,k / m``, what an ideal
accelerometer reads. The hover fit
(:mod:`flapjax.identify.multirotor.model`) differentiates straight through it.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax import rotor
from flapjax.data.hover_log import HoverLog
from flapjax.math import quat_to_mat
from flapjax.sim.multirotor.hover_flight import HOVER_OPTIONS
from flapjax.validation import ConfigError

__all__ = ["HoverInputs", "hover_inputs", "replay_actuator", "specific_force"]


class HoverInputs(eqx.Module):
    """What the model needs per logged instant (leading axis N).

    Attributes:
      thrust_command: (N, n) logged thrust commands [N].
      speed: (N, n) replayed normalized rotor speed before each instant [-].
      proximity: per-rotor distances and wall normals (body frame).
      rotation: (N, 3, 3) body-to-world rotation [-].
      velocity_body: (N, 3) body-frame velocity [m/s].
      dt: (N,) step to the next instant [s].
    """

    thrust_command: Float[Array, "N n"]
    speed: Float[Array, "N n"]
    proximity: rotor.ProximityInput
    rotation: Float[Array, "N 3 3"]
    velocity_body: Float[Array, "N 3"]
    dt: Float[Array, " N"]

    def rows(self, index) -> "HoverInputs":
        """The rows ``index`` (a slice or an index array)."""
        return jax.tree.map(lambda x: x[index], self)


def replay_actuator(prof: rotor.RotorProfile, commands, dt) -> Float[Array, "N n"]:
    """(N, n) rotor speeds before each instant: the actuator of the chain
    driven by the clamped logged ``commands`` (N, n) [N] with steps ``dt``
    (N,) [s], from the steady state of the first command."""
    clamped = jnp.clip(commands, prof.thrust_min, prof.thrust_max)
    start = rotor.ActuatorState.at_thrust(prof, clamped[0])

    def body(state, x):
        c, h = x
        nxt, _ = rotor.actuator_step(prof, state, c, dt=h)
        return nxt, state.speed

    _, speeds = jax.lax.scan(body, start, (clamped, dt))
    return speeds


@jax.jit
def _inputs(prof, scene, dt, quat, position, velocity, cmd):
    rot = jax.vmap(quat_to_mat)(quat)
    prox = jax.vmap(lambda x, r: rotor.rotor_proximity(scene, prof, x, r))(position, rot)
    v_body = jnp.einsum("kji,kj->ki", rot, velocity)
    return HoverInputs(thrust_command=cmd, speed=replay_actuator(prof, cmd, dt), proximity=prox, rotation=rot,
                       velocity_body=v_body, dt=dt)


def hover_inputs(prof: rotor.RotorProfile, log: HoverLog, *, length: int | None = None) -> HoverInputs:
    """The model inputs of a whole log (float64 under x64).

    With ``length`` (at least the log's row count) the inputs have that many
    rows: the log is extended by holding its last row, time advancing one
    sample period per row. The replay is causal, so the log's own rows are
    unchanged; logs padded to one length share one compiled fit."""
    n = log.n_samples
    m = n if length is None else int(length)
    if m < n:
        raise ConfigError(f"length: must be at least the log's {n} rows, got {length!r}")

    def f(x):
        x = np.asarray(x)
        return jnp.asarray(np.concatenate([x, np.repeat(x[-1:], m - n, axis=0)]) if m > n else x)

    dt = np.concatenate([np.diff(log.time), np.full(m - n + 1, log.dt)])  # the last row's step: the median
    return _inputs(prof, log.scene_model(), jnp.asarray(dt), f(log.quat), f(log.position), f(log.velocity),
                   f(log.thrust_command))


def specific_force(prof: rotor.RotorProfile, chain: rotor.ChainParams, inputs: HoverInputs) -> Float[Array, "N 3"]:
    """(N, 3) specific force of the chain's realized body force, ``F_B / m``
    [m/s^2, body frame], at every logged instant (switches
    :data:`~flapjax.sim.multirotor.hover_flight.HOVER_OPTIONS`)."""

    def one(cmd, speed, prox, rot, v_body, dt):
        inp = rotor.ChainInput(actuator=rotor.ActuatorState(speed=speed), proximity=prox,
                               motion=rotor.BodyMotion(rotation=rot, velocity_body=v_body, time=jnp.zeros_like(dt)))
        out = rotor.realize_thrusts(prof, cmd, inp, HOVER_OPTIONS, dt=dt, params=chain)
        return out.wrench[:3]

    force = jax.vmap(one)(inputs.thrust_command, inputs.speed, inputs.proximity, inputs.rotation,
                          inputs.velocity_body, inputs.dt)
    return force / prof.mass
