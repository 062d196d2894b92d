"""Task configuration: noise, domain randomization, effects, overrides.

Every task is configured by a frozen dataclass (hashable, so a configuration
can key compiled functions) built from :class:`TaskConfig`. Sensor and command
noise (:class:`NoiseConfig`) and domain randomization
(:class:`RandomizationConfig`) are separate settings with separate PRNG
streams; :func:`config_to_dict` writes all of them into every report.

Ranges are ``(lo, hi)`` tuples; ``*_scale`` ranges multiply the nominal value.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping

from flapjax.noise import CommandNoise, NoiseParams, SensorNoise
from flapjax.rotor.chain import ChainOptions
from flapjax.rotor.profile_files import PROFILE_SUFFIXES
from flapjax.safe_io import check_input_file
from flapjax.validation import (ConfigError, as_float_array, check_bool, check_choice, check_int, check_number,
                                check_range)

#: Physical effects that can be switched off for an ablation (ChainOptions flags).
EFFECTS = ("saturation", "actuator", "ground_effect", "wall_effect", "drag", "wind", "gusts", "turbulence")
ACTION_MODES = ("setpoint", "wrench", "residual")
#: Physics backends of a task world (``rigid``: contact-free, for tasks that need no contact).
TASK_BACKENDS = ("mjx", "rigid")


def _range(name: str, value: Any, lo: float | None = None, hi: float | None = None) -> tuple[float, float]:
    arr = as_float_array(name, value, (2,))
    if arr[0] > arr[1]:
        raise ConfigError(f"{name}: range must be (lo, hi) with lo <= hi, got {arr.tolist()}")
    check_range(name, arr, lo, hi)
    return float(arr[0]), float(arr[1])


#: Largest noise standard deviations accepted (beyond them the state estimate
#: says nothing about the state) [m, m/s, rad, rad/s, N].
NOISE_STD_MAX = dict(sensor_position_std=1.0, sensor_velocity_std=10.0, sensor_attitude_std=1.0,
                     sensor_rate_std=10.0, command_thrust_std=100.0)
#: Smallest physics step [s] (a smaller one only burns compute: 1e-300 never ends).
MIN_PHYSICS_DT = 1e-6
#: Randomization bounds: offsets [m], factors on a nominal value [-], near-wall coefficients [-].
MAX_OFFSET, MAX_SCALE, MAX_PROXIMITY_COEFF = 10.0, 10.0, 1.0
#: Largest residual_scale: end-effector position [m], velocity [m/s], force [N], yaw [rad].
MAX_RESIDUAL_SCALE = (1.0, 10.0, 100.0, 3.141592653589793)
#: Largest substeps, episode_length and solver iteration counts accepted.
MAX_COUNTS = dict(substeps=1000, episode_length=10_000_000, solver_iterations=1000, solver_ls_iterations=1000)


@dataclasses.dataclass(frozen=True)
class NoiseConfig:
    """Sensor and command noise (white, Gaussian, per axis).

    The defaults are a small, motion-capture-like level (so nominal worlds
    still differ in their noise draws); :meth:`off` gives noise-free worlds.

    Attributes:
      sensor_position_std: position noise of the state estimate and the
        observation [m].
      sensor_velocity_std: velocity noise [m/s].
      sensor_attitude_std: attitude noise (small rotation about body axes) [rad].
      sensor_rate_std: body-rate noise [rad/s].
      command_thrust_std: per-rotor thrust command noise before the clamp [N].
    """

    sensor_position_std: float = 0.002
    sensor_velocity_std: float = 0.01
    sensor_attitude_std: float = 0.002
    sensor_rate_std: float = 0.01
    command_thrust_std: float = 0.02

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = check_number(f.name, getattr(self, f.name), 0.0, NOISE_STD_MAX[f.name])
            object.__setattr__(self, f.name, v)

    @classmethod
    def off(cls) -> "NoiseConfig":
        """No sensor and no command noise."""
        return cls(0.0, 0.0, 0.0, 0.0, 0.0)

    def params(self) -> NoiseParams:
        """The :class:`~flapjax.noise.NoiseParams` pytree of one world."""
        s = self
        return NoiseParams(
            sensor=SensorNoise(position_std=(s.sensor_position_std,) * 3, velocity_std=(s.sensor_velocity_std,) * 3,
                               attitude_std=(s.sensor_attitude_std,) * 3, rate_std=(s.sensor_rate_std,) * 3),
            command=CommandNoise(thrust_std=s.command_thrust_std),
        )


@dataclasses.dataclass(frozen=True)
class RandomizationConfig:
    """Per-world domain randomization (uniform draws from the randomization stream).

    With ``enabled=False`` every world is nominal; the ranges still appear in
    reports so a result states what "randomized" would have meant.

    Attributes:
      enabled: draw per-world values from the ranges below.
      wall_pitch: wall tilt from vertical [rad] (absolute, |beta| <= 45 deg).
      wall_x: offset of the wall position along x [m].
      friction_scale: factor on the nominal ground, wall and box friction [-].
      object_position: offset of the box (x and y, each) [m].
      object_yaw: box heading [rad].
      start_position: offset of the robot's start (x, y and z, each) [m].
      goal_position: offset of the goal (x and y, each) [m].
      texture: randomize geom colours (``geom_rgba``) when enabled.
      colour_jitter: half-width of the uniform RGB perturbation [-].
      mass_scale: factor on the airframe mass [-].
      inertia_scale: factor on the principal inertia [-].
      thrust_scale: factor on each rotor's thrust constant (T_max, T_min) [-].
      torque_scale: factor on each rotor's torque coefficient kappa [-].
      time_constant_scale: factor on each rotor's actuator time constant [-].
      wall_thrust_coeff: near-wall thrust coefficient c_T (absolute) [-].
      wall_lateral_coeff: near-wall lateral coefficient c_L (absolute) [-].
    """

    enabled: bool = False
    wall_pitch: tuple[float, float] = (0.0, 0.0)
    wall_x: tuple[float, float] = (0.0, 0.0)
    friction_scale: tuple[float, float] = (0.7, 1.3)
    object_position: tuple[float, float] = (0.0, 0.0)
    object_yaw: tuple[float, float] = (0.0, 0.0)
    start_position: tuple[float, float] = (-0.05, 0.05)
    goal_position: tuple[float, float] = (0.0, 0.0)
    texture: bool = True
    colour_jitter: float = 0.3
    mass_scale: tuple[float, float] = (0.9, 1.1)
    inertia_scale: tuple[float, float] = (0.9, 1.1)
    thrust_scale: tuple[float, float] = (0.92, 1.08)
    torque_scale: tuple[float, float] = (0.8, 1.2)
    time_constant_scale: tuple[float, float] = (0.8, 1.2)
    wall_thrust_coeff: tuple[float, float] = (0.0, 0.1)
    wall_lateral_coeff: tuple[float, float] = (0.0, 0.1)

    def __post_init__(self):
        object.__setattr__(self, "enabled", check_bool("enabled", self.enabled))  # "no" is not False
        object.__setattr__(self, "texture", check_bool("texture", self.texture))
        as_float_array("colour_jitter", self.colour_jitter, ())
        check_range("colour_jitter", self.colour_jitter, 0.0, 1.0)
        object.__setattr__(self, "colour_jitter", float(self.colour_jitter))
        off, scale, coeff = (-MAX_OFFSET, MAX_OFFSET), (1e-3, MAX_SCALE), (0.0, MAX_PROXIMITY_COEFF)
        bounds = dict(wall_pitch=(-0.7853981633974483, 0.7853981633974483), friction_scale=scale,
                      object_yaw=(-3.141592653589793, 3.141592653589793), mass_scale=scale, inertia_scale=scale,
                      thrust_scale=scale, torque_scale=(0.0, MAX_SCALE), time_constant_scale=scale,
                      wall_thrust_coeff=coeff, wall_lateral_coeff=coeff, wall_x=off, object_position=off,
                      start_position=off, goal_position=off)
        for f in dataclasses.fields(self):
            if f.name in ("enabled", "texture", "colour_jitter"):
                continue
            lo, hi = bounds.get(f.name, (None, None))
            object.__setattr__(self, f.name, _range(f.name, getattr(self, f.name), lo, hi))


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """Settings shared by every task.

    Attributes:
      robot: preset name (``quad_x``, ``hexa``, ``hexa_tilted``) or the path
        of a profile file (``.toml`` / ``.json``, read by
        :func:`flapjax.rotor.load_profile`; validated here, at construction).
      physics_dt: MJX step [s].
      substeps: physics steps per environment step (the agent's period is
        ``physics_dt * substeps``).
      episode_length: environment steps per episode.
      action_mode: ``"setpoint"`` (end-effector reference for the geometric
        wrench controller, see :mod:`flapjax.tasks.base`) or ``"wrench"``
        (desired body wrench, straight into the rotor chain) or
        ``"residual"`` (a correction in [-1, 1] of the reference controller's
        setpoint, scaled by ``residual_scale``; for learning).
      residual_scale: what an action of 1 adds in ``"residual"`` mode:
        ``(end-effector position [m], its velocity [m/s], feed-forward force
        [N], yaw [rad])``.
      backend: ``"mjx"`` (MuJoCo MJX, real contacts) or ``"rigid"`` (the
        contact-free pure-JAX body, for tasks that need no contact; a world
        whose robot reaches a surface ends its episode as a failure).
      disabled_effects: physical effects switched off (names in :data:`EFFECTS`).
      noise: sensor and command noise.
      randomization: domain randomization.
      solver_iterations, solver_ls_iterations: MJX solver iterations.
      chain_coefficients: path of an identified ``results.json``
        (:func:`flapjax.runs.run_hover_identification`) whose
        proximity and drag coefficients replace the chain's defaults; when
        None, a profile file's ``[chain]`` table is used if it has one
        (:meth:`chain_params`).
    """

    robot: str = "quad_x"
    physics_dt: float = 0.004
    substeps: int = 5
    episode_length: int = 250
    action_mode: str = "setpoint"
    residual_scale: tuple[float, float, float, float] = (0.05, 0.25, 2.0, 0.2)
    backend: str = "mjx"
    disabled_effects: tuple[str, ...] = ()
    noise: NoiseConfig = dataclasses.field(default_factory=NoiseConfig)
    randomization: RandomizationConfig = dataclasses.field(default_factory=RandomizationConfig)
    solver_iterations: int = 2
    solver_ls_iterations: int = 4
    chain_coefficients: str | None = None

    def __post_init__(self):
        if not isinstance(self.robot, str):
            raise ConfigError(f"robot: must be a preset name or a profile file path, got {self.robot!r}")
        self.load_profile()  # an unknown preset or a bad file fails here, naming the field
        check_number("physics_dt", self.physics_dt, MIN_PHYSICS_DT, 0.01)
        for name in ("substeps", "episode_length", "solver_iterations", "solver_ls_iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{name}: must be an integer >= 1, got {v!r}")
            check_int(name, v, 1, MAX_COUNTS[name])
        check_choice("action_mode", self.action_mode, ACTION_MODES)
        check_choice("backend", self.backend, TASK_BACKENDS)
        scale = as_float_array("residual_scale", self.residual_scale, (4,))
        for i, (part, hi) in enumerate(zip(("position", "velocity", "force", "yaw"), MAX_RESIDUAL_SCALE)):
            check_range(f"residual_scale[{i}] ({part})", scale[i], 0.0, hi)
        object.__setattr__(self, "residual_scale", tuple(float(x) for x in scale))
        object.__setattr__(self, "disabled_effects", tuple(self.disabled_effects))
        for e in self.disabled_effects:
            check_choice("disabled_effects", e, EFFECTS)
        if not isinstance(self.noise, NoiseConfig):
            raise ConfigError(f"noise: must be a NoiseConfig, got {type(self.noise).__name__}")
        if not isinstance(self.randomization, RandomizationConfig):
            raise ConfigError(f"randomization: must be a RandomizationConfig, got {type(self.randomization).__name__}")
        if self.chain_coefficients is not None:
            if not isinstance(self.chain_coefficients, str):
                raise ConfigError(f"chain_coefficients: must be the path of a results.json, got {self.chain_coefficients!r}")
            try:
                self.chain_params()  # a bad file fails here, naming the field
            except ConfigError as exc:
                raise ConfigError(f"chain_coefficients: {exc}") from None
            _warn_if_fitted_on_another_robot(self.chain_coefficients, self.robot, "chain_coefficients")
        elif self.robot_is_file:
            from flapjax.rotor.identified import chain_results_path

            try:
                self.chain_params()
                results = chain_results_path(self.robot)
            except ConfigError as exc:
                raise ConfigError(f"robot: {exc}") from None
            if results is not None:
                _warn_if_fitted_on_another_robot(str(results), self.robot, f"robot: {self.robot}'s [chain] results")

    @property
    def robot_is_file(self) -> bool:
        """``robot`` names a profile file rather than a preset."""
        return self.robot.lower().endswith(PROFILE_SUFFIXES)

    def load_profile(self):
        """The robot's :class:`~flapjax.rotor.RotorProfile` (preset or file)."""
        from flapjax import rotor

        return rotor.resolve_profile(self.robot, field="robot")

    def chain_params(self):
        """The nominal :class:`~flapjax.rotor.ChainParams` of the task's
        worlds: the defaults, with identified coefficients from
        ``chain_coefficients`` or else from the profile file's ``[chain]``
        table (:func:`flapjax.rotor.identified.load_chain_params`)."""
        from flapjax.rotor import identified as coefficients
        from flapjax.rotor.chain import ChainParams

        if self.chain_coefficients is not None:
            _check_results_file(self.chain_coefficients)
            return coefficients.chain_params_from_results(self.chain_coefficients)
        if self.robot_is_file:
            _check_results_file(coefficients.chain_results_path(self.robot))
            return coefficients.load_chain_params(self.robot)
        return ChainParams()

    @property
    def env_dt(self) -> float:
        """Environment step [s]."""
        return self.physics_dt * self.substeps

    def chain_options(self) -> ChainOptions:
        """Static chain switches: every effect on unless disabled; command
        noise on exactly when its standard deviation is positive."""
        flags = {e: e not in self.disabled_effects for e in EFFECTS}
        return ChainOptions(**flags, command_noise=self.noise.command_thrust_std > 0.0)


def replace_config(config, overrides: Mapping[str, Any] | None = None, **kwargs):
    """A copy of ``config`` with fields replaced; nested dataclasses accept
    mappings (``{"noise": {"sensor_position_std": 0.01}}``) or dotted keys
    (``{"noise.sensor_position_std": 0.01}``). Unknown names raise
    :class:`~flapjax.ConfigError` naming the field and the allowed ones."""
    items = dict(overrides or {})
    items.update(kwargs)
    nested: dict[str, dict[str, Any]] = {}
    flat: dict[str, Any] = {}
    for key, value in items.items():
        head, _, rest = key.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            flat[key] = value
    names = {f.name for f in dataclasses.fields(config)}
    for key in list(flat) + list(nested):
        if key not in names:
            raise ConfigError(f"{key}: unknown field of {type(config).__name__}; allowed: {sorted(names)}")
    for key, sub in nested.items():
        if key in flat:
            raise ConfigError(f"{key}: given both whole and by dotted keys ({', '.join(f'{key}.{k}' for k in sub)}); "
                              "give one form")
        base = getattr(config, key)
        if not dataclasses.is_dataclass(base):
            raise ConfigError(f"{key}.{next(iter(sub))}: {key} is a single value of {type(config).__name__}, not a "
                              f"section with fields; set {key} itself")
        flat[key] = replace_config(base, sub)
    for key, value in list(flat.items()):
        current = getattr(config, key)
        if dataclasses.is_dataclass(current) and isinstance(value, Mapping):
            flat[key] = replace_config(current, value)
        elif key == "disabled_effects" and isinstance(value, str):
            flat[key] = (value,)
    return dataclasses.replace(config, **flat)


def _check_results_file(path: str | os.PathLike | None) -> None:
    """Refuse, without opening it, a results file that is there but is a
    device (``/dev/zero`` never ends), a FIFO, a folder or above the input
    limit (:func:`flapjax.safe_io.check_input_file`); a missing one is left
    to the reader, which says so."""
    if path is not None and os.path.lexists(path):
        check_input_file(path, what="results file")


def config_to_dict(config) -> dict[str, Any]:
    """JSON-ready dict of a configuration (tuples become lists)."""
    def conv(x):
        if dataclasses.is_dataclass(x):
            return {f.name: conv(getattr(x, f.name)) for f in dataclasses.fields(x)}
        if isinstance(x, (tuple, list)):
            return [conv(v) for v in x]
        return x

    out = conv(config)
    out["env_dt"] = config.env_dt
    return out


def _warn_if_fitted_on_another_robot(results_path: str, robot: str, field: str) -> None:
    """Warn when a hover fit's ``results.json`` names another airframe than
    the task flies (the coefficients still load: a sister airframe may share
    them, but the fit folded its own mass and rotor errors into them);
    ``field`` names where the task config took the file from."""
    import warnings

    from flapjax.files import read_json
    from flapjax.rotor.profile_files import resolve_profile

    results = read_json(results_path)
    fitted = results.get("robot") if isinstance(results, Mapping) else None
    flown = resolve_profile(robot, field="robot").name
    if fitted is not None and fitted != flown:
        warnings.warn(f"{field}: {results_path} was identified on robot {fitted!r}; this task flies "
                      f"{flown!r}", UserWarning, stacklevel=3)
