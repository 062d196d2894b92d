"""Functional task environments on MJX multirotor worlds (Brax / Playground style).

An environment is a plain object holding static things (configuration, the
:class:`~flapjax.sim.multirotor.MultirotorWorld`); all per-world data live in
an :class:`EnvState` pytree, so ::

    state = env.reset(key)                 # key -> one world
    state = env.step(state, action)        # pure, jit- and vmap-able
    jax.jit(jax.vmap(env.step))(states, actions)

Per-world keys. ``reset(key)`` splits ``key`` into independent streams
(:func:`flapjax.noise.split_streams`): the randomization stream draws the scene,
the object pose, the colours and the physical parameters; the noise stream
drives sensor noise, command noise and observation noise; the turbulence
stream drives the wind. ``reset(key, noise_key=k2)`` takes the noise and
turbulence streams from ``k2`` instead, so changing ``k2`` never changes the
randomized world. The randomized airframe (mass, inertia, thrust and torque
coefficients, motor time constants) is the physics'; the controller keeps
the nominal one (``WorldParams.controller_profile``), as flight software
that was tuned for the nominal robot would.

Actions (``config.action_mode``):

* ``"setpoint"`` (default), shape (10,): ``[p_ee (3) world end-effector
  target [m], v_ee (3) its velocity [m/s], f_ff (3) world feed-forward force
  [N], yaw (1) heading [rad]]``. The environment turns it into a
  :class:`~flapjax.control.wrench.Reference` for the CoM of a level body at
  that heading (``p = p_ee - R_z(yaw) r_ee``), advances the position by
  ``v_ee`` over the substeps, passes ``f_ff / m`` as feed-forward
  acceleration, and :meth:`MultirotorWorld.step` runs the geometric wrench
  controller and the full rotor chain. Scripted controllers and high-level
  policies use this mode.
* ``"wrench"``, shape (6,): the desired body wrench ``[F (3) N, tau (3) N m]``
  about the CoM, held over the substeps and sent through the same rotor chain
  (allocation, saturation, actuator, proximity, drag, wind) and MJX step;
  no controller runs.
* ``"residual"``, shape (10,), each entry in [-1, 1] (clipped): a correction
  of the reference controller's setpoint (:meth:`TaskEnv.scripted_action`),
  ``setpoint = scripted + scale * action`` with ``scale`` from
  ``config.residual_scale`` (position, velocity, force, yaw); then as
  ``"setpoint"``. An action of zeros flies the reference controller. This is
  the mode for learning (the RL adapters use it by default).

Backends (``config.backend``): ``"mjx"`` (real contacts) or ``"rigid"``
(the contact-free pure-JAX body, for tasks that need no contact; tasks with
``needs_contact`` refuse it). On the rigid backend a world whose robot
reaches the ground or the wall ends its episode (``done``), counts as a
failure in :meth:`TaskEnv.summarize` (``touched``) and gets no reward from
then on.

Observation (float32): 19 entries every task shares, then the task's own
(:mod:`flapjax.tasks.observation` names each slice).

``done`` turns 1 at the end of the episode or when a world diverged (frozen by
the world); the environment does not auto-reset (training wrappers do).
A failing step (divergence, or a touch on the rigid backend) has reward 0;
every task's reward lies in (0, 1], so ending an episode by failure never
pays more than flying on.
``metrics`` holds this step's values (Brax convention); ``info`` holds the
episode accumulators that :meth:`TaskEnv.summarize` turns into task metrics,
success and saturation use.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from flapjax import rng
from flapjax import scene as sc
from flapjax.control.wrench import Reference
from flapjax.math import quat_to_mat, quat_z
from flapjax.noise import sense, split_streams
from flapjax.programs import ProgramCache, tree_digest
from flapjax.sim.multirotor import MultirotorWorld, Prepared, StepInfo, WorldParams
from flapjax.sim.multirotor.step import read_state
from flapjax.tasks import randomize
from flapjax.tasks.config import TaskConfig
from flapjax.tasks.observation import observation_spec
from flapjax.tasks.state import EnvState, TaskCommon
from flapjax.validation import ConfigError, check_prng_key, check_shape

_N_OBS = 7


#: Compiled :meth:`TaskEnv.step` per :attr:`TaskEnv.program_key`.
_STEP_PROGRAMS = ProgramCache()


class TaskEnv:
    """Base of the multirotor tasks (see the module docstring for the contract).

    Subclasses set ``name``, ``config_class``, ``with_box`` and implement
    ``_nominal_scene``, ``_sample_task``, ``_task_obs``, ``_task_update``,
    ``_task_summary``, ``scripted_action`` and ``trace``.
    """

    name: ClassVar[str] = "task"
    config_class: ClassVar[type] = TaskConfig
    with_box: ClassVar[bool] = False
    box_half_size: ClassVar[tuple[float, float, float]] = (0.05, 0.05, 0.05)
    #: Presets that can do the task (all three by default; profile files are not restricted).
    robots: ClassVar[tuple[str, ...]] = ("quad_x", "hexa", "hexa_tilted")
    #: The task needs real contacts (MJX backend only).
    needs_contact: ClassVar[bool] = False

    def __init__(self, config: TaskConfig | None = None):
        config = self.default_config() if config is None else config
        if not isinstance(config, self.config_class):
            raise ConfigError(f"config: must be a {self.config_class.__name__} for task {self.name!r}, "
                              f"got {type(config).__name__}")
        if not config.robot_is_file and config.robot not in self.robots:
            raise ConfigError(f"robot: task {self.name!r} supports {list(self.robots)}, got {config.robot!r}")
        if config.backend == "rigid" and self.needs_contact:
            raise ConfigError(f"backend: task {self.name!r} needs contacts; use backend='mjx', got 'rigid'")
        self.config = config
        self.profile = config.load_profile()
        self.world = MultirotorWorld(
            self.profile, options=config.chain_options(), dt=config.physics_dt, with_box=self.with_box,
            box_half_size=self.box_half_size, iterations=config.solver_iterations,
            ls_iterations=config.solver_ls_iterations, dtype=jnp.float32, backend=config.backend,
        )
        scene = self._nominal_scene()
        self.nominal_params = eqx.tree_at(lambda p: (p.noise, p.chain), self.world.default_params(scene),
                                          (config.noise.params(), config.chain_params()))
        r = config.randomization
        self.scene_ranges = sc.SceneRanges(
            wall_pitch=r.wall_pitch, wall_x=r.wall_x,
            wall_friction=tuple(float(scene.wall_friction) * s for s in r.friction_scale),
            ground_friction=tuple(float(scene.ground_friction) * s for s in r.friction_scale),
        )
        self.nominal_rgba = np.asarray(self.world.mj_model.geom_rgba, dtype=np.float32)
        #: What fixes this environment's compiled programs: the task, its
        #: configuration and the numbers it loaded (profile and chain files).
        self.program_key = (type(self), config, tree_digest(self.nominal_params))

    # ------------------------------------------------------------------ config

    @classmethod
    def default_config(cls) -> TaskConfig:
        """The task's default configuration (override with :func:`replace_config`)."""
        return cls.config_class()

    def __repr__(self):
        return f"{type(self).__name__}(robot={self.config.robot!r})"

    @property
    def dt(self) -> float:
        """Environment step [s]."""
        return self.config.env_dt

    @property
    def action_size(self) -> int:
        return 6 if self.config.action_mode == "wrench" else 10

    task_obs_fields: ClassVar[tuple[tuple[str, int], ...]] = ()

    def observation_spec(self) -> dict[str, slice]:
        """``{name: slice}`` of the observation vector (:mod:`flapjax.tasks.observation`)."""
        return observation_spec(self.task_obs_fields)

    @functools.cached_property
    def observation_size(self) -> int:
        state = jax.eval_shape(self.reset, jax.random.key(0))
        return int(state.obs.shape[-1])

    def time(self, state: EnvState) -> Float[Array, ""]:
        """Time at the start of the next step [s]."""
        return state.info["step"].astype(jnp.float32) * self.dt

    # ------------------------------------------------------------------ reset

    def _nominal_scene(self) -> sc.Scene:
        return sc.Scene(wall_x=10.0)

    def randomize_params(self, key: PRNGKeyArray) -> WorldParams:
        """This world's physical parameters from the randomization stream of ``key``
        (nominal when randomization is off; :func:`flapjax.tasks.randomize.world_params`)."""
        return randomize.world_params(self.nominal_params, self.config.randomization, self.scene_ranges, key)

    def _rgba(self, key: PRNGKeyArray):
        return randomize.colours(jnp.asarray(self.nominal_rgba), self.config.randomization, key)

    def _offset(self, key, name: str, stream: int, shape) -> Float[Array, "..."]:
        return randomize.offset(self.config.randomization, key, name, stream, shape)

    def reset(self, key: PRNGKeyArray, noise_key: PRNGKeyArray | None = None) -> EnvState:
        """A fresh world from ``key`` (randomization from its randomization
        stream; noise and turbulence from ``noise_key`` if given, else ``key``)."""
        check_prng_key("key", key)
        check_prng_key("noise_key", noise_key, allow_none=True)
        noise_src = key if noise_key is None else noise_key
        params = self.randomize_params(key)
        common = TaskCommon(
            rgba=self._rgba(key),
            obs_key=rng.stream_words(jax.random.fold_in(split_streams(noise_src).noise, _N_OBS)),
            start=jnp.zeros(3), yaw=jnp.zeros(()),
        )
        task, start, yaw, box_pose = self._sample_task(key, params, common)
        box_position = None if box_pose is None else box_pose[0]
        ws = self.world.reset(params, noise_src, start, yaw=yaw, box_position=box_position)
        if box_pose is not None:
            qpos = ws.data.qpos
            quat = quat_z(box_pose[1].astype(qpos.dtype))
            ws = eqx.tree_at(lambda w: w.data, ws, ws.data.replace(qpos=qpos.at[10:14].set(quat)))
        info = self._init_info()
        info.update(self._task_init_info())
        zero = jnp.zeros((), jnp.float32)
        metrics = {k: jnp.zeros((), jnp.float32) for k in ("saturation", "control_margin") + self.metric_names}
        state = EnvState(world=ws, params=params, task=task, obs=jnp.zeros(0), reward=zero, done=zero,
                         metrics=metrics, info=info)
        return eqx.tree_at(lambda s: s.obs, state, self._observe(state))

    def _init_info(self) -> dict:
        info = dict(step=jnp.zeros((), jnp.int32), rotor_steps=jnp.zeros(()), saturated_rotor_steps=jnp.zeros(()),
                    min_margin=jnp.full((), jnp.inf, float), diverged=jnp.zeros((), bool))
        if self.config.backend == "rigid":
            info["touched"] = jnp.zeros((), bool)
        return info

    metric_names: ClassVar[tuple[str, ...]] = ()
    #: Main task metric in :meth:`summarize` and the scenario value plotted against it.
    primary_metric: ClassVar[str] = ""
    scenario_key: ClassVar[str] = "mass"

    # ------------------------------------------------------------------ step

    def prepare(self, state: EnvState) -> Prepared:
        """This world's :meth:`MultirotorWorld.prepare` with its colours
        written into the MJX model (the rigid backend's model has no colours)."""
        prepared = self.world.prepare(state.params)
        if self.config.backend == "rigid":
            return prepared
        m = prepared.model
        return eqx.tree_at(lambda q: q.model, prepared,
                           m.replace(geom_rgba=state.task.common.rgba.astype(m.geom_rgba.dtype)))

    def world_model(self, state: EnvState):
        """The MJX model of this world (physics parameters and colours)."""
        return self.prepare(state).model

    def action_to_reference(self, params: WorldParams, action: Float[Array, "10"]) -> Reference:
        """Setpoint action -> CoM reference of a level body (see module docstring)."""
        action = jnp.asarray(action, dtype=params.profile.mass.dtype)
        p_ee, v_ee, f_ff, yaw = action[0:3], action[3:6], action[6:9], action[9]
        c, s = jnp.cos(yaw), jnp.sin(yaw)
        r_ee = params.profile.ee_position
        offset = jnp.stack([c * r_ee[0] - s * r_ee[1], s * r_ee[0] + c * r_ee[1], r_ee[2]])
        # the controller turns the acceleration back into force with the mass it assumes
        return Reference(position=p_ee - offset, velocity=v_ee, acceleration=f_ff / params.controller_profile.mass,
                         yaw=yaw)

    def residual_scale(self) -> Float[Array, "10"]:
        """(10,) setpoint change of a residual action of ones (``config.residual_scale``
        spread over position, velocity, force and yaw)."""
        p, v, f, y = self.config.residual_scale
        return jnp.asarray([p] * 3 + [v] * 3 + [f] * 3 + [y], jnp.float32)

    def residual_to_setpoint(self, state: EnvState, action: Float[Array, "10"]) -> Float[Array, "10"]:
        """Residual action in [-1, 1] (clipped) -> setpoint action: the reference
        controller's setpoint plus ``residual_scale * action``."""
        action = jnp.clip(jnp.asarray(action, jnp.float32), -1.0, 1.0)
        return self.scripted_action(state) + self.residual_scale() * action

    def step(self, state: EnvState, action) -> EnvState:
        """Advance one environment step (``config.substeps`` physics steps);
        ``action`` has shape (:attr:`action_size`,) (batch with ``jax.vmap``).

        Compiled once per task and configuration, so a loop of eager calls
        runs the compiled step; inside ``jax.jit``, ``vmap`` or ``grad`` it
        is traced with the caller's program as any function."""
        check_shape("action", action, (self.action_size,))
        program = _STEP_PROGRAMS.get(self.program_key, lambda: jax.jit(self._step))
        return program(state, action if hasattr(action, "shape") else jnp.asarray(action))

    def _step(self, state: EnvState, action) -> EnvState:
        cfg = self.config
        params = state.params
        prepared = self.prepare(state)
        dt = cfg.physics_dt

        if cfg.action_mode == "residual":
            action = self.residual_to_setpoint(state, action)
        if cfg.action_mode in ("setpoint", "residual"):
            ref = self.action_to_reference(params, action)

            def sub(ws, k):
                r = eqx.tree_at(lambda q: q.position, ref, ref.position + ref.velocity * (k * dt))
                return self.world.step(prepared, ws, r)
        else:
            wrench = jnp.asarray(action, dtype=params.profile.mass.dtype)

            def sub(ws, k):
                hold = Reference.hover(ws.data.qpos[0:3].astype(wrench.dtype))  # used only to reset a diverged world
                return self.world.step(prepared, ws, hold, wrench=wrench)

        ws, infos = jax.lax.scan(sub, state.world, jnp.arange(cfg.substeps, dtype=params.profile.mass.dtype))
        info = dict(state.info)
        n_sat = jnp.sum(infos.saturated.astype(jnp.float32))
        n_rot = float(infos.saturated.size)
        margin = jnp.min(infos.control_margin)
        info["step"] = info["step"] + 1
        info["rotor_steps"] = info["rotor_steps"] + n_rot
        info["saturated_rotor_steps"] = info["saturated_rotor_steps"] + n_sat
        info["min_margin"] = jnp.minimum(info["min_margin"], margin)
        info["diverged"] = info["diverged"] | ws.diverged
        new = eqx.tree_at(lambda s: (s.world, s.info), state, (ws, info))
        reward, task_metrics, task_info = self._task_update(state, new, infos)
        info.update(task_info)
        metrics = dict(saturation=n_sat / n_rot, control_margin=margin, **task_metrics)
        metrics = {k: jnp.asarray(v, jnp.float32) for k, v in metrics.items()}
        failed = info["diverged"]
        if cfg.backend == "rigid":
            info["touched"] = info["touched"] | jnp.any(infos.touching)
            failed = failed | info["touched"]
        done = (info["step"] >= cfg.episode_length) | failed
        new = eqx.tree_at(lambda s: (s.info, s.metrics, s.reward, s.done), new,
                          (info, metrics, jnp.where(failed, 0.0, reward).astype(jnp.float32),
                           done.astype(jnp.float32)))
        return eqx.tree_at(lambda s: s.obs, new, self._observe(new))

    # ------------------------------------------------------------------ observation

    def body_state(self, state: EnvState):
        """``(position, quat, velocity, rate)`` of the CoM from the world state."""
        body = read_state(state.world.data, state.params.profile.mass.dtype)
        return body.position, body.quat, body.velocity, body.rate

    def ee_position(self, state: EnvState) -> Float[Array, "3"]:
        """(3,) end-effector centre, world [m] (exact, noise-free)."""
        p, q, _, _ = self.body_state(state)
        return p + quat_to_mat(q) @ state.params.profile.ee_position

    def _observe(self, state: EnvState):
        p, q, v, w = self.body_state(state)
        z = rng.normals(state.task.common.obs_key, state.info["step"], 12, p.dtype)
        est = sense(state.params.noise.sensor, z.reshape(4, 3), p, q, v, w)
        ee = est.position + est.rotation @ state.params.profile.ee_position
        phase = (state.info["step"].astype(p.dtype) / self.config.episode_length)[None]
        common = jnp.concatenate([ee, est.velocity, est.rotation.reshape(-1), est.rate, phase])
        return jnp.concatenate([common, self._task_obs(state, ee)]).astype(jnp.float32)

    # ------------------------------------------------------------------ evaluation

    def summarize(self, state: EnvState) -> dict[str, Array]:
        """Episode results of one world: ``success`` and task metrics, plus
        ``saturation_fraction`` (rotor-steps at a limit / rotor-steps),
        ``min_control_margin`` and ``diverged``."""
        info = state.info
        out = dict(
            saturation_fraction=info["saturated_rotor_steps"] / jnp.maximum(info["rotor_steps"], 1.0),
            min_control_margin=info["min_margin"],
            diverged=info["diverged"],
        )
        task = self._task_summary(state)
        # an episode that has not run a step has shown nothing: not a success
        task["success"] = task["success"] & ~info["diverged"] & (info["step"] > 0)
        if "touched" in info:
            task["success"] = task["success"] & ~info["touched"]
            out["touched"] = info["touched"]
        out.update(task)
        return out

    def scenario(self, state: EnvState) -> dict[str, Array]:
        """Scalars describing the randomized world (for plots: success vs ...)."""
        s = state.params.scene
        return dict(wall_pitch=s.wall_pitch, mass=state.params.profile.mass,
                    thrust_scale=jnp.mean(state.params.profile.thrust_max / self.profile.thrust_max))

    # ------------------------------------------------------------------ subclass hooks

    def _sample_task(self, key, params, common):
        raise NotImplementedError

    def _task_init_info(self) -> dict:
        return {}

    def _task_obs(self, state: EnvState, ee_obs) -> Float[Array, " k"]:
        raise NotImplementedError

    def _task_update(self, prev: EnvState, new: EnvState, infos: StepInfo):
        raise NotImplementedError

    def _task_summary(self, state: EnvState) -> dict:
        raise NotImplementedError

    def scripted_action(self, state: EnvState) -> Float[Array, " a"]:
        """The reference controller's setpoint action for ``state``."""
        raise NotImplementedError

    def trace(self, state: EnvState) -> dict[str, Array]:
        """Small per-step record for plots."""
        raise NotImplementedError
