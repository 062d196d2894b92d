"""The stages of one multirotor step (docs/physics.md, Multirotor step),
each a small pure function.

:meth:`flapjax.sim.multirotor.MultirotorWorld.step` runs them top to bottom:

1. :func:`read_state`: position, attitude and velocities from
   ``qpos``/``qvel`` (fresh: after ``mjx.step`` the kinematic fields describe
   the previous configuration: docs/mjx_notes.md, One-step lag);
2. :func:`split_draws` and :func:`estimate`: the state the controller sees,
   with sensor noise from the noise stream (:func:`flapjax.noise.sense`);
3. :func:`flapjax.control.wrench.wrench_command` -> desired body wrench, or
   a given wrench;
4. :func:`proximity`: per-rotor ground/wall(/box) distances from
   :mod:`flapjax.scene`, computed analytically from the same scene
   parameters that place the MJX geoms;
5. :func:`chain_input` and :func:`realize`: :func:`flapjax.rotor.realize_wrench`
   (allocation ... drag and wind) with command noise and turbulence from
   their streams;
6. :func:`to_world`: the realized body wrench in the world frame, about the
   CoM, for the backend's advance (:mod:`flapjax.sim.backend`);
7. :func:`health`, then the divergence guard
   (:func:`flapjax.sim.backend.keep_good`): a world is unhealthy when its
   new state is non-finite or leaves the :data:`BOUND` box, its speed or body
   rate exceeds the profile's bounds
   (:func:`flapjax.rotor.feasibility.health_bounds`), its commands, thrusts
   or control margin are non-finite, or its scene holds non-finite values;
   both backends run this same check.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int

from flapjax import noise, rotor
from flapjax import scene as sc
from flapjax.math import quat_to_mat
from flapjax.noise import StateEstimate
from flapjax.rotor.unrolled import matvec, rmatvec
from flapjax.sim.multirotor.types import Prepared, WorldParams

#: A world whose CoM leaves this box [m] (any axis) has diverged.
BOUND = 100.0
#: Bits of :func:`health` (``StepInfo.health``; 0 is healthy).
NON_FINITE_STATE, OUT_OF_BOX, NON_FINITE_COMMAND, TOO_FAST, SPINNING, NON_FINITE_SCENE = 1, 2, 4, 8, 16, 32
HEALTH_BITS = {NON_FINITE_STATE: "non-finite state", OUT_OF_BOX: f"outside the {BOUND:g} m box",
               NON_FINITE_COMMAND: "non-finite command, thrust or control margin",
               TOO_FAST: "speed beyond the profile's bound", SPINNING: "body rate beyond the profile's bound",
               NON_FINITE_SCENE: "non-finite scene parameter"}
#: Noise-stream lanes of the sensor noise (position, velocity, attitude, rate).
SENSOR_LANES = 12


class BodyState(eqx.Module):
    """The robot's state read from ``qpos``/``qvel``, in the profile's dtype.

    Attributes:
      qpos: (nq,) positions (robot first, then the box, if any).
      position: (3,) CoM, world [m]; quat: (4,) attitude [w, x, y, z];
      rotation: (3, 3) body-to-world; velocity: (3,) CoM velocity, world
      [m/s]; rate: (3,) body rates [rad/s].
    """

    qpos: Float[Array, " nq"]
    position: Float[Array, "3"]
    quat: Float[Array, "4"]
    rotation: Float[Array, "3 3"]
    velocity: Float[Array, "3"]
    rate: Float[Array, "3"]


def read_state(data, dtype) -> BodyState:
    """:class:`BodyState` of the backend's ``data`` (its ``qpos``/``qvel``)."""
    qpos, qvel = data.qpos.astype(dtype), data.qvel.astype(dtype)
    quat = qpos[3:7]
    return BodyState(qpos=qpos, position=qpos[0:3], quat=quat, rotation=quat_to_mat(quat), velocity=qvel[0:3],
                     rate=qvel[3:6])


def split_draws(draws: Float[Array, " m"], n_noise: int, n_command: int, *, sensor_noise: bool):
    """This step's draws by user: sensor (4, 3) (None when the world draws
    no sensor noise), command (n,) (None without command noise) and
    turbulence (3,); ``n_noise`` noise-stream lanes come first."""
    z, xi = draws[:n_noise], draws[n_noise:n_noise + 3]
    sensor = z[:SENSOR_LANES].reshape(4, 3) if sensor_noise else None
    command = z[SENSOR_LANES:SENSOR_LANES + n_command] if n_command else None
    return sensor, command, xi


def estimate(sensor: noise.SensorNoise, z: Float[Array, "4 3"] | None, body: BodyState
             ) -> tuple[StateEstimate, Float[Array, "3"]]:
    """The state the controller sees and this step's position noise draw
    [m]: the exact state when ``z`` is None (no sensor-noise draws)."""
    if z is None:
        exact = StateEstimate(position=body.position, velocity=body.velocity, rotation=body.rotation, rate=body.rate)
        return exact, jnp.zeros(3, body.position.dtype)
    est = noise.sense(sensor, z, body.position, body.quat, body.velocity, body.rate)
    return est, sensor.position_std * z[0]


def proximity(scene: sc.Scene, prof: rotor.RotorProfile, body: BodyState, *, with_box: bool) -> rotor.ProximityInput:
    """Per-rotor distances to the ground, the wall and (worlds with a box) the box."""
    box = None
    if with_box:
        box = sc.BoxPose(position=body.qpos[7:10], rotation=quat_to_mat(body.qpos[10:14]))
    return rotor.rotor_proximity(scene, prof, body.position, body.rotation, box)


def chain_input(params: WorldParams, actuator: rotor.ActuatorState, disturbance: rotor.DisturbanceState,
                prox: rotor.ProximityInput, body: BodyState, time: Float[Array, ""], draws: tuple) -> rotor.ChainInput:
    """The chain's input of this step: rotor and turbulence states, distances,
    the body's motion at ``time`` [s], and the command noise [N] and
    turbulence draws of :func:`split_draws`."""
    _, z_command, xi = draws
    motion = rotor.BodyMotion(rotation=body.rotation, velocity_body=rmatvec(body.rotation, body.velocity), time=time)
    command = None if z_command is None else noise.command_noise(params.noise.command, z_command)
    return rotor.ChainInput(actuator=actuator, proximity=prox, motion=motion, disturbance=disturbance,
                            turbulence_normal=xi, command_noise=command)


def realize(prepared: Prepared, wrench_cmd: Float[Array, "6"], inputs: rotor.ChainInput,
            options: rotor.ChainOptions, dt: float) -> rotor.ChainOutput:
    """The rotor chain of this step for the desired body wrench ``wrench_cmd``."""
    params = prepared.params
    return rotor.realize_wrench(params.profile, wrench_cmd, inputs, options, dt=dt, params=params.chain,
                                allocation_inverse=prepared.allocation_inverse)


def to_world(rotation: Float[Array, "3 3"], wrench_body: Float[Array, "6"]) -> Float[Array, "6"]:
    """(6,) body wrench ``[F; tau]`` about the CoM rotated to the world frame."""
    return jnp.concatenate([matvec(rotation, wrench_body[:3]), matvec(rotation, wrench_body[3:])])


def in_bounds(qpos: Float[Array, " nq"]) -> Bool[Array, ""]:
    """() True while the robot's origin stays inside the :data:`BOUND` box."""
    return jnp.all(jnp.abs(qpos[0:3]) < BOUND)


def _all_finite(*trees) -> Bool[Array, ""]:
    leaves = [x for t in trees for x in jax.tree.leaves(t) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)]
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))


def health(qpos: Float[Array, " nq"], qvel: Float[Array, " nv"], wrench_cmd: Float[Array, "6"],
           out: rotor.ChainOutput, scene: sc.Scene, *, speed_bound: float, rate_bound: float) -> Int[Array, ""]:
    """() health code of one world after a step: 0 when healthy, else the
    OR of the :data:`HEALTH_BITS` that apply (``qpos``/``qvel`` the new
    state, ``wrench_cmd`` and ``out`` this step's command and chain output;
    ``speed_bound`` [m/s] and ``rate_bound`` [rad/s] from the profile)."""
    finite_state = jnp.all(jnp.isfinite(qpos)) & jnp.all(jnp.isfinite(qvel))
    v, w = qvel[0:3], qvel[3:6]
    bits = [
        (~finite_state, NON_FINITE_STATE),
        (~in_bounds(qpos), OUT_OF_BOX),
        (~_all_finite(wrench_cmd, out.thrust_command, out.thrust_realized, out.control_margin, out.wrench),
         NON_FINITE_COMMAND),
        (jnp.sum(v * v) > speed_bound**2, TOO_FAST),
        (jnp.sum(w * w) > rate_bound**2, SPINNING),
        (~_all_finite(scene), NON_FINITE_SCENE),
    ]
    code = jnp.zeros((), jnp.int32)
    for flag, bit in bits:
        code = code | jnp.where(flag, bit, 0).astype(jnp.int32)
    return code


def describe_health(code: int) -> str:
    """The reasons a :func:`health` code stands for, in words."""
    code = int(code)
    return "healthy" if code == 0 else ", ".join(text for bit, text in HEALTH_BITS.items() if code & bit)
