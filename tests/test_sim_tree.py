"""Pure-JAX fixed-base joint tree against MuJoCo's C implementation: frames,
velocities, mass matrix, bias forces, actuators and the Euler step, on the
fixed-base flapper, the driven-base flapper (slide joints, off-origin
anchors, armature) and a model built to exercise the rest (rotated body and
inertia frames, spring reference, affine servos with limited controls)."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco import mjx

from flapjax import ConfigError
from flapjax.sim import tree
from flapjax.sim.flapper import driven
from flapjax.sim.flapper import model as fm

EXTRA_XML = """<mujoco><option timestep="2e-3" integrator="Euler"><flag contact="disable"/></option>
<worldbody><body name="a" pos="0.1 -0.2 0.3" quat="0.9 0.1 -0.3 0.2">
  <joint name="j0" type="hinge" axis="0.3 0.4 0.5" pos="0.02 0.01 -0.03" damping="0.02" stiffness="0.4" springref="0.3"/>
  <inertial pos="0.05 0.01 -0.02" quat="0.8 -0.2 0.1 0.4" mass="0.7" diaginertia="0.004 0.005 0.008"/>
  <body name="b" pos="0.2 0 0.05" quat="0.7 0.0 0.7 0.1">
    <joint name="j1" type="slide" axis="1 1 0" damping="0.5" armature="0.01"/>
    <joint name="j2" type="hinge" axis="0 0 1" pos="0 0.03 0" armature="1e-3"/>
    <inertial pos="0.01 0.02 0.03" mass="0.3" diaginertia="0.002 0.003 0.004"/>
    <body name="c" pos="0 0.1 0"><joint name="j3" type="hinge" axis="1 0 0" damping="0.01"/>
      <inertial pos="0 0.05 0" mass="0.1" diaginertia="1e-4 2e-4 2e-4"/></body>
  </body></body></worldbody>
<actuator><position joint="j0" kp="3" kv="0.1" ctrlrange="-0.5 0.5"/><motor joint="j2" gear="2"/>
  <position joint="j3" kp="1" forcerange="-0.2 0.2"/></actuator></mujoco>"""


def _models():
    return {"flapper_fixed": fm.build("fixed"), "flapper_free": fm.build("free"), "flapper_driven": _driven_mjmodel(),
            "extra": mujoco.MjModel.from_xml_string(EXTRA_XML)}


def _driven_mjmodel():
    spec = fm.load_spec()
    rel = driven._com_offset(spec.compile())
    base = spec.body("base")
    slide, hinge = mujoco.mjtJoint.mjJNT_SLIDE, mujoco.mjtJoint.mjJNT_HINGE
    for name, kind, axis in zip(driven.DRIVE_JOINTS, (slide, slide, hinge, hinge, hinge),
                                ([1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1])):
        base.add_joint(name=name, type=kind, axis=axis, pos=rel, armature=1e-5)
    return spec.compile()


def _random_data(m, seed):
    """MuJoCo data at a random state with random controls and applied loads,
    scaled to the model (stroke rates of tens of rad/s on the flapper)."""
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(m)
    d.qpos[:] = rng.uniform(-0.8, 0.8, m.nq)
    d.qvel[:] = rng.uniform(-30, 30, m.nv)
    for j in np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE):  # a unit attitude quaternion
        a = m.jnt_qposadr[j] + 3
        d.qpos[a : a + 4] /= np.linalg.norm(d.qpos[a : a + 4])
    d.ctrl[:] = rng.uniform(-1, 1, m.nu)
    scale = float(m.body_mass.sum())
    d.qfrc_applied[:] = rng.normal(0, 1e-3 * scale, m.nv)
    d.xfrc_applied[1:] = rng.normal(0, 0.3 * scale, (m.nbody - 1, 6))
    return d


@pytest.mark.parametrize("name", ["flapper_fixed", "flapper_free", "flapper_driven", "extra"])
@pytest.mark.parametrize("seed", [0, 1])
def test_forward_mass_bias_and_step_match_mujoco(name, seed):
    m = _models()[name]
    tree.check_model(m)
    d = _random_data(m, seed)
    mx, dx = mjx.put_model(m), mjx.put_data(m, d)
    mujoco.mj_forward(m, d)

    @jax.jit
    def everything(dx):
        return (tree.forward(mx, dx), tree.mass_and_bias(mx, dx.qpos, dx.qvel)[:2],
                tree.actuator_force(mx, dx.qpos, dx.qvel, dx.ctrl), tree.step(mx, dx))

    f, (big_m, bias), act, new = everything(dx)
    for field in ("xpos", "xmat", "xipos", "ximat", "subtree_com", "cvel"):
        want = getattr(d, field).reshape(m.nbody, -1)
        got = np.asarray(getattr(f, field)).reshape(m.nbody, -1)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(want).max()), err_msg=field)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    np.testing.assert_allclose(np.asarray(big_m), full, rtol=1e-9, atol=1e-12 * np.abs(full).max())
    np.testing.assert_allclose(np.asarray(bias), d.qfrc_bias, rtol=1e-9, atol=1e-12 * np.abs(d.qfrc_bias).max())
    np.testing.assert_allclose(np.asarray(act), d.qfrc_actuator, rtol=1e-9, atol=1e-14)
    mujoco.mj_step(m, d)
    np.testing.assert_allclose(np.asarray(new.qvel), d.qvel, rtol=1e-9, atol=1e-11 * np.abs(d.qvel).max())
    np.testing.assert_allclose(np.asarray(new.qpos), d.qpos, rtol=1e-9, atol=1e-12)
    assert float(new.time) == pytest.approx(d.time)


def test_frames_computed_once_give_the_same_forward_and_step():
    """The flapper bridge hands the frames its aerodynamics read to the step;
    forward and step with them equal those that compute their own."""
    m = _models()["extra"]
    d = _random_data(m, 3)
    mx, dx = mjx.put_model(m), mjx.put_data(m, d)

    @jax.jit
    def both(dx):
        fr = tree.frames(mx, dx.qpos)
        stale = tree.frames(mx, dx.qpos + 0.1)  # of another configuration: must show
        return ((tree.forward(mx, dx), tree.step(mx, dx)), (tree.forward(mx, dx, fr), tree.step(mx, dx, fr)),
                tree.step(mx, dx, stale).qvel)

    own, shared, stale_qvel = both(dx)
    for a, b in zip(jax.tree.leaves(own), jax.tree.leaves(shared)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-15)
    assert np.max(np.abs(np.asarray(stale_qvel) - np.asarray(own[1].qvel))) > 1e-6


def test_a_trajectory_matches_mujoco_and_a_batch_matches_its_worlds():
    """200 steps of the extra model under a varying control: the jitted
    tree step stays on MuJoCo's trajectory; a vmapped batch equals its
    worlds run one by one."""
    m = mujoco.MjModel.from_xml_string(EXTRA_XML)
    d = _random_data(m, 3)
    d.xfrc_applied[:] = 0.0
    mx = mjx.put_model(m)
    step = jax.jit(lambda dd, u: tree.step(mx, dd.replace(ctrl=u)))
    dx = mjx.put_data(m, d)
    for k in range(200):
        u = np.array([0.6 * np.sin(0.05 * k), 0.3 * np.cos(0.03 * k), -0.4])
        dx = step(dx, jnp.asarray(u))
        d.ctrl[:] = u
        mujoco.mj_step(m, d)
    np.testing.assert_allclose(np.asarray(dx.qpos), d.qpos, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.asarray(dx.qvel), d.qvel, rtol=1e-8, atol=1e-9)
    starts = jnp.stack([jnp.asarray(_random_data(m, s).qvel) for s in range(3)])
    base = mjx.put_data(m, mujoco.MjData(m))
    one = jax.jit(lambda v: tree.step(mx, base.replace(qvel=v)).qpos)
    batch = jax.jit(jax.vmap(one))(starts)
    for i in range(3):
        np.testing.assert_allclose(np.asarray(batch[i]), np.asarray(one(starts[i])), rtol=1e-12, atol=1e-15)


def test_step_gradient_matches_finite_difference():
    m = mujoco.MjModel.from_xml_string(EXTRA_XML)
    mx = mjx.put_model(m)
    d0 = mjx.put_data(m, _random_data(m, 4))

    def final_speed(damping):
        mm = mx.replace(dof_damping=mx.dof_damping.at[0].set(damping))
        dd = jax.lax.fori_loop(0, 20, lambda _, dd: tree.step(mm, dd), d0)
        return jnp.sum(dd.qvel**2)

    g = float(jax.jit(jax.grad(final_speed))(0.02))
    f = jax.jit(final_speed)
    h = 1e-6
    fd = (float(f(0.02 + h)) - float(f(0.02 - h))) / (2 * h)
    assert abs(fd) > 1e-3
    assert g == pytest.approx(fd, rel=1e-5)


def test_cholesky_solve_matches_numpy():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(6, 6))
    a = a @ a.T + 6 * np.eye(6)
    b = rng.normal(size=6)
    np.testing.assert_allclose(np.asarray(tree._cholesky_solve(jnp.asarray(a), jnp.asarray(b))),
                               np.linalg.solve(a, b), rtol=1e-12)


@pytest.mark.parametrize("xml, field", [
    ('<mujoco><worldbody><body><joint type="free" stiffness="1"/><geom size="0.1" contype="0" conaffinity="0"/>'
     '</body></worldbody></mujoco>', "no spring on a free joint"),
    ('<mujoco><worldbody><body><joint type="ball"/><geom size="0.1"/></body></worldbody></mujoco>', "joint types"),
    ('<mujoco><option integrator="RK4"/><worldbody><body><joint/><geom size="0.1" contype="0" conaffinity="0"/>'
     '</body></worldbody></mujoco>', "integrator"),
    ('<mujoco><worldbody><geom type="plane" size="1 1 .1"/><body><joint/><geom size="0.1"/></body></worldbody>'
     '</mujoco>', "constraint solver"),
    ('<mujoco><worldbody><body><joint range="-1 1"/><geom size="0.1" contype="0" conaffinity="0"/></body>'
     '</worldbody></mujoco>', "constraint solver"),
    ('<mujoco><worldbody><body><joint name="j"/><geom size="0.1" contype="0" conaffinity="0"/></body></worldbody>'
     '<actuator><general joint="j" dyntype="filter"/></actuator></mujoco>', "activation dynamics"),
])
def test_check_model_names_what_it_cannot_integrate(xml, field):
    with pytest.raises(ConfigError, match=field):
        tree.check_model(mujoco.MjModel.from_xml_string(xml))


def test_compiler_options_are_cpu_only_and_filter_jit_nests():
    assert tree.compiler_options("cpu") == {"xla_cpu_use_fusion_emitters": False,
                                            "xla_cpu_experimental_ynn_fusion_type": ""}
    assert tree.compiler_options("gpu") is None

    @tree.filter_jit
    def square(x):
        return x * x

    x = jnp.arange(3.0)
    np.testing.assert_allclose(np.asarray(square(x)), [0.0, 1.0, 4.0])
    # Inside another program (options only on the top level) and under jacfwd.
    np.testing.assert_allclose(np.asarray(jax.jit(lambda x: square(x) + 1.0)(x)), [1.0, 2.0, 5.0])
    np.testing.assert_allclose(np.asarray(jax.jacfwd(lambda x: square(x).sum())(x)), [0.0, 2.0, 4.0])
