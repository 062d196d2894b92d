"""Rendering with MuJoCo's renderer: frames of one world of a batch carry
that world's scene and colours, follow the robot, and write as a GIF."""

import pathlib

import jax
import numpy as np
import pytest

from flapjax import render, tasks
from flapjax.tasks import view
from flapjax.validation import ConfigError


@pytest.fixture(scope="module")
def near_wall():
    """Two randomized near-wall worlds (different wall pitch and colours) at rest."""
    env = tasks.make("wall_contact", **{"randomization.enabled": True})
    states = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 2))
    q0 = np.asarray(states.world.data.qpos)                        # (2, nq)
    lift = np.zeros_like(q0)
    lift[:, 2] = 0.15
    qpos = np.stack([q0, q0 + lift, q0 + 2 * lift])                # (3, 2, nq): the robot climbs
    return env, states, qpos


def test_frames_of_one_world_show_its_scene_and_follow_the_robot(near_wall):
    env, states, qpos = near_wall
    w0 = render.task_frames(env, qpos, states, world=0, width=96, height=72, camera="follow", overlay=False)
    w1 = render.task_frames(env, qpos, states, world=1, width=96, height=72, camera="follow", overlay=False)
    assert w0.shape == (3, 72, 96, 3) and w0.dtype == np.uint8
    # Lit, not blank: the ground, the wall and the robot spread the pixel values.
    assert w0[0].std() > 10.0
    # Each world is drawn with its own randomized wall and colours.
    assert np.abs(w0[0].astype(int) - w1[0].astype(int)).mean() > 5.0
    # The camera follows the robot: the ground horizon moves as it climbs.
    assert np.abs(w0[0].astype(int) - w0[2].astype(int)).mean() > 1.0
    fields = render.world_model_fields(env, jax.tree.map(lambda x: x[1], states))
    np.testing.assert_allclose(fields["geom_rgba"], np.asarray(states.task.common.rgba[1]))


def test_side_camera_shows_the_descent_to_the_ground():
    """Near-ground tracking from the task's fixed side camera: the robot's
    pixels move down the image from the start (0.5 m) to the hold (6 cm),
    the overlay's height says so, and the checkered floor and shadows make
    the floor textured (a spread of values in the bottom rows)."""
    env = tasks.make_for_learning("near_ground", start_time=0.0, descent_time=0.3, hold_time=1.0)
    qpos, s0 = render.rollout_qpos(env, 1, length=50)
    state = jax.tree.map(lambda x: x[0], s0)
    heights = view.ee_heights(env, state, qpos[:, 0])
    assert abs(heights[0] - 0.5) < 0.01 and heights[-1] < 0.1
    away = qpos[[0]].copy()
    away[:, 0, 2] += 50.0  # the robot out of the picture: the background
    images = render.task_frames(env, np.concatenate([qpos[[0, -1]], away]), s0, width=160, height=120,
                                overlay=False)

    def robot_row(image):
        mask = np.abs(image.astype(int) - images[2].astype(int)).sum(-1) > 60
        assert mask.sum() > 20
        return np.nonzero(mask)[0].mean()

    assert robot_row(images[1]) > robot_row(images[0]) + 25.0       # lower in the image: nearer the floor
    assert images[2, -20:].std() > 15.0                               # checker and shadow, not a flat floor
    plain = render.frames(env.world.mj_model, qpos[[0], 0], track=None, lookat=view.camera_target(
        env, state, qpos[0, 0]), width=160, height=120, azimuth=90.0, elevation=-4.0, distance=1.4, checker=False,
        model_fields=view.world_model_fields(env, state))
    assert plain[0, -20:].std() < images[2, -20:].std() - 5.0
    with_text = render.task_frames(env, qpos[[0]], s0, width=160, height=120)
    assert np.abs(with_text[0, :20, :100].astype(int) - images[0, :20, :100].astype(int)).max() > 100


def test_near_wall_hover_gif_written_and_deleted(tmp_path):
    """A hover 0.3 m from a wall (near-ground tracking on the rigid backend,
    the wall moved in; the reference controller, a few steps) as a GIF:
    robot, wall and ground on the frames; then deleted."""
    import imageio.v2 as imageio

    env = tasks.make_for_learning("near_ground", **{"randomization.enabled": True,
                                                    "randomization.wall_x": (-9.7, -9.7)})
    qpos, s0 = render.rollout_qpos(env, 2, worlds=[1], length=3)
    assert qpos.shape == (4, 1, 7)
    assert abs(float(s0.params.scene.wall_x[0]) - 0.3) < 1e-6
    images = render.task_frames(env, qpos, s0, world=0, width=64, height=48, camera="follow", overlay=False)
    # Wall (upper background), ground (bottom-left) and robot (centre) differ in colour.
    wall, ground = images[0, :8].reshape(-1, 3).mean(0), images[0, -6:, :16].reshape(-1, 3).mean(0)
    assert np.abs(wall - ground).max() > 20.0
    assert np.abs(images[0, 20:30, 24:40].astype(int) - wall).sum(-1).max() > 60
    path = render.write_video(images, tmp_path / "near_wall_hover.gif", fps=render.video_fps(env))
    back = np.stack(imageio.mimread(path))
    assert back.shape[:3] == (4, 48, 64)
    path.unlink()
    assert not path.exists()
    with pytest.raises(ConfigError, match="videos must end"):
        render.write_video(images, tmp_path / "x.avi")


def test_gym_render_and_evaluate_video_need_their_settings():
    from flapjax.evaluate import evaluate

    env = tasks.gym_env("near_ground", render_mode="rgb_array")
    env.reset(seed=0)
    image = env.render()
    assert image.shape == (240, 320, 3) and image.dtype == np.uint8 and image.std() > 10.0
    with pytest.raises(ConfigError, match="render_mode"):
        tasks.gym_env("near_ground", render_mode="human")
    with pytest.raises(ConfigError, match="video: needs an output directory"):
        evaluate("near_ground", n_worlds=2, video=1, out_dir=None)
    with pytest.raises(ConfigError, match="video"):
        evaluate("near_ground", n_worlds=2, video=-1, out_dir=None)


@pytest.mark.slow  # compiles the free per-wing robot's closed-loop hover
def test_flapper_hover_gif_shows_the_free_robot_flapping(tmp_path):
    """The free flapping-wing robot in closed-loop hover: it stays up near its
    set point, its wings move between frames, the ground is drawn under it."""
    from flapjax.sim import flapper

    robot = flapper.make_robot("free", "wing")
    qpos = render.flapper_hover_qpos(robot, n_frames=3, steps_per_frame=40)
    assert qpos.shape == (4, robot.model.nq) and robot.free_q == 0
    assert np.all(np.abs(qpos[:, 2] - 0.5) < 0.01)                    # flying, near the 0.5 m set point
    wings = qpos[:, 7:]
    assert np.abs(wings[-1] - wings[0]).max() > 0.1                   # the stroke moved
    images = render.flapper_frames("free", qpos, width=96, height=72)
    assert images.shape == (4, 72, 96, 3) and images[0].max() > 50
    moved = np.abs(images[0].astype(int) - images[-1].astype(int)).sum(axis=-1) > 30
    assert moved.sum() > 20                                             # the wings, drawn at another phase
    assert images[0, -8:].mean() > 30.0                                # the ground plane fills the bottom rows
    no_ground = render.flapper_frames("free", qpos[:1], width=96, height=72, ground=None)
    assert no_ground[0, -8:].mean() < images[0, -8:].mean() - 20.0
    path = render.write_video(images, tmp_path / "flapper_hover.gif", fps=10)
    assert path.stat().st_size > 0
    path.unlink()
    with pytest.raises(ConfigError, match="root"):
        render.flapper_hover_qpos(flapper.make_robot("fixed", "wing"), n_frames=1)
    with pytest.raises(ConfigError, match="n_frames"):
        render.flapper_hover_qpos(robot, n_frames=0)


def test_flapper_frames_draw_a_described_robot():
    """The renderer draws the robot of a description (the insect robot, no
    plates): its own joint count, and a stroke angle moves its wing."""
    import mujoco

    from flapjax.sim.flapper import description_model

    toml = pathlib.Path(__file__).resolve().parents[1] / "examples" / "flappers" / "insect" / "robot.toml"
    desc = description_model.resolve_description(toml)
    m = description_model.build(desc, "fixed")
    qpos = np.stack([m.qpos0, m.qpos0])
    stroke = m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, desc.names.stroke[0])]
    qpos[1, stroke] += 0.8
    images = render.flapper_frames("fixed", qpos, width=96, height=72, distance=0.08, description=toml)
    assert images.shape == (2, 72, 96, 3) and images[0].max() > 50
    moved = np.abs(images[0].astype(int) - images[1].astype(int)).sum(axis=-1) > 30
    assert moved.sum() > 10                                             # the left wing, drawn elsewhere
    with pytest.raises(ValueError):                                     # the seed robot has other joints
        render.flapper_frames("fixed", np.zeros((1, m.nq + 1)), width=32, height=24)
