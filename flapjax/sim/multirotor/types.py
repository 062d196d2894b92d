"""The pytrees of a multirotor world: per-world parameters, state, the
prepared per-world model and the per-step diagnostics; and
:class:`WorldStructure`, what the physics backends read of the world."""

from __future__ import annotations

from typing import Any, Protocol

import equinox as eqx
from jaxtyping import Array, Bool, Float, Int, UInt32

from flapjax import rotor
from flapjax import scene as sc
from flapjax.control.wrench import ControllerState, WrenchGains
from flapjax.noise import NoiseParams


class WorldParams(eqx.Module):
    """Everything that may differ between worlds (batch it with a leading axis).

    Attributes:
      scene: ground, wall and box parameters.
      profile: the airframe as it is (what the chain and the physics use);
        mass and inertia are also written to the MJX body, while the
        collision geoms keep the nominal layout the world was built from.
      chain: chain coefficients (proximity, drag, wind, allocation weights).
      noise: sensor and command noise.
      gains: controller gains.
      controller_profile: the airframe the flight software assumes: the
        controller's mass and inertia feed-forward and the allocation
        (mixer) inverse. The world's nominal profile by default, so a
        randomized ``profile`` is not known to the controller; set it to
        ``profile`` for a controller with privileged knowledge.
    """

    scene: sc.Scene
    profile: rotor.RotorProfile
    chain: rotor.ChainParams
    noise: NoiseParams
    gains: WrenchGains
    controller_profile: rotor.RotorProfile


class WorldState(eqx.Module):
    """State of one world.

    Attributes:
      data: the backend's state: ``mjx.Data`` (robot and box) or a
        :class:`flapjax.sim.rigid.RigidState`.
      actuator: rotor speeds.
      disturbance: turbulence force.
      controller: integrator.
      noise_key: (2,) uint32 words of the noise stream (:mod:`flapjax.rng`;
        step k draws counter k).
      turbulence_key: (2,) uint32 words of the turbulence stream.
      draws: (m,) this step's standard normal draws (noise and
        turbulence streams), made one step ahead.
      step: () step counter (time = step * dt, exact in float32).
      diverged: () set once the world left the valid region.
    """

    data: Any
    actuator: rotor.ActuatorState
    disturbance: rotor.DisturbanceState
    controller: ControllerState
    noise_key: UInt32[Array, "2"]
    turbulence_key: UInt32[Array, "2"]
    draws: Float[Array, " m"]
    step: Int[Array, ""]
    diverged: Bool[Array, ""]


class StepInfo(eqx.Module):
    """Per-step diagnostics (a trajectory stacks them on a time axis).

    Attributes:
      position: (3,) CoM, world [m]; quat: (4,) attitude [w, x, y, z];
      velocity: (3,) CoM velocity, world [m/s]; rate: (3,) body rates [rad/s];
      ee_position: (3,) end-effector centre, world [m];
      wrench_command: (6,) controller's body wrench [N, N m];
      thrust_command, thrust_realized: (n,) [N]; saturated: (n,) bool;
      control_margin: () [-]; ground_factor, wall_factor: (n,) [-];
      ground_distance, wall_distance: (n,) [m];
      wrench: (6,) realized body wrench [N, N m];
      unreachable: (6,) part of the request the layout cannot make;
      constraint_force: (3,) total contact force on the robot, world [N];
      sensor_position_noise: (3,) this step's position noise draw [m];
      diverged: () bool: the world was unhealthy after this step (frozen
        or reset);
      health: () int32 health code of this step, 0 when healthy (the bits
        of :func:`flapjax.sim.multirotor.step.health`: non-finite state,
        outside the box, non-finite command/thrust/margin, speed or body
        rate beyond the profile's bounds, non-finite scene);
      touching: () the robot is in contact after this step (MJX: a contact
        force acts on the robot; rigid backend: a collision shape reached the
        ground or the wall; mask or reset such worlds).
    """

    position: Float[Array, "3"]
    quat: Float[Array, "4"]
    velocity: Float[Array, "3"]
    rate: Float[Array, "3"]
    ee_position: Float[Array, "3"]
    wrench_command: Float[Array, "6"]
    thrust_command: Float[Array, " n"]
    thrust_realized: Float[Array, " n"]
    saturated: Bool[Array, " n"]
    control_margin: Float[Array, ""]
    ground_factor: Float[Array, " n"]
    wall_factor: Float[Array, " n"]
    ground_distance: Float[Array, " n"]
    wall_distance: Float[Array, " n"]
    wrench: Float[Array, "6"]
    unreachable: Float[Array, "6"]
    constraint_force: Float[Array, "3"]
    sensor_position_noise: Float[Array, "3"]
    diverged: Bool[Array, ""]
    health: Int[Array, ""]
    touching: Bool[Array, ""]


class Prepared(eqx.Module):
    """One world's parameters with what its steps derive from them, built once
    by :meth:`MultirotorWorld.prepare` (outside ``lax.scan``: under a
    checkpointed scan the reverse pass would otherwise rebuild them every step).

    Attributes:
      params: the world's :class:`WorldParams`.
      model: the backend's model of this world: the ``mjx.Model`` with this
        world's scene and mass properties (MJX), or the
        :func:`flapjax.sim.rigid.prepare`-d body (rigid).
      allocation_inverse: (n, 6) :func:`flapjax.rotor.allocation_inverse` of
        the profile and allocation weights.
    """

    params: WorldParams
    model: Any
    allocation_inverse: Float[Array, "n 6"]


class WorldStructure(Protocol):
    """What :mod:`flapjax.sim.multirotor.backends` reads of a
    :class:`~flapjax.sim.multirotor.world.MultirotorWorld` (structure shared
    by all worlds, not batched), so that the backends need not import it.

    Attributes:
      model: the nominal ``mjx.Model``.
      data0: MJX data of the robot at rest.
      mj_model: the ``mujoco.MjModel`` compiled from the world's MJCF.
      ids: :class:`~flapjax.sim.multirotor.model.Ids`, indices in the model.
      dt: () step [s].
      with_box: whether the scene has the pushable box.
      dtype: float dtype the state is cast to, or None to keep the profile's.
      iterations: MJX solver iterations.
      unrolled_solver: step with exactly ``iterations`` unrolled solver
        iterations (reverse-mode differentiable through contacts).
    """

    model: Any
    data0: Any
    mj_model: Any
    ids: Any
    dt: float
    with_box: bool
    dtype: Any
    iterations: int
    unrolled_solver: bool
