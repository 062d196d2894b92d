"""Rendering with MuJoCo's renderer: frames of one world of a batch carry
that world's scene and colours, follow the robot, and write as a GIF."""

import jax
import numpy as np
import pytest

from flapjax import render, tasks
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
    w0 = render.task_frames(env, qpos, states, world=0, width=96, height=72)
    w1 = render.task_frames(env, qpos, states, world=1, width=96, height=72)
    assert w0.shape == (3, 72, 96, 3) and w0.dtype == np.uint8
    # Lit, not blank: the ground, the wall and the robot spread the pixel values.
    assert w0[0].std() > 10.0
    # Each world is drawn with its own randomized wall and colours.
    assert np.abs(w0[0].astype(int) - w1[0].astype(int)).mean() > 5.0
    # The camera follows the robot: the ground horizon moves as it climbs.
    assert np.abs(w0[0].astype(int) - w0[2].astype(int)).mean() > 1.0
    fields = render.world_model_fields(env, jax.tree.map(lambda x: x[1], states))
    np.testing.assert_allclose(fields["geom_rgba"], np.asarray(states.task.common.rgba[1]))


def test_gif_written_and_deleted(near_wall, tmp_path):
    import imageio.v2 as imageio

    env, states, qpos = near_wall
    images = render.task_frames(env, qpos, states, world=1, width=64, height=48)
    path = render.write_video(images, tmp_path / "near_wall.gif", fps=render.video_fps(env))
    back = np.stack(imageio.mimread(path))
    assert back.shape[:3] == (3, 48, 64)
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


def test_flapper_gif_shows_the_wings_moving(tmp_path):
    """A fixed-base flapper over a quarter stroke: the wings move between frames."""
    from flapjax.sim import flapper

    robot = flapper.make_robot("fixed", "wing")
    params = flapper.default_params(robot)
    state = flapper.init_state(robot, params)
    _, qpos = jax.jit(lambda s: flapper.simulate(robot, params, s, 100, observe=lambda s, o: s.data.qpos))(state)
    images = render.flapper_frames("fixed", np.asarray(qpos), stride=33, width=96, height=72)
    assert images.shape == (4, 72, 96, 3) and images[0].max() > 50
    assert np.abs(images[0].astype(int) - images[-1].astype(int)).mean() > 0.5
    path = render.write_video(images, tmp_path / "flapper.gif", fps=10)
    assert path.stat().st_size > 0
    path.unlink()
