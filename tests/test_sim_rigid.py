"""Pure-JAX rigid-body backend against MuJoCo's own free-body integrator."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from jax.test_util import check_grads

from flapjax import ConfigError
from flapjax.sim import rigid

MASS, INERTIA = 0.7, np.array([0.004, 0.005, 0.008])
COM, IQUAT = np.array([0.01, -0.02, 0.015]), np.array([0.9, 0.3, -0.2, 0.25]) / np.linalg.norm([0.9, 0.3, -0.2, 0.25])


def _xml(com, iquat):
    return f"""<mujoco><option timestep="0.002" integrator="Euler" gravity="0 0 -9.81"><flag contact="disable"/></option>
<worldbody><body name="b" pos="0 0 1"><freejoint/>
<inertial pos="{com[0]} {com[1]} {com[2]}" quat="{iquat[0]} {iquat[1]} {iquat[2]} {iquat[3]}" mass="{MASS}"
 diaginertia="{INERTIA[0]} {INERTIA[1]} {INERTIA[2]}"/></body></worldbody></mujoco>"""


def _wrench(k):
    """A time-varying world wrench [N, N m] exercising every axis."""
    t = 0.002 * k
    return np.array([0.3 * np.sin(3 * t), -0.2 * np.cos(2 * t), 6.9 + 0.5 * np.sin(5 * t),
                     0.004 * np.sin(7 * t), -0.003 * np.cos(4 * t), 0.002 * np.sin(t)])


@pytest.mark.parametrize("offset", [False, True], ids=["com_at_origin", "com_offset_rotated_inertia"])
def test_matches_mujoco_euler_free_body(offset):
    com, iquat = (COM, IQUAT) if offset else (np.zeros(3), np.array([1.0, 0, 0, 0]))
    m = mujoco.MjModel.from_xml_string(_xml(com, iquat))
    d = mujoco.MjData(m)
    d.qvel[:] = [0.1, -0.2, 0.3, 2.0, -1.0, 3.0]
    body = rigid.RigidBody(MASS, INERTIA, com_offset=m.body_ipos[1], inertia_quat=m.body_iquat[1])
    state = rigid.RigidState(position=jnp.array(d.qpos[:3]), quat=jnp.array(d.qpos[3:]),
                             velocity=jnp.array(d.qvel[:3]), angular_velocity=jnp.array(d.qvel[3:]))
    step = jax.jit(lambda s, w: rigid.step(body, s, w, 0.002))
    for k in range(500):
        w = _wrench(k)
        d.xfrc_applied[1] = w
        mujoco.mj_step(m, d)
        state = step(state, jnp.array(w))
    np.testing.assert_allclose(state.qpos, d.qpos, atol=1e-9)
    np.testing.assert_allclose(state.qvel, d.qvel, atol=1e-9)


def test_torque_free_tumbling_conserves_angular_momentum_direction_and_energy():
    body = rigid.RigidBody(MASS, INERTIA, gravity=(0.0, 0.0, 0.0))
    s = rigid.RigidState(position=jnp.zeros(3), quat=jnp.array([1.0, 0, 0, 0]), velocity=jnp.zeros(3),
                         angular_velocity=jnp.array([0.5, 4.0, 0.3]))  # near the unstable middle axis

    def momentum_energy(s):
        h_world = s.rotation @ (body.inertia * s.angular_velocity)
        return h_world, 0.5 * jnp.sum(body.inertia * s.angular_velocity**2)

    h0, e0 = momentum_energy(s)
    run = jax.jit(lambda s: jax.lax.fori_loop(0, 2000, lambda i, s: rigid.step(body, s, jnp.zeros(6), 1e-4), s))
    s1 = run(s)
    h1, e1 = momentum_energy(s1)
    np.testing.assert_allclose(h1, h0, rtol=0, atol=2e-4 * float(jnp.linalg.norm(h0)))
    assert float(e1) == pytest.approx(float(e0), rel=2e-3)
    assert float(jnp.linalg.norm(s1.quat)) == pytest.approx(1.0, abs=1e-12)


def test_rollout_gradient_matches_finite_differences_and_is_finite_at_rest():
    body = rigid.RigidBody(MASS, INERTIA)

    def final_height(thrust, tau_x):
        s = rigid.RigidState.at_rest(jnp.array([0.0, 0.0, 1.0]))
        w = jnp.stack([0.0, 0.0, thrust, tau_x, 0.0, 0.0])
        s = jax.lax.fori_loop(0, 200, lambda i, s: rigid.step(body, s, w, 0.002), s)
        return s.position[2] + s.quat[1]

    check_grads(final_height, (7.0, 0.001), order=1, modes=("fwd", "rev"), atol=1e-7, rtol=1e-6)
    g = jax.grad(final_height, argnums=(0, 1))(MASS * 9.81, 0.0)  # zero rotation throughout
    assert all(bool(jnp.isfinite(x)) for x in g)


def test_touching_flags_probe_spheres_at_a_plane():
    s = rigid.RigidState.at_rest(jnp.array([0.0, 0.0, 0.1]))
    probes = jnp.array([[0.0, 0.0, -0.05]])
    ground = jnp.array([[0.0, 0.0, 1.0, 0.0]])
    assert not bool(rigid.touching(probes, jnp.array([0.04]), s, ground))
    assert bool(rigid.touching(probes, jnp.array([0.05]), s, ground))


@pytest.mark.parametrize("kwargs, field", [
    (dict(mass=-1.0, inertia=INERTIA), "mass"),
    (dict(mass=1.0, inertia=[0.1, 0.1]), "inertia"),
    (dict(mass=1.0, inertia=[0.1, 0.1, 0.5]), "triangle"),
    (dict(mass=1.0, inertia=INERTIA, gravity=[0, 0, np.nan]), "gravity"),
])
def test_bad_body_parameters_are_named(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        rigid.RigidBody(**kwargs)


def test_batched_state_has_mujoco_layout_per_world():
    pos = jnp.arange(15.0).reshape(5, 3)
    batch = jax.vmap(rigid.RigidState.at_rest)(pos)
    assert batch.qpos.shape == (5, 7) and batch.qvel.shape == (5, 6)
    np.testing.assert_array_equal(batch.qpos[:, :3], pos)
    np.testing.assert_array_equal(batch.qpos[:, 3], 1.0)
