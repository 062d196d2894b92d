"""Frames and videos of task worlds, with MuJoCo's own renderer.

    from flapjax import render, tasks
    env = tasks.make("near_ground", **{"randomization.enabled": True})
    qpos, states = render.rollout_qpos(env, n_worlds=4)       # (T + 1, 4, nq) and the reset states
    images = render.task_frames(env, qpos, states, world=2)   # (T + 1, H, W, 3) uint8 of world 2
    render.write_video(images, "out/world2.mp4", fps=render.video_fps(env))  # or .gif

The flapping-wing robot: :func:`flapper_hover_qpos` flies the free robot
in closed-loop hover (:func:`flapjax.sim.flapper.hover_rollout`) and keeps
its ``qpos`` every few steps; :func:`flapper_frames` draws a ``qpos``
trajectory (that one, or e.g. ``flapper.rollout(..., observe=lambda s, o:
s.data.qpos)`` of the fixed-base rig) with its wings, over a ground plane::

    qpos = render.flapper_hover_qpos(n_frames=40, steps_per_frame=25)   # (41, nq), 0.1 s of hover
    images = render.flapper_frames("free", qpos)
    render.write_video(images, "out/flapper_hover.gif", fps=20)

Each world is drawn with its own scene (randomized wall pose, ground height)
and colours (the texture randomization), from a fixed side camera per task
over a checkered floor with shadows, with the time and end-effector height
written on each frame (:mod:`flapjax.tasks.view`; ``camera="follow"`` tracks
the robot).
Either backend: rigid-backend worlds are drawn with the MJX scene model of
the same parameters. Headless machines: ``MUJOCO_GL=egl`` (see
:mod:`flapjax.sim.render`). Videos need the ``render`` extra
(``pip install -e ".[render]"``: imageio, and imageio-ffmpeg for MP4).
"""

from __future__ import annotations

import pathlib
from typing import Callable, Sequence

import jax
import numpy as np

from flapjax.sim.render import FrameRenderer, frames
from flapjax.tasks.actions import resolve_controller, world_keys
from flapjax.tasks.adapters import require
from flapjax.tasks.base import EnvState, TaskEnv
from flapjax.tasks.view import task_frame, task_frames, world_model_fields
from flapjax.validation import ConfigError

__all__ = ["FrameRenderer", "flapper_frames", "flapper_hover_qpos", "frames", "rollout_qpos", "task_frame", "task_frames", "task_videos", "video_fps",
           "world_model_fields", "write_video"]

VIDEO_SUFFIXES = (".mp4", ".gif")


def rollout_qpos(env: TaskEnv, n_worlds: int, *, seed: int = 0, noise_seed: int | None = None,
                 controller: Callable | None = None, worlds: Sequence[int] | None = None,
                 length: int | None = None) -> tuple[np.ndarray, EnvState]:
    """Run worlds of ``env`` and record their ``qpos`` at every environment step.

    World ``i`` has the key of world ``i`` of ``flapjax.tasks.actions.world_keys(n_worlds, seed,
    noise_seed)`` (the same worlds an evaluation of ``n_worlds`` runs);
    ``worlds`` picks which (default: all). ``controller(state) -> action``
    defaults to the task's reference controller; ``length`` to the episode.

    Returns:
      ``(qpos, states)``: (length + 1, len(worlds), nq) positions (the reset
      first) and the batched reset :class:`EnvState`.
    """
    keys, noise_keys = world_keys(n_worlds, seed, noise_seed)
    idx = np.arange(n_worlds) if worlds is None else np.asarray(worlds)
    if idx.size == 0 or idx.min() < 0 or idx.max() >= n_worlds:
        raise ConfigError(f"worlds: must be indices in [0, {n_worlds}), got {idx.tolist()}")
    policy = resolve_controller(env, controller)
    length = env.config.episode_length if length is None else int(length)

    @jax.jit
    def run(keys, noise_keys):
        s0 = jax.vmap(env.reset)(keys, noise_keys)

        def body(s, _):
            s = jax.vmap(env.step)(s, jax.vmap(policy)(s))
            return s, s.world.data.qpos

        _, qs = jax.lax.scan(body, s0, None, length=length)
        return s0, qs

    s0, qs = run(keys[idx], noise_keys[idx])
    qpos0 = np.asarray(s0.world.data.qpos)[None]
    return np.concatenate([qpos0, np.asarray(qs)], axis=0), s0


def flapper_hover_qpos(robot=None, params=None, state=None, *, n_frames: int = 40, steps_per_frame: int = 25,
                       target=None) -> np.ndarray:
    """``qpos`` of the free flapping-wing robot in closed-loop hover, every
    ``steps_per_frame`` steps.

    Each frame advances the state by one :func:`flapjax.sim.flapper.hover_rollout`
    of ``steps_per_frame`` steps toward ``target`` (default: the start
    position), so the flight is the hover rollout's and the frames see the
    wings at every phase of the stroke. The hover controller's memory (the
    altitude integral, the cycle filter) restarts from the measured pose at
    each frame; over a rendered clip (a few strokes) this moves the body by
    far less than a pixel.

    Args:
      robot: a free-root :class:`~flapjax.sim.flapper.FlapperRobot`; default
        ``make_robot("free", "wing")``.
      params: its parameters; default :func:`flapjax.sim.flapper.default_params`.
      state: the start; default :func:`flapjax.sim.flapper.init_state`.
      n_frames: frames after the start.
      steps_per_frame: robot steps (``robot.dt`` each) between frames.
      target: (3,) hover position [m].

    Returns:
      (n_frames + 1, nq) positions, the start first.
    """
    from flapjax.sim import flapper

    for name, v in (("n_frames", n_frames), ("steps_per_frame", steps_per_frame)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{name}: must be an integer >= 1, got {v!r}")
    robot = flapper.make_robot("free", "wing") if robot is None else robot
    if robot.root != "free":
        raise ConfigError(f"robot: the hover video draws the free robot with its wings, got root={robot.root!r}")
    params = flapper.default_params(robot) if params is None else params
    state = flapper.init_state(robot, params) if state is None else state
    if target is None:
        target = state.data.qpos[robot.free_q:robot.free_q + 3]

    @jax.jit
    def advance(st):
        return flapper.hover_rollout(robot, params, st, steps_per_frame, target=target,
                                     record_every=steps_per_frame, checkpoint=False)[0]

    out = [np.asarray(state.data.qpos)]
    for _ in range(n_frames):
        state = advance(state)
        out.append(np.asarray(state.data.qpos))
    return np.stack(out)


def flapper_frames(root: str, qpos: np.ndarray, *, stride: int = 1, width: int = 320, height: int = 240,
                   distance: float = 0.35, azimuth: float = 135.0, elevation: float = -25.0,
                   ground: float | None = 0.0, description=None) -> np.ndarray:
    """(T', height, width, 3) uint8 frames of a flapper world of root ``root``
    ("fixed", "free" or "lumped", as :func:`flapjax.sim.flapper.make_robot`)
    from its ``qpos`` (T, nq), every ``stride``-th step; the camera follows
    the base of a free robot. ``ground``: height [m] of the visual-only
    ground plane drawn under the robot (the flapper model has no floor;
    ``None``: none). ``description``: a robot description (or its
    ``.toml`` path) whose model is drawn; default the seed robot (an
    insect-scale robot wants a smaller ``distance``, e.g. 0.08 m)."""
    from flapjax.sim.flapper import description_model
    from flapjax.sim.flapper import model as flapper_model

    if description is None:
        model = flapper_model.build(root)
    else:
        model = description_model.build(description_model.resolve_description(description), root)
    qpos = np.asarray(qpos)[::max(int(stride), 1)]
    return frames(model, qpos, track=None if root == "fixed" else 0, width=width, height=height,
                  distance=distance, azimuth=azimuth, elevation=elevation, ground=ground)


def video_fps(env: TaskEnv, stride: int = 1) -> float:
    """Real-time frame rate of frames taken every ``stride`` environment steps [1/s]."""
    return 1.0 / (env.dt * max(int(stride), 1))


def write_video(images: np.ndarray, path: str | pathlib.Path, fps: float = 25.0) -> pathlib.Path:
    """Write (T, H, W, 3) uint8 ``images`` as an MP4 (H.264, imageio-ffmpeg)
    or a looping GIF (imageio), by the suffix of ``path``."""
    import imageio.v2 as imageio

    path = pathlib.Path(path)
    suffix = path.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ConfigError(f"path: videos must end in {' or '.join(VIDEO_SUFFIXES)}, got {str(path)!r}")
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
        raise ConfigError(f"images: must be (T, H, W, 3) uint8, got {images.shape} {images.dtype}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".gif":
        imageio.mimsave(path, list(images), duration=1000.0 / fps, loop=0)
    else:
        with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=1, quality=7) as w:
            for im in images:
                w.append_data(im)
    return path


def task_videos(env: TaskEnv, n_videos: int, out_dir: str | pathlib.Path, *, n_worlds: int | None = None,
                seed: int = 0, noise_seed: int | None = None, controller: Callable | None = None,
                fmt: str = "mp4", stride: int = 2, width: int = 320, height: int = 240,
                prefix: str | None = None) -> list[pathlib.Path]:
    """Render the first ``n_videos`` worlds of an evaluation of ``n_worlds``
    (default ``n_videos``) worlds into ``out_dir/<prefix>_world<i>.<fmt>``."""
    if isinstance(n_videos, bool) or not isinstance(n_videos, int) or n_videos < 1:
        raise ConfigError(f"video: must be an integer >= 1, got {n_videos!r}")
    require("render", "imageio", *(("imageio_ffmpeg",) if fmt == "mp4" else ()))
    n_worlds = n_videos if n_worlds is None else max(int(n_worlds), n_videos)
    if f".{fmt}" not in VIDEO_SUFFIXES:
        raise ConfigError(f"fmt: must be 'mp4' or 'gif', got {fmt!r}")
    qpos, states = rollout_qpos(env, n_worlds, seed=seed, noise_seed=noise_seed, controller=controller,
                                worlds=range(n_videos))
    prefix = env.name if prefix is None else prefix
    paths = []
    for i in range(n_videos):
        images = task_frames(env, qpos, states, world=i, stride=stride, width=width, height=height)
        paths.append(write_video(images, pathlib.Path(out_dir) / f"{prefix}_world{i}.{fmt}",
                                 fps=video_fps(env, stride)))
    return paths
