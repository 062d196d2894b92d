"""Frames of task worlds: a fixed side camera per task, the world's own scene
and colours, and the time and end-effector height written on each frame.

    qpos = ...                                   # (T, nq) positions of one world (flapjax.render.rollout_qpos)
    images = task_frames(env, qpos, state, world=None)    # (T, H, W, 3) uint8

The camera (:data:`CAMERAS`) looks at the world from the side, fixed at the
world's start, nearly level, so the ground line stays where it is and a
6 cm hover looks 6 cm above the floor (which carries a 10 cm checker, see
:mod:`flapjax.sim.render`); ``camera="follow"`` tracks the robot instead.
Each world is drawn with its own randomized scene (wall pose, ground
height, box size) and colours.
"""

from __future__ import annotations

import jax
import numpy as np

from flapjax.sim.multirotor.backends import MJX
from flapjax.sim.render import annotate, frames
from flapjax.tasks.base import EnvState, TaskEnv
from flapjax.validation import ConfigError

#: Per task: camera ``distance`` [m], ``azimuth`` and ``elevation`` [deg], and
#: the height of the point it looks at above the ground [m] (``None``: the robot's start height).
CAMERAS = {
    "near_ground": dict(distance=1.4, azimuth=90.0, elevation=-4.0, target_height=0.25),
    "wall_contact": dict(distance=1.6, azimuth=90.0, elevation=-4.0, target_height=None),
    "object_push": dict(distance=1.6, azimuth=90.0, elevation=-35.0, target_height=0.1),
}
_DEFAULT_CAMERA = dict(distance=1.6, azimuth=90.0, elevation=-10.0, target_height=0.3)


def world_model_fields(env: TaskEnv, state: EnvState) -> dict[str, np.ndarray]:
    """Geometry and colours of one (unbatched) world for the renderer: the
    MJX scene model of its parameters (wall pose, ground height, box size)
    and its randomized ``geom_rgba``."""
    m = MJX.model(env.world, state.params)
    return dict(geom_pos=np.asarray(m.geom_pos), geom_quat=np.asarray(m.geom_quat),
                geom_size=np.asarray(m.geom_size), geom_rgba=np.asarray(state.task.common.rgba))


def camera_target(env: TaskEnv, state: EnvState, qpos0: np.ndarray) -> np.ndarray:
    """(3,) world point [m] the side camera looks at: above the robot's start
    (midway to the wall for ``wall_contact``), :data:`CAMERAS`' height above
    the ground (or the robot's start height)."""
    cam = CAMERAS.get(env.name, _DEFAULT_CAMERA)
    scene = state.params.scene
    x, y = float(qpos0[0]), float(qpos0[1])
    if env.name == "wall_contact":
        x = 0.5 * (x + float(scene.wall_x))
    z = float(qpos0[2]) if cam["target_height"] is None else float(scene.ground_height) + cam["target_height"]
    return np.array([x, y, z])


def ee_heights(env: TaskEnv, state: EnvState, qpos: np.ndarray) -> np.ndarray:
    """(T,) end-effector height above this world's ground [m] at each ``qpos`` (T, nq)."""
    qpos = np.asarray(qpos, np.float64)
    w, x, y, z = (qpos[:, 3 + k] for k in range(4))
    r_ee = np.asarray(state.params.profile.ee_position, np.float64)
    # z row of the body-to-world rotation matrix of a unit quaternion (w, x, y, z)
    row_z = np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1)
    return qpos[:, 2] + row_z @ r_ee - float(state.params.scene.ground_height)


def task_frames(env: TaskEnv, qpos: np.ndarray, states: EnvState, *, world: int | None = 0, stride: int = 1,
                width: int = 320, height: int = 240, camera: str = "side", distance: float | None = None,
                azimuth: float | None = None, elevation: float | None = None, overlay: bool = True) -> np.ndarray:
    """(T', height, width, 3) uint8 frames of one world.

    ``qpos``: (T, N, nq) with batched ``states`` (``world`` picks one, as
    :func:`flapjax.render.rollout_qpos` returns them), or (T, nq) with an
    unbatched ``states`` and ``world=None``; every ``stride``-th step is drawn
    (step ``k`` at time ``k * env.dt``). ``camera``: ``"side"`` (fixed, see
    :data:`CAMERAS`) or ``"follow"`` (tracks the robot); ``distance`` [m],
    ``azimuth``, ``elevation`` [deg] override the task's. ``overlay``: time
    [s] and end-effector height [m] in the top-left corner.
    """
    if camera not in ("side", "follow"):
        raise ConfigError(f"camera: must be 'side' or 'follow', got {camera!r}")
    qpos = np.asarray(qpos)
    if world is not None:
        qpos = qpos[:, world]
    state = states if world is None else jax.tree.map(lambda x: x[world], states)
    stride = max(int(stride), 1)
    qpos = qpos[::stride, :env.world.mj_model.nq]
    cam = dict(CAMERAS.get(env.name, _DEFAULT_CAMERA))
    for name, value in (("distance", distance), ("azimuth", azimuth), ("elevation", elevation)):
        if value is not None:
            cam[name] = float(value)
    view = dict(distance=cam["distance"], azimuth=cam["azimuth"], elevation=cam["elevation"])
    if camera == "side":
        view.update(track=None, lookat=camera_target(env, state, qpos[0]))
    images = frames(env.world.mj_model, qpos, model_fields=world_model_fields(env, state), width=width,
                    height=height, **view)
    if not overlay:
        return images
    heights = ee_heights(env, state, qpos)
    return np.stack([annotate(im, [f"t = {k * stride * env.dt:5.2f} s", f"ee height {h:6.3f} m"])
                     for k, (im, h) in enumerate(zip(images, heights))])


def task_frame(env: TaskEnv, state: EnvState, **kwargs) -> np.ndarray:
    """(height, width, 3) uint8 frame of one (unbatched) world ``state``."""
    qpos = np.asarray(state.world.data.qpos)[None]
    return task_frames(env, qpos, state, world=None, **kwargs)[0]
