"""Near-ground tracking: the end-effector follows a height profile that
descends to a few centimetres above the ground and climbs back.

Reference (end-effector centre height, world z, ground at 0)::

    z_ref(t) = z_0 + (z_c - z_0) s(t / t_0)         t < t_0
               z_c - (z_c - z_min) s((t - t_0) / T_d)    descent
               z_min                                hold for T_h
               z_min + (z_c - z_min) s(...)         climb
               z_c                                  until the end

with the smooth step ``s(u) = (1 - cos(pi u)) / 2`` and ``z_0`` the world's
start height (``z_c`` plus the randomized ``start_position`` offset): the
reference leaves from where the robot starts, so the metric measures
tracking rather than the settling from a randomized start. Near the bottom every
rotor is about ``z_min`` above the ground, where the Cheeseman–Bennett factor
adds 5-15 % thrust: a controller that ignores it is pushed up.

Metric: end-effector height RMSE over the episode (every physics step).
Success: RMSE <= ``success_rmse`` and no divergence.
Reward per step, in (0, 1]: ``exp(-(e / success_rmse)^2)`` with ``e`` the
height RMSE over the step's physics steps.

Reference controller: the profile as setpoint with velocity and acceleration
feed-forward; with ``compensate_ground_effect`` it also subtracts the thrust
the ground effect is expected to add at the reference height (nominal model).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.math import GRAVITY
from flapjax.rotor.proximity import ground_effect_factor
from flapjax.tasks import randomize
from flapjax.tasks.base import EnvState, TaskCommon, TaskEnv
from flapjax.tasks.config import TaskConfig
from flapjax.validation import ConfigError, check_positive, check_range


@dataclasses.dataclass(frozen=True)
class NearGroundConfig(TaskConfig):
    """Near-ground tracking settings (plus :class:`TaskConfig`).

    Attributes:
      cruise_height: z_c, end-effector height at start and end [m].
      min_height: z_min, lowest end-effector height [m].
      start_time: t_0, move from the start height to z_c before the descent [s].
      descent_time: T_d, duration of the descent and of the climb [s].
      hold_time: T_h, time at z_min [s].
      success_rmse: largest height RMSE counted as success [m].
      compensate_ground_effect: the reference controller feeds forward the
        nominal ground-effect thrust (off: the controller is unaware).
    """

    episode_length: int = 250
    cruise_height: float = 0.5
    min_height: float = 0.06
    start_time: float = 0.5
    descent_time: float = 1.5
    hold_time: float = 1.0
    success_rmse: float = 0.02
    compensate_ground_effect: bool = False

    def __post_init__(self):
        super().__post_init__()
        for name in ("cruise_height", "min_height", "descent_time", "hold_time", "success_rmse"):
            check_positive(name, getattr(self, name))
        check_range("start_time", self.start_time, 0.0, None)
        if self.min_height >= self.cruise_height:
            raise ConfigError(f"min_height: must be < cruise_height = {self.cruise_height:g} m, "
                              f"got {self.min_height:g} m")


class NearGroundTask(eqx.Module):
    """Per-world constants.

    Attributes:
      common: colours, observation key, start pose.
      ee_xy: (2,) horizontal end-effector setpoint [m].
    """

    common: TaskCommon
    ee_xy: Float[Array, "2"]


def _smooth(u):
    u = jnp.clip(u, 0.0, 1.0)
    return 0.5 * (1.0 - jnp.cos(jnp.pi * u)), 0.5 * jnp.pi * jnp.sin(jnp.pi * u), 0.5 * jnp.pi**2 * jnp.cos(jnp.pi * u) * ((u > 0) & (u < 1))


class NearGround(TaskEnv):
    """End-effector height tracking down to a few centimetres above the ground."""

    name: ClassVar[str] = "near_ground"
    config_class: ClassVar[type] = NearGroundConfig
    primary_metric: ClassVar[str] = "height_rmse"
    scenario_key: ClassVar[str] = "mass"
    metric_names: ClassVar[tuple[str, ...]] = ("height_error",)
    #: Observation entries after the common ones: reference minus measured end-effector height [m],
    #: reference height rate [m/s], reference height [m].
    task_obs_fields: ClassVar[tuple[tuple[str, int], ...]] = (
        ("height_error", 1), ("reference_height_rate", 1), ("reference_height", 1))

    def reference(self, t, start_height=None) -> tuple[Array, Array, Array]:
        """``(z_ref, dz_ref, ddz_ref)`` of the end-effector at time ``t`` [s]
        for a world whose end-effector starts at ``start_height`` [m]
        (default ``cruise_height``)."""
        c = self.config
        dz = c.min_height - c.cruise_height
        t1 = c.start_time
        t2 = t1 + c.descent_time
        t3 = t2 + c.hold_time
        s_dn, ds_dn, dds_dn = _smooth((t - t1) / c.descent_time)
        s_up, ds_up, dds_up = _smooth((t - t3) / c.descent_time)
        z = c.cruise_height + dz * (s_dn - s_up)
        v = dz * (ds_dn - ds_up) / c.descent_time
        a = dz * (dds_dn - dds_up) / c.descent_time**2
        if start_height is not None and t1 > 0:
            d0 = start_height - c.cruise_height  # the start offset, faded out over [0, t_0]
            s_in, ds_in, dds_in = _smooth(t / t1)
            z = z + d0 * (1.0 - s_in)
            v = v - d0 * ds_in / t1
            a = a - d0 * dds_in / t1**2
        return z, v, a

    def start_height(self, state: EnvState) -> Float[Array, ""]:
        """This world's end-effector start height above the ground [m]."""
        return state.task.common.start[2] + state.params.profile.ee_position[2] - state.params.scene.ground_height

    def _sample_task(self, key, params, common):
        off = self._offset(key, "start_position", randomize.START, (3,))
        ee0 = jnp.array([0.0, 0.0, self.config.cruise_height]) + off
        start = ee0 - params.profile.ee_position
        common = eqx.tree_at(lambda c: c.start, common, start)
        return NearGroundTask(common=common, ee_xy=ee0[:2]), start, jnp.zeros(()), None

    def _task_init_info(self):
        return dict(height_sq_error=jnp.zeros(()), height_samples=jnp.zeros(()), min_ee_height=jnp.full((), jnp.inf, float))

    def _task_obs(self, state, ee_obs):
        z, v, _ = self.reference(self.time(state), self.start_height(state))
        return jnp.stack([z - ee_obs[2], v, z]).astype(ee_obs.dtype)

    def _task_update(self, prev, new, infos):
        cfg = self.config
        k = prev.info["step"] * cfg.substeps + jnp.arange(cfg.substeps)
        z_ref, _, _ = self.reference(k.astype(jnp.float32) * cfg.physics_dt, self.start_height(new))
        z = infos.ee_position[:, 2] - new.params.scene.ground_height
        err = z - z_ref
        sq = jnp.sum(err**2)
        info = dict(height_sq_error=prev.info["height_sq_error"] + sq,
                    height_samples=prev.info["height_samples"] + cfg.substeps,
                    min_ee_height=jnp.minimum(prev.info["min_ee_height"], jnp.min(z)))
        rms = jnp.sqrt(sq / cfg.substeps)
        reward = jnp.exp(-(rms / cfg.success_rmse) ** 2)
        return reward, dict(height_error=rms), info

    def _task_summary(self, state):
        info = state.info
        rmse = jnp.sqrt(info["height_sq_error"] / jnp.maximum(info["height_samples"], 1.0))
        return dict(success=rmse <= self.config.success_rmse, height_rmse=rmse, min_ee_height=info["min_ee_height"])

    def ground_effect_feedforward(self, z_ee) -> Float[Array, ""]:
        """Vertical force [N] the nominal ground effect adds at end-effector
        height ``z_ee`` for a level hovering body (negated in the feed-forward)."""
        prof = self.profile
        # Level body: rotor i sits at z_ee - r_ee,z + p_i,z; its downwash ray
        # reaches the ground after that height over the axis' z component.
        h = (z_ee - prof.ee_position[2] + prof.positions[:, 2]) / jnp.maximum(prof.axes[:, 2], 1e-3)
        k = ground_effect_factor(h, prof.radius)
        t_hover = prof.mass * GRAVITY / jnp.sum(prof.axes[:, 2])
        return jnp.sum((k - 1.0) * t_hover * prof.axes[:, 2])

    def scripted_action(self, state):
        z, v, a = self.reference(self.time(state), self.start_height(state))
        m = self.profile.mass
        f_z = m * a
        if self.config.compensate_ground_effect:
            f_z = f_z - self.ground_effect_feedforward(z)
        xy = state.task.ee_xy
        zero = jnp.zeros_like(z)
        return jnp.stack([xy[0], xy[1], z, zero, zero, v, zero, zero, f_z, zero]).astype(jnp.float32)

    def trace(self, state):
        z_ref, _, _ = self.reference(self.time(state), self.start_height(state))
        return dict(ee_height=self.ee_position(state)[2] - state.params.scene.ground_height, ee_height_ref=z_ref)
