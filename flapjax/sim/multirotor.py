"""MJX multirotor worlds: controller -> chain -> ``xfrc_applied`` -> ``mjx.step``.

One :class:`MultirotorWorld` holds the static part (the MJX model built from
a profile, the chain options, the step length); :class:`WorldParams` holds
everything that may differ per world (scene, profile values, chain
coefficients, noise, gains) as a pytree, so a leading world axis batches it.
Per step and world:

1. state from ``qpos``/``qvel`` (fresh: after ``mjx.step`` the kinematic
   fields describe the previous configuration, MJX_NOTES.md), plus sensor
   noise from the noise stream;
2. :func:`flapjax.control.wrench.wrench_command` -> desired body wrench;
3. per-rotor ground/wall distances from :mod:`flapjax.sim.scene`, computed
   analytically from the same scene parameters that place the MJX geoms;
4. :func:`flapjax.rotor.realize_wrench` (allocation ... drag and wind), with
   command noise from the noise stream and turbulence from its own stream;
5. the realized body wrench rotated to the world frame into
   ``xfrc_applied`` of the base (which acts at its CoM, the body origin);
6. ``mjx.step`` with the per-world model (wall pose, frictions, mass).

A world whose state turns non-finite or leaves a 100 m box is frozen at its
last good state and flagged ``diverged``, so it cannot poison the batch.
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, UInt32
from mujoco import mjx

from flapjax import rng, rotor
from flapjax.control.wrench import ControllerState, Reference, StateEstimate, WrenchGains, wrench_command
from flapjax.math import quat_integrate, quat_to_mat
from flapjax.rotor.noise import NoiseParams, sensor_noise, split_streams
from flapjax.sim import multirotor_model as mm
from flapjax.sim import rigid
from flapjax.sim import scene as sc
from flapjax.validation import ConfigError, _is_traced, check_choice, check_positive

BACKENDS = ("mjx", "rigid")

_BOUND = 100.0


class WorldParams(eqx.Module):
    """Everything that may differ between worlds (batch it with a leading axis).

    Attributes:
      scene: ground, wall and box parameters.
      profile: airframe values used by the chain and the controller; mass
        and inertia are also written to the MJX body, while the collision
        geoms keep the nominal layout the world was built from.
      chain: chain coefficients (proximity, drag, wind, command noise).
      noise: sensor and command noise.
      gains: controller gains.
    """

    scene: sc.Scene
    profile: rotor.RotorProfile
    chain: rotor.ChainParams
    noise: NoiseParams
    gains: WrenchGains


class WorldState(eqx.Module):
    """State of one world.

    Attributes:
      data: MJX data (robot and box).
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
      diverged: () bool;
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
    touching: Bool[Array, ""]


def _yaw_quat(yaw):
    return jnp.stack([jnp.cos(0.5 * yaw), jnp.zeros_like(yaw), jnp.zeros_like(yaw), jnp.sin(0.5 * yaw)])


def _plane_quat(normal):
    """Quaternion rotating +z onto a unit ``normal`` lying in the x-z plane."""
    theta = jnp.arctan2(normal[0], normal[2])  # rotation about +y
    return jnp.stack([jnp.cos(0.5 * theta), jnp.zeros_like(theta), jnp.sin(0.5 * theta), jnp.zeros_like(theta)])


class MultirotorWorld:
    """A multirotor in a ground/wall(/box) scene, simulated by MJX or by the
    pure-JAX rigid-body backend.

    Both backends share everything but the integrator: the same controller,
    chain, scene distances, noise and turbulence streams produce the same body
    wrench, which MJX applies through ``xfrc_applied`` and ``mjx.step`` (real
    contacts) and the rigid backend through :func:`flapjax.sim.rigid.step`
    (same semi-implicit Euler, no contacts: a world whose hull, hubs, arm or
    end-effector reaches the ground or the wall is flagged ``touching``).

    Args:
      profile: nominal airframe (its rotor count and geometry fix the MJCF).
      options: which chain steps run (static).
      dt: step length [s].
      with_box: add a movable box object (free body) to the scene.
      iterations, ls_iterations: MJX solver iterations.
      dtype: cast the MJX model and data to this float dtype (e.g. float32
        while x64 is enabled); ``None`` keeps JAX's default.
      backend: "mjx" (MuJoCo MJX, contacts) or "rigid" (contact-free,
        several times cheaper per world-step).
      on_divergence: what happens to a world whose state turns non-finite or
        leaves the 100 m box: "freeze" keeps it at its last good state for the
        rest of the rollout; "reset" puts it back at rest at the current
        reference position (rotors at hover thrust, controller state zeroed;
        noise and turbulence go on) and lets it fly on. Either way
        ``StepInfo.diverged`` records the step, and the other worlds are
        untouched (bit-identical).
      sensor_noise: draw sensor noise every step (static). ``False`` gives
        the controller the exact state and skips the draws, ignoring
        ``params.noise.sensor`` (:meth:`reset` refuses concrete non-zero
        values), as ``ChainOptions(command_noise=False)`` ignores
        ``params.noise.command``; worth it when no world has sensor noise
        (the draws cost about a fifth of the rigid backend's step here).
    """

    def __init__(self, profile: rotor.RotorProfile, *, options: rotor.ChainOptions = rotor.ChainOptions(),
                 dt: float = 0.002, with_box: bool = False, box_half_size=(0.05, 0.05, 0.05),
                 iterations: int = 3, ls_iterations: int = 6, dtype=None, backend: str = "mjx",
                 on_divergence: str = "freeze", sensor_noise: bool = True):
        check_positive("dt", dt)
        check_choice("backend", backend, BACKENDS)
        check_choice("on_divergence", on_divergence, ("freeze", "reset"))
        _check_step_length(profile, float(dt))
        self.on_divergence = on_divergence
        self.sensor_noise = bool(sensor_noise)
        if backend == "rigid" and with_box:
            raise ConfigError("with_box: the rigid backend has no contacts, so it cannot push a box; use backend='mjx'")
        self.backend = backend
        self.profile = profile
        self.options = options
        self.dt = float(dt)
        self.with_box = bool(with_box)
        self.box_half_size = tuple(float(x) for x in box_half_size)
        xml = mm.multirotor_xml(profile, with_box=with_box, box_half_size=box_half_size, timestep=dt,
                                iterations=iterations, ls_iterations=ls_iterations)
        self.xml = xml
        self.mj_model = mujoco.MjModel.from_xml_string(xml)
        self.model = mjx.put_model(self.mj_model)
        self.dtype = dtype
        if dtype is not None:
            self.model = _cast(self.model, dtype)
        self._ids = dict(
            ground=mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, mm.GROUND),
            wall=mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, mm.WALL),
            base=mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_BODY, mm.BASE),
            box_geom=mujoco.mj_name2id(self.mj_model, mujoco.mjtObj.mjOBJ_GEOM, "box") if with_box else -1,
        )

    @functools.cached_property
    def _data0(self):
        # Concrete arrays even when first needed inside a jit trace.
        with jax.ensure_compile_time_eval():
            data = mjx.make_data(self.model)
            return _cast(data, self.dtype) if self.dtype is not None else data

    def _probes(self, prof: rotor.RotorProfile) -> tuple[Array, Array]:
        """Body-frame centres (k, 3) [m] and radii (k,) [m] of the collision
        shapes the rigid backend watches: hull corners, hub spheres, arm ends
        and the end-effector (the geoms of the MJCF)."""
        corners = jnp.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)],
                            dtype=prof.mass.dtype) * prof.hull_half_size
        centres = jnp.concatenate([corners, prof.positions, prof.arm_base[None], prof.ee_position[None]])
        radii = jnp.concatenate([jnp.zeros(8, prof.mass.dtype), mm.HUB_RADIUS_RATIO * prof.radius,
                                 jnp.full((1,), mm.ARM_RADIUS, prof.mass.dtype), prof.ee_radius[None]])
        return centres, radii

    def _rigid_body(self, prof: rotor.RotorProfile) -> rigid.RigidBody:
        return rigid.RigidBody(prof.mass, prof.inertia, gravity=jnp.asarray(self.mj_model.opt.gravity, prof.mass.dtype))

    # ------------------------------------------------------------------ params

    def default_params(self, scene: sc.Scene | None = None) -> WorldParams:
        """Nominal per-world parameters (default scene, no wind, no noise)."""
        scene = sc.Scene(box_half_size=self.box_half_size) if scene is None else scene
        return WorldParams(scene=scene, profile=self.profile, chain=rotor.ChainParams(), noise=NoiseParams(),
                           gains=WrenchGains.for_profile(self.profile))

    def randomize(self, params: WorldParams, key: PRNGKeyArray, ranges: sc.SceneRanges) -> WorldParams:
        """Task randomization of the scene from the world key's randomization
        stream (independent of the noise and turbulence streams)."""
        scene = sc.randomize_scene(split_streams(key).randomization, params.scene, ranges)
        return eqx.tree_at(lambda p: p.scene, params, scene)

    def world_model(self, params: WorldParams):
        """The MJX model of one world: wall pose, frictions, ground height, box
        size and friction, robot mass and inertia from ``params`` (rigid
        backend: the :func:`flapjax.sim.rigid.prepare`-d body).

        Quantities MuJoCo precomputes from the mass at compile time (e.g.
        ``body_subtreemass``, ``dof_invweight0``) keep their nominal values.
        """
        if self.backend == "rigid":
            return rigid.prepare(self._rigid_body(params.profile))
        m = self.model
        ids = self._ids
        s = params.scene
        ftype = m.geom_pos.dtype
        n_w = sc.wall_normal(s)
        wall_pos = jnp.stack([s.wall_x, jnp.zeros_like(s.wall_x), s.wall_anchor_z]).astype(ftype)
        geom_pos = m.geom_pos.at[ids["wall"]].set(wall_pos)
        geom_pos = geom_pos.at[ids["ground"], 2].set(s.ground_height.astype(ftype))
        geom_quat = m.geom_quat.at[ids["wall"]].set(_plane_quat(n_w).astype(ftype))
        geom_friction = m.geom_friction.at[ids["wall"], 0].set(s.wall_friction.astype(ftype))
        geom_friction = geom_friction.at[ids["ground"], 0].set(s.ground_friction.astype(ftype))
        geom_size = m.geom_size
        if self.with_box:
            geom_friction = geom_friction.at[ids["box_geom"], 0].set(s.box_friction.astype(ftype))
            geom_size = geom_size.at[ids["box_geom"]].set(s.box_half_size.astype(ftype))
        body_mass = m.body_mass.at[ids["base"]].set(params.profile.mass.astype(ftype))
        body_inertia = m.body_inertia.at[ids["base"]].set(params.profile.inertia.astype(ftype))
        return m.replace(geom_pos=geom_pos, geom_quat=geom_quat, geom_friction=geom_friction, geom_size=geom_size,
                         body_mass=body_mass, body_inertia=body_inertia)

    # ------------------------------------------------------------------ state

    def reset(self, params: WorldParams, key: PRNGKeyArray, position: Float[Array, "3"], yaw=0.0,
              box_position: Float[Array, "3"] | None = None) -> WorldState:
        """A world at rest at ``position`` (3,) [m] and heading ``yaw`` [rad],
        rotors spinning at hover thrust, turbulence drawn from its stationary law.

        ``key`` seeds the world's noise and turbulence streams;
        ``box_position`` (3,) [m] places the box object (worlds with a box).
        """
        if not self.sensor_noise:
            _check_no_sensor_noise(params.noise.sensor)
        streams = split_streams(key)
        k_turb, k_next = jax.random.split(streams.turbulence)
        data, actuator = self._at_rest(params, position, yaw, box_position)
        noise_key, turbulence_key = rng.stream_words(streams.noise), rng.stream_words(k_next)
        dist = rotor.DisturbanceState.stationary(params.chain.wind, k_turb)
        return WorldState(
            data=data, actuator=actuator, disturbance=dist, controller=ControllerState.zero(),
            noise_key=noise_key, turbulence_key=turbulence_key,
            draws=self._draws(noise_key, turbulence_key, 0, params.profile.mass.dtype),
            step=jnp.zeros((), jnp.int32), diverged=jnp.zeros((), bool),
        )

    def _n_noise_lanes(self) -> int:
        """Noise-stream draws per step: 12 sensor noise, then the command
        noise (lanes fixed, so one switch does not change the other's draws)."""
        n_cmd = self.profile.n_rotors if self.options.command_noise else 0
        return 12 + n_cmd if (self.sensor_noise or n_cmd) else 0

    def _draws(self, noise_key, turbulence_key, counter, dtype):
        """(m,) standard normal draws of step ``counter``: the noise-stream
        lanes (:meth:`_n_noise_lanes`), then 3 turbulence-stream lanes,
        packed into whole vector lanes (:func:`flapjax.rng.packed_lanes`).
        A step uses the draws the previous step made, so they are computed
        whole rather than fused lane by lane into their users, which XLA:CPU
        cannot vectorize."""
        n_noise = self._n_noise_lanes()
        if n_noise:
            return rng.packed_lanes(jnp.stack([noise_key, turbulence_key]), counter, (n_noise, 3), dtype)
        return rng.normal_lanes(turbulence_key, counter, 3, dtype)

    def _at_rest(self, params: WorldParams, position, yaw, box_position=None):
        """Backend data of the robot at rest at ``position`` and ``yaw`` (the
        box, if any, at ``box_position`` or its default place) and the
        actuator state at hover thrust."""
        prof = params.profile
        hover = rotor.allocate(prof, jnp.array([0.0, 0.0, 9.81, 0.0, 0.0, 0.0]) * prof.mass)
        actuator = rotor.ActuatorState.at_thrust(prof, jnp.clip(hover, prof.thrust_min, prof.thrust_max))
        if self.backend == "rigid":
            ftype = self.dtype if self.dtype is not None else prof.mass.dtype
            position = jnp.asarray(position, dtype=ftype)
            return rigid.RigidState.at_rest(position, _yaw_quat(jnp.asarray(yaw, dtype=ftype))), actuator
        data = self._data0
        qpos = data.qpos
        position = jnp.asarray(position, dtype=qpos.dtype)
        qpos = qpos.at[0:3].set(position).at[3:7].set(_yaw_quat(jnp.asarray(yaw, dtype=qpos.dtype)))
        if self.with_box:
            if box_position is None:  # resting on the ground, 0.6 m ahead of the origin
                box_position = jnp.stack([jnp.asarray(0.6), jnp.asarray(0.0),
                                          params.scene.ground_height + params.scene.box_half_size[2]])
            bp = jnp.asarray(box_position, dtype=qpos.dtype)
            qpos = qpos.at[7:10].set(bp).at[10:14].set(jnp.array([1.0, 0, 0, 0], dtype=qpos.dtype))
        return data.replace(qpos=qpos), actuator

    # ------------------------------------------------------------------ step

    def step(self, params: WorldParams, state: WorldState, reference: Reference, model=None,
             allocation_inverse=None, wrench=None) -> tuple[WorldState, StepInfo]:
        """Advance one world by ``dt``; ``model`` may be a prebuilt
        :meth:`world_model` and ``allocation_inverse`` a prebuilt
        :func:`flapjax.rotor.allocation_inverse` (rollouts build both once).
        ``wrench`` (6,) [N, N m], if given, is the desired body wrench and
        replaces the controller (its state is kept); ``reference`` then only
        matters for ``on_divergence="reset"``."""
        m = self.world_model(params) if model is None else model
        prof = params.profile
        d = state.data
        ftype = d.qpos.dtype
        qpos, qvel = d.qpos.astype(prof.mass.dtype), d.qvel.astype(prof.mass.dtype)
        position, quat = qpos[0:3], qpos[3:7]
        rot = quat_to_mat(quat)
        v_world, w_body = qvel[0:3], qvel[3:6]

        n_cmd = prof.n_rotors if self.options.command_noise else 0
        n_noise = self._n_noise_lanes()
        draws = state.draws.astype(prof.mass.dtype)
        z, xi = draws[:n_noise], draws[n_noise:n_noise + 3]
        if self.sensor_noise:
            ns = sensor_noise(params.noise.sensor, z[:12].reshape(4, 3))
            estimate = StateEstimate(
                position=position + ns.position, velocity=v_world + ns.velocity,
                rotation=quat_to_mat(quat_integrate(quat, ns.attitude, 1.0)), rate=w_body + ns.rate,
            )
            noise_position = ns.position
        else:
            estimate = StateEstimate(position=position, velocity=v_world, rotation=rot, rate=w_body)
            noise_position = jnp.zeros(3, prof.mass.dtype)
        if wrench is None:
            wrench_cmd, ctrl = wrench_command(params.gains, prof, estimate, reference, state.controller, dt=self.dt)
        else:
            wrench_cmd, ctrl = jnp.asarray(wrench, dtype=prof.mass.dtype), state.controller

        box = None
        if self.with_box:
            box = sc.BoxPose(position=qpos[7:10], rotation=quat_to_mat(qpos[10:14]))
        prox = sc.rotor_proximity(params.scene, prof, position, rot, box)
        motion = rotor.BodyMotion(rotation=rot, velocity_body=rot.T @ v_world,
                                  time=state.step.astype(prof.mass.dtype) * self.dt)
        chain = params.chain
        if self.options.command_noise:
            chain = eqx.tree_at(lambda c: c.command_noise, chain, params.noise.command)
        out = rotor.realize_wrench(prof, wrench_cmd, state.actuator, prox, self.options, dt=self.dt, params=chain,
                                   motion=motion, disturbance=state.disturbance, turbulence_normal=xi,
                                   command_normal=z[12:12 + n_cmd] if n_cmd else None,
                                   allocation_inverse=allocation_inverse)
        f_world = rot @ out.wrench[:3]
        tau_world = rot @ out.wrench[3:]
        wrench_world = jnp.concatenate([f_world, tau_world]).astype(ftype)
        if self.backend == "rigid":
            d_new = rigid.step(m, d, wrench_world.astype(prof.mass.dtype), self.dt)
            d_new = jax.tree.map(lambda x: x.astype(ftype), d_new)
            planes = jnp.stack([jnp.concatenate([n, c[None]]) for n, c in
                                (sc.ground_plane(params.scene), sc.wall_plane(params.scene))]).astype(ftype)
            centres, radii = self._probes(prof)
            touching = rigid.touching(centres.astype(ftype), radii.astype(ftype), d_new, planes)
            constraint_force = jnp.zeros(3, prof.mass.dtype)
        else:
            xfrc = jnp.zeros_like(d.xfrc_applied).at[self._ids["base"]].set(wrench_world)
            d_new = mjx.step(m, d.replace(xfrc_applied=xfrc))
            if self.dtype is not None:
                d_new = _cast(d_new, self.dtype)
            constraint_force = d_new.qfrc_constraint[0:3].astype(prof.mass.dtype)
            touching = jnp.any(d_new.qfrc_constraint[0:6] != 0)

        finite = (jnp.all(jnp.isfinite(d_new.qpos)) & jnp.all(jnp.isfinite(d_new.qvel))
                  & jnp.all(jnp.abs(d_new.qpos[0:3]) < _BOUND))
        actuator, disturbance = out.actuator_state, out.disturbance_state
        if self.on_divergence == "reset":
            ok = finite
            fresh_data, fresh_actuator = self._at_rest(params, reference.position, reference.yaw)
            pick = lambda a, b: jnp.where(ok, a, b)  # noqa: E731
            d_new = jax.tree.map(pick, d_new, fresh_data)
            actuator = jax.tree.map(pick, actuator, fresh_actuator)
            ctrl = jax.tree.map(pick, ctrl, ControllerState.zero())
            still_diverged = jnp.zeros((), bool)
        else:
            ok = finite & ~state.diverged
            d_new = jax.tree.map(lambda a, b: jnp.where(ok, a, b), d_new, d)
            still_diverged = ~ok
        new_state = WorldState(
            data=d_new, actuator=actuator, disturbance=disturbance, controller=ctrl,
            noise_key=state.noise_key, turbulence_key=state.turbulence_key,
            draws=self._draws(state.noise_key, state.turbulence_key, state.step + 1, state.draws.dtype),
            step=state.step + 1,
            diverged=still_diverged,
        )
        info = StepInfo(
            position=position, quat=quat, velocity=v_world, rate=w_body,
            ee_position=position + rot @ prof.ee_position, wrench_command=wrench_cmd,
            thrust_command=out.thrust_command, thrust_realized=out.thrust_realized, saturated=out.saturated,
            control_margin=out.control_margin, ground_factor=out.ground_factor, wall_factor=out.wall_factor,
            ground_distance=prox.ground_distance, wall_distance=prox.wall_distance, wrench=out.wrench,
            unreachable=out.unreachable, constraint_force=constraint_force,
            sensor_position_noise=noise_position, diverged=~ok, touching=touching,
        )
        return new_state, info

    # ------------------------------------------------------------------ rollouts

    def rollout(self, params: WorldParams, state: WorldState, reference: Reference, n_steps: int,
                *, checkpoint: bool = True) -> tuple[WorldState, StepInfo]:
        """``n_steps`` steps of one world under ``jax.lax.scan``.

        ``reference`` is either one :class:`Reference` held for all steps or
        one with a leading time axis of length ``n_steps``. Returns the final
        state and the stacked :class:`StepInfo` trajectory (time axis first).
        """
        m = self.world_model(params)
        inverse = rotor.allocation_inverse(params.profile, weights=params.chain.allocation_weights)
        timed = reference.position.ndim == 2

        def body(s, ref):
            r = ref if timed else reference
            return self.step(params, s, r, model=m, allocation_inverse=inverse)

        if checkpoint:
            # prevent_cse=False: the scan already keeps the rematerialized
            # step apart (JAX's recommendation inside scan).
            body = jax.checkpoint(body, prevent_cse=False)
        return jax.lax.scan(body, state, reference if timed else None, length=n_steps)

    @functools.cached_property
    def batched_reset(self):
        """``jit(vmap(reset))`` over (params, key, position, yaw), each with a
        leading world axis; fixed box placement."""
        return jax.jit(jax.vmap(lambda p, k, x, y: self.reset(p, k, x, y)))

    @functools.cached_property
    def batched_rollout(self):
        """``jit(vmap(rollout))``: params, state and reference carry a leading
        world axis; ``n_steps`` is static."""
        def run(params, state, reference, n_steps):
            return jax.vmap(lambda p, s, r: self.rollout(p, s, r, n_steps))(params, state, reference)

        return jax.jit(run, static_argnums=3)


def _check_no_sensor_noise(sensor) -> None:
    """A world built with ``sensor_noise=False`` refuses concrete parameters
    that ask for sensor noise (traced ones cannot be inspected)."""
    leaves = [sensor.position_std, sensor.velocity_std, sensor.attitude_std, sensor.rate_std]
    if any(_is_traced(x) for x in leaves):
        return
    if any(bool(np.any(np.asarray(x) != 0)) for x in leaves):
        raise ConfigError("params.noise.sensor: non-zero standard deviations, but the world was built with "
                          "sensor_noise=False (no sensor-noise draws); build it with sensor_noise=True")


def _check_step_length(profile: rotor.RotorProfile, dt: float) -> None:
    """Refuse a step too coarse for this airframe: the discrete attitude loop
    (default gains, rate damping ``k_W / J``) needs ``dt k_W / J <= 1``, and
    the actuator lag ``tau`` must span at least one step."""
    gains = WrenchGains.for_profile(profile)
    rate = float(np.max(np.asarray(gains.rate) / np.asarray(profile.inertia)))
    tau = float(np.min(np.asarray(profile.time_constant)))
    limit = min(1.0 / rate, tau)
    if dt > limit:
        raise ConfigError(
            f"dt: {dt:g} s is too large for a stable step of {profile.name!r}: must be <= {limit:.3g} s "
            f"(attitude rate loop {rate:.3g} 1/s, smallest rotor time constant {tau:.3g} s)"
        )


def _cast(tree, dtype):
    def f(x):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jnp.floating):
            return jnp.asarray(x, dtype=dtype)
        return x

    return jax.tree.map(f, tree)


class SaturationReport(eqx.Module):
    """Saturation use over a trajectory (seed: report it with task success).

    Attributes:
      time_fraction: (..., n) fraction of steps each rotor's command was at or
        beyond a limit [-].
      min_margin: (...) smallest control margin over the trajectory [-]
        (fraction of the thrust range; negative when saturated).
    """

    time_fraction: Float[Array, "... n"]
    min_margin: Float[Array, "..."]


def saturation_report(traj: StepInfo) -> SaturationReport:
    """Per-rotor saturation time fraction and smallest control margin of a
    trajectory with time axis ``-2`` for per-rotor fields (batched or not)."""
    return SaturationReport(time_fraction=jnp.mean(traj.saturated.astype(traj.control_margin.dtype), axis=-2),
                            min_margin=jnp.min(traj.control_margin, axis=-1))
