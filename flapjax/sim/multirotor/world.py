"""MJX multirotor worlds: controller -> chain -> body wrench -> backend step.

One :class:`MultirotorWorld` holds the static part (the MJX model built from
a profile, the chain options, the step length, the backend); a
:class:`WorldParams` holds everything that may differ per world (scene,
profile values, chain coefficients, noise, gains) as a pytree, so a leading
world axis batches it. :meth:`MultirotorWorld.prepare` builds, once per
rollout, what a step derives from the parameters (the world's model, the
allocation inverse); :meth:`MultirotorWorld.step` runs the named stages of
:mod:`flapjax.sim.multirotor.step` top to bottom, reading and advancing the
state through the backend's stages (``STAGES[world.backend]``,
:mod:`flapjax.sim.multirotor.backends`, the protocol of
:mod:`flapjax.sim.backend` that the flapper implements too).

A world that turns unhealthy (non-finite state, command, thrust or margin;
outside a 100 m box; speed or body rate beyond the bounds of
:func:`flapjax.rotor.feasibility.health_bounds`; non-finite scene) is frozen
at its last good state (or reset) and flagged ``diverged``, with the reason
in ``StepInfo.health``, so it cannot poison the batch.
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray
from mujoco import mjx

from flapjax import rng, rotor
from flapjax import scene as sc
from flapjax.control.wrench import ControllerState, Reference, WrenchGains, wrench_command
from flapjax.math import GRAVITY
from flapjax.noise import NoiseParams, split_streams
from flapjax.sim.backend import BACKENDS, keep_good
from flapjax.sim.multirotor import model as mm
from flapjax.sim.multirotor import step as st
from flapjax.sim.multirotor.backends import STAGES, cast
from flapjax.sim.multirotor.types import Prepared, StepInfo, WorldParams, WorldState
from flapjax.sim.rollout import remat
from flapjax.rotor.feasibility import health_bounds
from flapjax.validation import (ConfigError, as_float_array, check_bool, check_choice, check_int, check_number,
                                check_positive, check_prng_key, check_range, check_shape, is_traced)

#: Shortest step accepted [s] (a shorter one only burns compute: 1e-300 never ends).
MIN_DT = 1e-6
#: Largest start coordinate [m] and box half size [m] (beyond, float32 loses the millimetre); most solver iterations.
MAX_POSITION, MAX_BOX_HALF_SIZE, MAX_SOLVER_ITERATIONS = 1e4, 10.0, 1000


class MultirotorWorld(eqx.Module):
    """A multirotor in a ground/wall(/box) scene, simulated by MJX or by the
    pure-JAX rigid-body backend.

    Both backends share everything but the integrator: the same controller,
    chain, scene distances, noise and turbulence streams produce the same body
    wrench, which MJX applies through ``xfrc_applied`` and ``mjx.step`` (real
    contacts) and the rigid backend through :func:`flapjax.sim.rigid.step`
    (same semi-implicit Euler, no contacts: a world whose hull, hubs, arm or
    end-effector reaches the ground or the wall is flagged ``touching``).

    Args:
      profile: nominal airframe (its rotor count and geometry fix the MJCF); a
        preset name or profile file is loaded (:func:`flapjax.rotor.resolve_profile`).
      options: which chain steps run (static).
      dt: step length [s].
      with_box: add a movable box object (free body) to the scene.
      iterations, ls_iterations: MJX solver iterations.
      unrolled_solver: run exactly ``iterations`` solver iterations, unrolled
        (:func:`flapjax.sim.multirotor.gradient.step_fixed_iterations`), so
        reverse mode (``jax.grad``) passes through contacts at any
        ``iterations``; the default ``mjx.step`` stops early at MuJoCo's
        tolerance in a loop that only forward mode differentiates (static).
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

    Attributes (besides the arguments): ``xml`` the MJCF text; ``mj_model``
    the MuJoCo model; ``model`` its nominal MJX model; ``data0`` the initial
    MJX data; ``ids`` the :class:`~flapjax.sim.multirotor.model.Ids` edited
    per world.
    """

    profile: rotor.RotorProfile
    model: Any
    data0: Any
    options: rotor.ChainOptions = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    with_box: bool = eqx.field(static=True)
    box_half_size: tuple[float, float, float] = eqx.field(static=True)
    dtype: Any = eqx.field(static=True)
    backend: str = eqx.field(static=True)
    on_divergence: str = eqx.field(static=True)
    sensor_noise: bool = eqx.field(static=True)
    iterations: int = eqx.field(static=True)
    unrolled_solver: bool = eqx.field(static=True)
    xml: str = eqx.field(static=True)
    speed_bound: float = eqx.field(static=True)
    rate_bound: float = eqx.field(static=True)
    mj_model: mujoco.MjModel = eqx.field(static=True)
    ids: mm.Ids = eqx.field(static=True)

    def __init__(self, profile: rotor.RotorProfile | str, *, options: rotor.ChainOptions = rotor.ChainOptions(),
                 dt: float = 0.002, with_box: bool = False, box_half_size=(0.05, 0.05, 0.05),
                 iterations: int = 3, ls_iterations: int = 6, dtype=None, backend: str = "mjx",
                 on_divergence: str = "freeze", sensor_noise: bool = True, unrolled_solver: bool = False):
        profile = rotor.resolve_profile(profile, field="profile")
        dt = check_number("dt", dt, MIN_DT, None)  # a list or 1e-300 is refused, not stepped forever
        if with_box:
            check_positive("box_half_size", as_float_array("box_half_size", box_half_size, (3,)))
            check_range("box_half_size", box_half_size, None, MAX_BOX_HALF_SIZE)
        check_choice("backend", backend, BACKENDS)
        check_choice("on_divergence", on_divergence, ("freeze", "reset"))
        check_int("iterations", iterations, 1, MAX_SOLVER_ITERATIONS)  # 1e9 would never finish a step
        check_int("ls_iterations", ls_iterations, 1, MAX_SOLVER_ITERATIONS)
        _check_step_length(profile, float(dt))
        if backend == "rigid" and with_box:
            raise ConfigError("with_box: the rigid backend has no contacts, so it cannot push a box; use backend='mjx'")
        self.profile = profile
        self.options = options
        self.dt = float(dt)
        self.with_box = bool(with_box)
        self.box_half_size = tuple(float(x) for x in box_half_size)
        self.dtype = dtype
        self.backend = backend
        self.on_divergence = on_divergence
        self.sensor_noise = bool(sensor_noise)
        self.iterations = int(iterations)
        self.unrolled_solver = check_bool("unrolled_solver", unrolled_solver)
        if any(is_traced(x) for x in (profile.positions, profile.radius, profile.thrust_max, profile.mass)):
            self.speed_bound, self.rate_bound = np.inf, np.inf  # no value to derive them from
        else:
            self.speed_bound, self.rate_bound = health_bounds(
                np.asarray(profile.positions), np.asarray(profile.radius), np.asarray(profile.thrust_max),
                np.asarray(profile.mass), box=st.BOUND)
        self.xml = mm.multirotor_xml(profile, with_box=with_box, box_half_size=box_half_size, timestep=dt,
                                     iterations=iterations, ls_iterations=ls_iterations)
        self.mj_model = mujoco.MjModel.from_xml_string(self.xml)
        self.ids = mm.model_ids(self.mj_model, with_box=self.with_box)
        with jax.ensure_compile_time_eval():  # concrete even if built inside a trace
            model = mjx.put_model(self.mj_model)
            data = mjx.make_data(model)
            self.model = cast(model, dtype) if dtype is not None else model
            self.data0 = cast(data, dtype) if dtype is not None else data

    # ------------------------------------------------------------------ params

    def default_params(self, scene: sc.Scene | None = None) -> WorldParams:
        """Nominal per-world parameters (default scene, no wind, no noise)."""
        scene = sc.Scene(box_half_size=self.box_half_size) if scene is None else scene
        return WorldParams(scene=scene, profile=self.profile, chain=rotor.ChainParams(), noise=NoiseParams(),
                           gains=WrenchGains.for_profile(self.profile), controller_profile=self.profile)

    def randomize(self, params: WorldParams, key: PRNGKeyArray, ranges: sc.SceneRanges) -> WorldParams:
        """Task randomization of the scene from the world key's randomization
        stream (independent of the noise and turbulence streams)."""
        scene = sc.randomize_scene(split_streams(key).randomization, params.scene, ranges)
        return eqx.tree_at(lambda p: p.scene, params, scene)

    def world_model(self, params: WorldParams):
        """The backend's model of one world: the MJX model with the wall pose,
        frictions, ground height, box size and friction, robot mass and
        inertia from ``params`` (rigid backend: the
        :func:`flapjax.sim.rigid.prepare`-d body)."""
        return STAGES[self.backend].model(self, params)

    def prepare(self, params: WorldParams) -> Prepared:
        """What every step of this world derives from ``params``, built once:
        the world's model and the allocation inverse of the controller's
        airframe (``params.controller_profile``) (pass the result to
        :meth:`step`; :meth:`rollout` prepares by itself)."""
        inverse = rotor.allocation_inverse(params.controller_profile, weights=params.chain.allocation_weights)
        return Prepared(params=params, model=self.world_model(params), allocation_inverse=inverse)

    def _prepared(self, params: WorldParams | Prepared) -> Prepared:
        return params if isinstance(params, Prepared) else self.prepare(params)

    # ------------------------------------------------------------------ state

    def reset(self, params: WorldParams | Prepared, key: PRNGKeyArray, position: Float[Array, "3"], yaw=0.0,
              box_position: Float[Array, "3"] | None = None) -> WorldState:
        """A world at rest at ``position`` (3,) [m] and heading ``yaw`` [rad],
        rotors spinning at hover thrust, turbulence drawn from its stationary law.

        ``key`` seeds the world's noise and turbulence streams;
        ``box_position`` (3,) [m] places the box object (worlds with a box).
        """
        if isinstance(params, Prepared):
            params = params.params
        check_prng_key("key", key)
        check_shape("position", position, (3,))
        check_range("position", position, -MAX_POSITION, MAX_POSITION)  # NaN or 1e9 m: refused, not flown
        if not is_traced(yaw):
            as_float_array("yaw", yaw)  # "north" is refused naming yaw
        if jnp.ndim(yaw) != 0:
            raise ConfigError(f"yaw: expected a scalar [rad], got shape {jnp.shape(yaw)}")
        if box_position is not None:
            check_shape("box_position", box_position, (3,))
        if not self.sensor_noise:
            _check_no_sensor_noise(params.noise.sensor)
        streams = split_streams(key)
        k_turb, k_next = jax.random.split(streams.turbulence)
        data = STAGES[self.backend].initial(self, params, position, yaw, box_position)
        noise_key, turbulence_key = rng.stream_words(streams.noise), rng.stream_words(k_next)
        dist = rotor.DisturbanceState.stationary(params.chain.wind, k_turb)
        return WorldState(
            data=data, actuator=_hover_actuator(params.profile), disturbance=dist, controller=ControllerState.zero(),
            noise_key=noise_key, turbulence_key=turbulence_key,
            draws=self._draws(noise_key, turbulence_key, 0, params.profile.mass.dtype),
            step=jnp.zeros((), jnp.int32), diverged=jnp.zeros((), bool),
        )

    def _n_command_lanes(self) -> int:
        return self.profile.n_rotors if self.options.command_noise else 0

    def _n_noise_lanes(self) -> int:
        """Noise-stream draws per step: 12 sensor noise, then the command
        noise (lanes fixed, so one switch does not change the other's draws)."""
        n_cmd = self._n_command_lanes()
        return st.SENSOR_LANES + n_cmd if (self.sensor_noise or n_cmd) else 0

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

    # ------------------------------------------------------------------ step

    def step(self, prepared: Prepared | WorldParams, state: WorldState, reference: Reference,
             wrench: Float[Array, "6"] | None = None) -> tuple[WorldState, StepInfo]:
        """Advance one world by ``dt``.

        ``prepared`` comes from :meth:`prepare` (build it once per rollout;
        plain :class:`WorldParams` are prepared on the spot). ``wrench`` (6,)
        [N, N m], if given, is the desired body wrench and replaces the
        controller (its state is kept); ``reference`` then only matters for
        ``on_divergence="reset"``.
        """
        if not isinstance(reference, Reference):
            raise ConfigError(f"reference: must be a Reference (e.g. Reference.hover(position)), got "
                              f"{type(reference).__name__}")
        prepared = self._prepared(prepared)
        stages = STAGES[self.backend]
        params = prepared.params
        prof = params.profile
        body = stages.read(self, prepared, state.data)
        draws = st.split_draws(state.draws.astype(prof.mass.dtype), self._n_noise_lanes(), self._n_command_lanes(),
                               sensor_noise=self.sensor_noise)
        estimate, noise_position = st.estimate(params.noise.sensor, draws[0], body)
        if wrench is None:
            wrench_cmd, ctrl = wrench_command(params.gains, params.controller_profile, estimate, reference,
                                              state.controller, dt=self.dt)
        else:
            wrench_cmd, ctrl = jnp.asarray(wrench, dtype=prof.mass.dtype), state.controller
        prox = st.proximity(params.scene, prof, body, with_box=self.with_box)
        time = state.step.astype(prof.mass.dtype) * self.dt
        inputs = st.chain_input(params, state.actuator, state.disturbance, prox, body, time, draws)
        out = st.realize(prepared, wrench_cmd, inputs, self.options, self.dt)
        wrench_world = st.to_world(body.rotation, out.wrench).astype(state.data.qpos.dtype)
        data, touching, constraint_force = stages.advance(self, prepared, state.data, wrench_world)
        code = st.health(data.qpos, data.qvel, wrench_cmd, out, params.scene, speed_bound=self.speed_bound,
                         rate_bound=self.rate_bound)
        new_state, ok = self._guard(params, state, reference, data, out, ctrl, code == 0)
        info = StepInfo(
            position=body.position, quat=body.quat, velocity=body.velocity, rate=body.rate,
            ee_position=body.position + body.rotation @ prof.ee_position, wrench_command=wrench_cmd,
            thrust_command=out.thrust_command, thrust_realized=out.thrust_realized, saturated=out.saturated,
            control_margin=out.control_margin, ground_factor=out.ground_factor, wall_factor=out.wall_factor,
            ground_distance=prox.ground_distance, wall_distance=prox.wall_distance, wrench=out.wrench,
            unreachable=out.unreachable, constraint_force=constraint_force,
            sensor_position_noise=noise_position, diverged=~ok, health=code, touching=touching,
        )
        return new_state, info

    def _guard(self, params: WorldParams, state: WorldState, reference: Reference, data, out: rotor.ChainOutput,
               ctrl: ControllerState, healthy) -> tuple[WorldState, Any]:
        """The next state behind the divergence guard (freeze or reset) and
        whether this step's new state was good (``healthy``: :func:`st.health`
        found nothing wrong)."""
        finite = healthy
        actuator = out.actuator_state
        if self.on_divergence == "reset":
            ok = finite
            fresh_data = STAGES[self.backend].initial(self, params, reference.position, reference.yaw)
            data = keep_good(ok, data, fresh_data)
            actuator = keep_good(ok, actuator, _hover_actuator(params.profile))
            ctrl = keep_good(ok, ctrl, ControllerState.zero())
            diverged = jnp.zeros((), bool)
        else:
            ok = finite & ~state.diverged
            data = keep_good(ok, data, state.data)
            diverged = ~ok
        new_state = WorldState(
            data=data, actuator=actuator, disturbance=out.disturbance_state, controller=ctrl,
            noise_key=state.noise_key, turbulence_key=state.turbulence_key,
            draws=self._draws(state.noise_key, state.turbulence_key, state.step + 1, state.draws.dtype),
            step=state.step + 1, diverged=diverged,
        )
        return new_state, ok

    # ------------------------------------------------------------------ rollouts

    def rollout(self, prepared: Prepared | WorldParams, state: WorldState, reference: Reference, n_steps: int,
                *, checkpoint: bool = True) -> tuple[WorldState, StepInfo]:
        """``n_steps`` steps of one world under ``jax.lax.scan``.

        ``prepared`` comes from :meth:`prepare`, or is the plain
        :class:`WorldParams`, prepared here once. ``reference`` is either one
        :class:`Reference` held for all steps or one with a leading time axis
        of length ``n_steps``. Returns the final state and the stacked
        :class:`StepInfo` trajectory (time axis first).
        """
        check_int("n_steps", n_steps, 1)
        timed = reference.position.ndim == 2
        if timed and reference.position.shape[0] != n_steps:
            raise ConfigError(f"reference: a timed reference needs n_steps = {n_steps} rows, "
                              f"got {reference.position.shape[0]}")
        prepared = self._prepared(prepared)

        def body(s, ref):
            return self.step(prepared, s, ref if timed else reference)

        if checkpoint:
            body = remat(body)
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


def _hover_actuator(prof: rotor.RotorProfile) -> rotor.ActuatorState:
    """Rotor speeds at the clamped hover thrust of a level body."""
    hover = rotor.allocate(prof, jnp.array([0.0, 0.0, GRAVITY, 0.0, 0.0, 0.0]) * prof.mass)
    return rotor.ActuatorState.at_thrust(prof, jnp.clip(hover, prof.thrust_min, prof.thrust_max))


def _check_no_sensor_noise(sensor) -> None:
    """A world built with ``sensor_noise=False`` refuses concrete parameters
    that ask for sensor noise (traced ones cannot be inspected)."""
    leaves = [sensor.position_std, sensor.velocity_std, sensor.attitude_std, sensor.rate_std]
    if any(is_traced(x) for x in leaves):
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
