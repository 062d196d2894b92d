"""Object push: push a box lying on the ground to a goal with the end-effector.

The box (a free MJX body, real contacts with ground and end-effector) starts
at ``box_position`` with heading ``box_yaw``; the goal is a point on the
ground. The robot flies low (end-effector at ``push_height``), so its rotors
are in ground effect and the contact with the box loads its attitude loop.
Box-ground friction is the box's friction (the ground's is lower and MuJoCo
takes the larger of the two), randomized with ``friction_scale``.

Metric: final horizontal distance of the box centre to the goal.
Success: final error <= ``success_distance``.
Reward per step, in (0, 1] so that a failure's 0 never pays:
``0.9 exp(-d / D) + 0.1 exp(-r / D)`` with ``d`` the box-goal distance,
``r`` the horizontal end-effector-box distance and ``D = 4 success_distance``.

Observation: the box pose as the motion-capture sensor reports it (the
robot's position and heading noise, :meth:`ObjectPush.observed_box_pose`).

Reference controller (heading fixed at the start): from the exact box pose
(a privileged baseline: it also reads the exact end-effector position), aim
along ``u`` (box -> goal); the end-effector target sits behind the box centre,
``push_depth`` into its face, or further back while
lining up and once arrived; a carrot at most 5 cm ahead of the end-effector
limits the speed to about ``push_speed``; while touching, a feed-forward
force along ``u`` sized for the nominal friction, plus the horizontal part
of the wrench controller's integral action cancelled (it winds up while the
box holds the end-effector back and would shove the box past the goal).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax import rng
from flapjax import scene as sc
from flapjax.math import GRAVITY, safe_norm
from flapjax.tasks import randomize
from flapjax.tasks.base import TaskCommon, TaskEnv
from flapjax.tasks.config import RandomizationConfig, TaskConfig
from flapjax.validation import check_positive

BOX_HALF = 0.08
BOX_MASS = 0.3  # the MJCF default of flapjax.sim.multirotor.model


def _default_randomization():
    return RandomizationConfig(object_position=(-0.1, 0.1), object_yaw=(-0.4, 0.4), goal_position=(-0.1, 0.1),
                               friction_scale=(0.6, 1.4), start_position=(-0.03, 0.03))


@dataclasses.dataclass(frozen=True)
class ObjectPushConfig(TaskConfig):
    """Object-push settings (plus :class:`TaskConfig`).

    The box's contacts need more solver iterations than flight near a plane
    (with 2 the pushed box bounces and tumbles), hence 6 / 8 by default.

    Attributes:
      box_x: nominal x of the box centre [m] (y = 0).
      goal_x: nominal x of the goal [m] (y = 0).
      box_friction: nominal box-ground friction [-].
      ground_friction: ground friction (kept below the box's) [-].
      push_height: end-effector height while pushing [m].
      push_speed: reference controller's pushing speed [m/s].
      push_depth: how far the setpoint sits inside the box [m].
      success_distance: largest final box-goal distance counted as success [m].
    """

    episode_length: int = 350
    solver_iterations: int = 6
    solver_ls_iterations: int = 8
    randomization: RandomizationConfig = dataclasses.field(default_factory=_default_randomization)
    box_x: float = 0.6
    goal_x: float = 1.0
    box_friction: float = 0.5
    ground_friction: float = 0.1
    push_height: float = 0.08
    push_speed: float = 0.2
    push_depth: float = 0.02
    success_distance: float = 0.05

    def __post_init__(self):
        super().__post_init__()
        for name in ("box_friction", "ground_friction", "push_height", "push_speed", "success_distance"):
            check_positive(name, getattr(self, name))
        check_positive("push_depth", self.push_depth, allow_zero=True)


class ObjectPushTask(eqx.Module):
    """Per-world constants.

    Attributes:
      common: colours, observation key, start pose.
      goal: (2,) goal of the box centre, world x-y [m].
      box_start: (2,) initial box centre, world x-y [m].
    """

    common: TaskCommon
    goal: Float[Array, "2"]
    box_start: Float[Array, "2"]


class ObjectPush(TaskEnv):
    """Push a box on the ground to a goal."""

    name: ClassVar[str] = "object_push"
    needs_contact: ClassVar[bool] = True
    config_class: ClassVar[type] = ObjectPushConfig
    with_box: ClassVar[bool] = True
    box_half_size: ClassVar[tuple[float, float, float]] = (BOX_HALF, BOX_HALF, BOX_HALF)
    primary_metric: ClassVar[str] = "final_error"
    scenario_key: ClassVar[str] = "box_friction"
    metric_names: ClassVar[tuple[str, ...]] = ("box_distance",)
    #: Observation entries after the common ones: box minus end-effector (3, world) [m], cosine and
    #: sine of the box heading, goal minus box (2, world) [m].
    task_obs_fields: ClassVar[tuple[tuple[str, int], ...]] = (
        ("box_offset", 3), ("box_heading", 2), ("goal_offset", 2))

    def _nominal_scene(self):
        c = self.config
        return sc.Scene(wall_x=10.0, ground_friction=c.ground_friction, box_friction=c.box_friction,
                        box_half_size=self.box_half_size)

    def box_pose(self, state) -> tuple[Float[Array, "3"], Float[Array, ""]]:
        """Box centre (3,) [m] and heading () [rad]."""
        q = state.world.data.qpos.astype(state.params.profile.mass.dtype)
        quat = q[10:14]
        yaw = jnp.arctan2(2.0 * (quat[0] * quat[3] + quat[1] * quat[2]), 1.0 - 2.0 * (quat[2] ** 2 + quat[3] ** 2))
        return q[7:10], yaw

    def _sample_task(self, key, params, common):
        c = self.config
        box_xy = jnp.array([c.box_x, 0.0]) + self._offset(key, "object_position", randomize.OBJECT, (2,))
        box_yaw = self._offset(key, "object_yaw", randomize.OBJECT + 100, ())
        goal = jnp.array([c.goal_x, 0.0]) + self._offset(key, "goal_position", randomize.GOAL, (2,))
        u = (goal - box_xy) / safe_norm(goal - box_xy)
        ee_xy = box_xy - u * (BOX_HALF + params.profile.ee_radius + 0.25)
        off = self._offset(key, "start_position", randomize.START, (3,))
        yaw = jnp.arctan2(u[1], u[0])
        c_, s_ = jnp.cos(yaw), jnp.sin(yaw)
        r = params.profile.ee_position
        start = jnp.stack([ee_xy[0] - (c_ * r[0] - s_ * r[1]), ee_xy[1] - (s_ * r[0] + c_ * r[1]),
                           c.push_height + 0.1 - r[2]]) + off
        common = eqx.tree_at(lambda q: (q.start, q.yaw), common, (start, yaw))
        box = jnp.stack([box_xy[0], box_xy[1], params.scene.ground_height + BOX_HALF])
        return ObjectPushTask(common=common, goal=goal, box_start=box_xy), start, yaw, (box, box_yaw)

    def observed_box_pose(self, state) -> tuple[Float[Array, "3"], Float[Array, ""]]:
        """Box centre (3,) [m] and heading () [rad] as the motion-capture
        sensor reports them: the exact pose plus the sensor's position noise
        (``position_std``) and heading noise (``attitude_std[2]``), drawn from
        the observation stream after the robot's 12 draws of the step."""
        box, yaw = self.box_pose(state)
        sensor = state.params.noise.sensor
        z = rng.normals(state.task.common.obs_key, state.info["step"], 16, box.dtype)[12:]
        return (box + sensor.position_std.astype(box.dtype) * z[:3],
                yaw + sensor.attitude_std[2].astype(box.dtype) * z[3])

    def _task_obs(self, state, ee_obs):
        box, yaw = self.observed_box_pose(state)
        return jnp.concatenate([box - ee_obs, jnp.stack([jnp.cos(yaw), jnp.sin(yaw)]),
                                state.task.goal - box[:2]]).astype(ee_obs.dtype)

    def _task_update(self, prev, new, infos):
        box, _ = self.box_pose(new)
        dist = safe_norm(new.task.goal - box[:2])
        reach = safe_norm(self.ee_position(new)[:2] - box[:2])
        scale = 4.0 * self.config.success_distance
        reward = 0.9 * jnp.exp(-dist / scale) + 0.1 * jnp.exp(-reach / scale)
        return reward, dict(box_distance=dist), {}

    def _task_summary(self, state):
        box, _ = self.box_pose(state)
        err = safe_norm(state.task.goal - box[:2])
        moved = safe_norm(box[:2] - state.task.box_start)
        return dict(success=err <= self.config.success_distance, final_error=err, box_travel=moved)

    def scenario(self, state):
        out = super().scenario(state)
        out["box_friction"] = state.params.scene.box_friction
        return out

    def scripted_action(self, state):
        c = self.config
        box, _ = self.box_pose(state)
        ee = self.ee_position(state)
        to_goal = state.task.goal - box[:2]
        dist = safe_norm(to_goal)
        u = to_goal / jnp.maximum(dist, 1e-6)
        stand = BOX_HALF + self.profile.ee_radius
        rel = ee[:2] - box[:2]
        along = rel @ u
        lateral = rel - along * u
        behind = (along < -stand + 0.03) & (safe_norm(lateral) < BOX_HALF)
        arrived = dist < 0.5 * c.success_distance
        slow = jnp.clip(dist / 0.1, 0.3, 1.0)
        # Where the end-effector should be: pressed push_depth into the box's
        # face behind its centre; well behind the box while lining up; straight
        # back from the box once it has arrived.
        target = jnp.where(behind, box[:2] - u * (stand - c.push_depth), box[:2] - u * (stand + 0.08))
        away = rel / jnp.maximum(safe_norm(rel), 1e-6)
        target = jnp.where(arrived, ee[:2] + away * 0.05, target)
        # A carrot at most `lead` ahead of the end-effector limits the speed.
        lead = 0.05
        d = target - ee[:2]
        d_norm = safe_norm(d)
        step = d * jnp.minimum(1.0, lead / jnp.maximum(d_norm, 1e-6))
        xy = ee[:2] + step
        v = c.push_speed * slow * step / lead
        touching = behind & (along > -stand - 0.01) & ~arrived
        f = jnp.where(touching, c.box_friction * BOX_MASS * GRAVITY, 0.0) * u
        # The wrench controller's position integral winds up while the box
        # holds the end-effector back and would shove the box past the goal:
        # cancel its horizontal part (this controller knows the low level).
        wind_up = state.params.gains.integral * state.world.controller.integral
        f = f + wind_up[:2].astype(f.dtype)
        yaw = state.task.common.yaw
        z = jnp.asarray(c.push_height, xy.dtype)
        zero = jnp.zeros_like(z)
        return jnp.stack([xy[0], xy[1], z, v[0], v[1], zero, f[0], f[1], zero, yaw]).astype(jnp.float32)

    def trace(self, state):
        box, _ = self.box_pose(state)
        return dict(box_x=box[0], box_y=box[1], box_distance=state.metrics["box_distance"])
