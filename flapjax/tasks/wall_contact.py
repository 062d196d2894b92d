"""Wall contact: approach a pitched wall, touch it with the end-effector and
hold a commanded normal force.

The wall passes through the contact point ``p_c = (wall_x, 0, contact_height)``
with outward normal ``n_w = (-cos beta, 0, -sin beta)`` (beta: pitch, > 0 leans
its top toward the robot). The robot starts with its end-effector
``start_distance`` out along ``n_w``. Phases: approach (``approach_time``),
force ramp (``ramp_time``) from 0 to ``normal_force``, hold (``hold_time``).

Contact force: the wall's push on the robot along ``n_w``, from MJX's
constraint force on the free joint (real contacts, every physics step).
Metrics over the hold phase: contact-force RMSE against the command and the
fraction of physics steps in contact (normal force > ``contact_threshold``).
Success: force RMSE <= ``success_force_rmse`` and contact fraction >=
``success_contact_fraction``.
Reward per step, in (0, 1]: during the approach ``exp(-(g / 0.05 m)^2)``
with ``g`` the end-effector distance to the contact point; from the force
ramp on ``exp(-(e / success_force_rmse)^2)`` with ``e`` the step's normal
force RMSE against the command.

Reference controller: a smooth approach along the normal to the touching
point (end-effector sphere tangent to the wall), then the same setpoint with
the commanded force as feed-forward pushing along ``-n_w``, corrected in
proportion to the last measured force error (``force_gain``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax import scene as sc
from flapjax.tasks import randomize
from flapjax.tasks.base import TaskCommon, TaskEnv
from flapjax.tasks.config import RandomizationConfig, TaskConfig
from flapjax.validation import check_positive, check_range


def _default_randomization():
    return RandomizationConfig(wall_pitch=(-0.35, 0.35), wall_x=(-0.1, 0.1))


@dataclasses.dataclass(frozen=True)
class WallContactConfig(TaskConfig):
    """Wall-contact settings (plus :class:`TaskConfig`).

    Attributes:
      wall_x: nominal x of the contact point [m].
      contact_height: z of the contact point (and of the wall's pitch pivot) [m].
      start_distance: initial gap between end-effector surface and wall [m].
      approach_time, ramp_time, hold_time: phase durations [s].
      normal_force: commanded normal force [N].
      contact_threshold: normal force counted as contact [N].
      success_force_rmse: largest hold-phase force RMSE counted as success [N].
      success_contact_fraction: smallest hold-phase contact fraction [-].
      force_gain: reference controller's proportional gain on the measured
        normal force error [-] (0: feed-forward only).
    """

    episode_length: int = 225
    randomization: RandomizationConfig = dataclasses.field(default_factory=_default_randomization)
    wall_x: float = 1.0
    contact_height: float = 1.0
    start_distance: float = 0.3
    approach_time: float = 2.0
    ramp_time: float = 0.5
    hold_time: float = 2.0
    normal_force: float = 2.0
    contact_threshold: float = 0.05
    success_force_rmse: float = 0.4
    success_contact_fraction: float = 0.9
    force_gain: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        for name in ("contact_height", "start_distance", "approach_time", "ramp_time", "hold_time",
                     "normal_force", "contact_threshold", "success_force_rmse"):
            check_positive(name, getattr(self, name))
        check_range("success_contact_fraction", self.success_contact_fraction, 0.0, 1.0)
        check_range("force_gain", self.force_gain, 0.0, 1.0)


class WallContactTask(eqx.Module):
    """Per-world constants.

    Attributes:
      common: colours, observation key, start pose.
      contact_point: (3,) end-effector centre when touching the wall [m].
      normal: (3,) wall's outward unit normal n_w [-].
      ee_start: (3,) end-effector start [m].
    """

    common: TaskCommon
    contact_point: Float[Array, "3"]
    normal: Float[Array, "3"]
    ee_start: Float[Array, "3"]


class WallContact(TaskEnv):
    """Touch a pitched wall and hold a normal force."""

    name: ClassVar[str] = "wall_contact"
    needs_contact: ClassVar[bool] = True
    config_class: ClassVar[type] = WallContactConfig
    primary_metric: ClassVar[str] = "force_rmse"
    scenario_key: ClassVar[str] = "wall_pitch"
    metric_names: ClassVar[tuple[str, ...]] = ("normal_force", "force_error")
    #: Observation entries after the common ones: contact point minus end-effector (3, world) [m],
    #: wall normal (3, world), commanded and last measured normal force [N].
    task_obs_fields: ClassVar[tuple[tuple[str, int], ...]] = (
        ("contact_offset", 3), ("wall_normal", 3), ("force_command", 1), ("normal_force", 1))

    def _nominal_scene(self):
        c = self.config
        return sc.Scene(wall_x=c.wall_x, wall_anchor_z=c.contact_height)

    def force_command(self, t) -> Float[Array, ""]:
        """Commanded normal force [N] at time ``t`` [s] (0 during the approach)."""
        c = self.config
        u = jnp.clip((t - c.approach_time) / c.ramp_time, 0.0, 1.0)
        return c.normal_force * u

    def _hold_start(self) -> float:
        return self.config.approach_time + self.config.ramp_time

    def _sample_task(self, key, params, common):
        c = self.config
        n_w = sc.wall_normal(params.scene)
        anchor = jnp.stack([params.scene.wall_x, jnp.zeros(()), params.scene.wall_anchor_z])
        r_ee = params.profile.ee_radius
        contact = anchor + n_w * r_ee
        off = self._offset(key, "start_position", randomize.START, (3,))
        ee0 = contact + n_w * c.start_distance + off
        start = ee0 - params.profile.ee_position
        common = eqx.tree_at(lambda q: q.start, common, start)
        return WallContactTask(common=common, contact_point=contact, normal=n_w, ee_start=ee0), start, jnp.zeros(()), None

    def _task_init_info(self):
        z = jnp.zeros(())
        return dict(force_sq_error=z, hold_samples=z, contact_samples=z)

    def _task_obs(self, state, ee_obs):
        t = self.time(state)
        task = state.task
        rel = task.contact_point - ee_obs
        return jnp.concatenate([rel, task.normal, self.force_command(t)[None], state.metrics["normal_force"][None]
                                .astype(rel.dtype)])

    def _task_update(self, prev, new, infos):
        cfg = self.config
        k = prev.info["step"] * cfg.substeps + jnp.arange(cfg.substeps)
        t = k.astype(jnp.float32) * cfg.physics_dt
        f_n = infos.constraint_force @ new.task.normal
        f_cmd = self.force_command(t)
        hold = (t >= self._hold_start()).astype(f_n.dtype)
        err = f_n - f_cmd
        info = dict(force_sq_error=prev.info["force_sq_error"] + jnp.sum(hold * err**2),
                    hold_samples=prev.info["hold_samples"] + jnp.sum(hold),
                    contact_samples=prev.info["contact_samples"] + jnp.sum(hold * (f_n > cfg.contact_threshold)))
        ee = self.ee_position(new)
        gap = jnp.linalg.norm(ee - new.task.contact_point)
        in_force = (t[-1] >= cfg.approach_time)
        rms = jnp.sqrt(jnp.mean(err**2))
        reward = jnp.where(in_force, jnp.exp(-(rms / cfg.success_force_rmse) ** 2), jnp.exp(-(gap / 0.05) ** 2))
        return reward, dict(normal_force=jnp.mean(f_n), force_error=rms), info

    def _task_summary(self, state):
        c = self.config
        info = state.info
        n = jnp.maximum(info["hold_samples"], 1.0)
        rmse = jnp.sqrt(info["force_sq_error"] / n)
        frac = info["contact_samples"] / n
        return dict(success=(rmse <= c.success_force_rmse) & (frac >= c.success_contact_fraction),
                    force_rmse=rmse, contact_fraction=frac)

    def scripted_action(self, state):
        c = self.config
        t = self.time(state)
        task = state.task
        u = jnp.clip(t / c.approach_time, 0.0, 1.0)
        # Minimum-jerk blend from the start to the touching point.
        s = u**3 * (10.0 - 15.0 * u + 6.0 * u**2)
        ds = 30.0 * u**2 * (1.0 - u) ** 2 / c.approach_time
        delta = task.contact_point - task.ee_start
        p = task.ee_start + s * delta
        v = ds * delta
        f_cmd = self.force_command(t)
        # Proportional correction on the last measured normal force, once pushing.
        pushing = t >= c.approach_time + 0.5 * c.ramp_time
        f_meas = state.metrics["normal_force"].astype(f_cmd.dtype)
        f_n = f_cmd + jnp.where(pushing, c.force_gain * (f_cmd - f_meas), 0.0)
        f = -f_n * task.normal
        return jnp.concatenate([p, v, f, jnp.zeros(1)]).astype(jnp.float32)

    def trace(self, state):
        return dict(normal_force=state.metrics["normal_force"], force_command=self.force_command(self.time(state)))
