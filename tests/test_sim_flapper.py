"""MJX bridge of the flapping-wing robot: frames, wrench bookkeeping, symmetry,
plate-tilt moments, batching, stability, calibration and gradients."""

import dataclasses
import importlib

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
from mujoco import mjx
import numpy as np
import pytest

from flapjax import ConfigError
from flapjax.math import rot_y, rot_z
from flapjax.sim import flapper as fl
from flapjax.sim.flapper import model as fm


SPREAD_BOUND = 0.007  # (max - min) / mean of F_z / f^2 over 20-40 Hz [-]; measured 0.32 % (seed 0.31 %)


@pytest.fixture(scope="module")
def fixed():
    return fl.make_robot("fixed", "wing")


@pytest.fixture(scope="module")
def tilt_sweep(fixed):
    # zero, pitch_joint +0.2, roll_joint +0.2 at 30 Hz: one compiled chunk of 3 worlds.
    plates = np.array([[0.0, 0.0], [0.2, 0.0], [0.0, 0.2]])
    return fl.sweep([30.0, 30.0, 30.0], plate=plates, duration=0.2, discard=0.1, robot=fixed, batch_size=3)


# ---------------------------------------------------------------- model ----


def test_variants_come_from_one_source_and_weigh_30_g():
    models = {r: fm.build(r) for r in fm.ROOTS}
    for r, m in models.items():
        assert m.body_subtreemass[1] == pytest.approx(0.03, rel=1e-12), r
    assert models["fixed"].nq == 6 and models["free"].nq == 13 and models["lumped"].nq == 7
    mass, com, inertia = fm.composite_inertia(models["fixed"])
    l_mass, l_com, l_inertia = fm.composite_inertia(models["lumped"])
    assert l_mass == pytest.approx(mass)
    np.testing.assert_allclose(l_com, com, atol=1e-12)
    np.testing.assert_allclose(l_inertia, inertia, atol=1e-14)
    # an override changes every variant the same way
    assert fm.build("free", hinge_stiffness=2e-3).jnt_stiffness[-1] == pytest.approx(2e-3)
    with pytest.raises(ConfigError, match="root"):
        fm.build("tethered")
    with pytest.raises(ConfigError, match="aero_model"):
        fl.make_robot("lumped", "wing")


@pytest.mark.parametrize("psi, theta", [(0.0, 0.0), (0.7, -0.4), (-1.2, 0.9)])
def test_wing_frames_follow_the_aerodynamic_chain(psi, theta):
    """Wing frame = plate axes R_z(s psi) R_y(theta), root at (0, s d0, ds)."""
    m = fm.build("fixed")
    d = mujoco.MjData(m)
    for jn, val in [("left_stroke", psi), ("right_stroke", psi), ("left_pitch", theta), ("right_pitch", theta)]:
        d.qpos[m.jnt_qposadr[m.joint(jn).id]] = val
    mujoco.mj_forward(m, d)
    plate = m.body("plate").id
    r_plate, p_plate = d.xmat[plate].reshape(3, 3), d.xpos[plate]
    for s, name in [(1, "left_wing"), (-1, "right_wing")]:
        b = m.body(name).id
        want = np.asarray(rot_z(s * psi) @ rot_y(theta))
        np.testing.assert_allclose(r_plate.T @ d.xmat[b].reshape(3, 3), want, atol=1e-12)
        np.testing.assert_allclose(r_plate.T @ (d.xpos[b] - p_plate), [0, s * 0.01395, 0.0189913], atol=1e-12)
        # span along s*Y, chord hanging along -Z from the leading edge
        com_local = d.xmat[b].reshape(3, 3).T @ (d.xipos[b] - d.xpos[b])
        np.testing.assert_allclose(com_local, [0.0, s * 0.035, -0.01], atol=1e-12)


def test_feathering_stops_are_odd_quiet_inside_and_a_spring_beyond():
    hinge = fl.default_params().hinge
    k_s, th_s, w = float(hinge.stop_stiffness), float(hinge.stop_angle), float(hinge.stop_width)
    theta = jnp.linspace(-1.2, 1.2, 241)
    tau = fl.stop_torque(hinge, theta)
    np.testing.assert_allclose(tau, -fl.stop_torque(hinge, -theta), rtol=0, atol=1e-15)  # odd
    assert float(jnp.max(jnp.abs(fl.stop_torque(hinge, jnp.linspace(-0.2, 0.2, 41))))) < 1e-6 * k_s * th_s
    assert float(fl.stop_torque(hinge, jnp.asarray(th_s))) == pytest.approx(-k_s * w * np.log(2.0), rel=1e-6)
    far = th_s + 20 * w
    assert float(fl.stop_torque(hinge, jnp.asarray(far))) == pytest.approx(-k_s * (far - th_s), rel=1e-6)
    slope = jax.vmap(jax.grad(lambda t: fl.stop_torque(hinge, t)))(theta)
    assert bool(jnp.all(jnp.isfinite(slope))) and bool(jnp.all(slope <= 0))


def test_every_constructor_shares_one_mjcf_indexing(fixed):
    """make_robot and the driven-base robot both index the MJCF through
    robot_from_mjmodel: the driven robot is the fixed one with five drive
    dofs in front (the wing and plate joints shift by five)."""
    same = fl.robot_from_mjmodel(fm.build("fixed"))
    statics = [f.name for f in dataclasses.fields(fixed) if f.metadata.get("static")]
    assert len(statics) > 15 and all(getattr(same, k) == getattr(fixed, k) for k in statics)
    driven = fl.make_driven_robot()
    m = fm.build("fixed")
    assert driven.stroke_inertia == fixed.stroke_inertia
    assert driven.wing_bodies == fixed.wing_bodies and driven.stroke_act == fixed.stroke_act
    for field in ("stroke_q", "stroke_v", "pitch_q", "pitch_v", "plate_q", "plate_v"):
        assert getattr(driven, field) == tuple(i + 5 for i in getattr(fixed, field)), field
    assert driven.model.nv == m.nv + 5
    np.testing.assert_allclose(fl.robot_com_offset(), fm.composite_inertia(m)[1] - m.body("base").pos, atol=1e-15)
    assert fl.robot_weight() == pytest.approx((0.03, 9.81), rel=1e-12)


# ------------------------------------------------------------ the bridge --


def test_applied_forces_sum_to_diagnostics(fixed):
    p = fl.default_params(fixed, frequency=35.0)
    s = fl.init_state(fixed, p)
    s = jax.jit(lambda s: jax.lax.fori_loop(0, 150, lambda _, s: fl.step(fixed, p, s)[0], s))(s)
    s2, dg = jax.jit(lambda s: fl.step(fixed, p, s))(s)
    xfrc = s2.data.xfrc_applied
    np.testing.assert_allclose(xfrc[:, :3].sum(0), dg.force_world, rtol=1e-12, atol=1e-15)
    wings = list(fixed.wing_bodies)
    np.testing.assert_allclose(xfrc[wings, :3], dg.wing_force_world, rtol=1e-12)
    assert float(jnp.linalg.norm(dg.force_world)) > 1e-3  # the wings are loaded
    # moment about the base origin rebuilt from what was written to xfrc_applied
    d = s.data
    d = mjx.fwd_position(fixed.model, d)
    x_ref = d.xpos[fixed.base_body]
    moment = sum(xfrc[b, 3:] + jnp.cross(d.xipos[b] - x_ref, xfrc[b, :3]) for b in wings)
    np.testing.assert_allclose(moment, dg.moment_world, rtol=1e-10, atol=1e-15)
    # lift_total is the sum of |F_N|, not the vertical force
    assert float(dg.lift_total) == pytest.approx(float(jnp.sum(jnp.abs(dg.wing_loads.normal_force))))
    assert float(dg.lift_total) >= float(jnp.abs(dg.force_world[2])) - 1e-15


def test_rigid_backend_tree_matches_mjx_on_the_fixed_base(tilt_sweep):
    """The pure-JAX joint tree (backend "rigid" on the fixed root) gives
    the MJX robot's cycle means, plate tilts included, to round-off."""
    robot = fl.make_robot("fixed", "wing", backend="rigid")
    assert robot.dynamics == "tree"
    plates = np.array([[0.0, 0.0], [0.2, 0.0], [0.0, 0.2]])
    tree = fl.sweep([30.0, 30.0, 30.0], plate=plates, duration=0.2, discard=0.1, robot=robot, batch_size=3)
    for field in ("force", "moment", "lift_total", "plate_angle", "plate_range", "stroke_error_rms"):
        want, got = np.asarray(getattr(tilt_sweep, field)), np.asarray(getattr(tree, field))
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9 * np.abs(want).max(), err_msg=field)


def test_mirror_symmetry_zero_lateral_force_and_roll_yaw(tilt_sweep):
    f = np.asarray(tilt_sweep.force[0])
    mo = np.asarray(tilt_sweep.moment[0])
    assert f[2] > 0.1
    assert abs(f[1]) < 1e-9 * f[2]
    assert abs(mo[0]) < 1e-9 * f[2] and abs(mo[2]) < 1e-9 * f[2]


def test_plate_tilt_moments_are_crossed_with_expected_signs(tilt_sweep):
    f0 = np.asarray(tilt_sweep.force[0])
    f_p, m_p = np.asarray(tilt_sweep.force[1]), np.asarray(tilt_sweep.moment[1])
    f_r, m_r = np.asarray(tilt_sweep.force[2]), np.asarray(tilt_sweep.moment[2])
    # pitch_joint: thrust toward -y, positive ROLL moment (crossed naming)
    assert f_p[1] < -0.1 * f0[2] * np.sin(0.2)
    assert m_p[0] > 0 and abs(m_p[0]) > 3 * abs(m_p[1])
    # roll_joint: thrust toward -x, negative PITCH moment
    assert f_r[0] < -0.1 * f0[2] * np.sin(0.2)
    assert m_r[1] < 0 and abs(m_r[1]) > 3 * abs(m_r[0])
    # and the stroke servo tracks within 1 % of the amplitude
    assert float(np.max(tilt_sweep.stroke_error_max)) < 0.015


def test_jit_vmap_step_equals_loop(fixed):
    params = fl.sweep_params([25.0, 38.0], plate=np.array([[0.0, 0.0], [0.1, -0.1]]), robot=fixed)
    states = jax.vmap(lambda p: fl.init_state(fixed, p))(params)
    step = lambda p, s: fl.step(fixed, p, s)  # noqa: E731

    def n(p, s, k=30):
        s = jax.lax.fori_loop(0, k - 1, lambda _, s: step(p, s)[0], s)
        return step(p, s)

    sb, dgb = jax.jit(jax.vmap(n))(params, states)
    one = jax.jit(n)
    for i in range(2):
        p_i = jax.tree.map(lambda x: x[i], params)
        s_i = jax.tree.map(lambda x: x[i], states)
        s1, dg1 = one(p_i, s_i)
        np.testing.assert_allclose(sb.data.qpos[i], s1.data.qpos, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(dgb.force_world[i], dg1.force_world, rtol=1e-9, atol=1e-13)


def test_one_second_at_40_hz_stays_finite_and_lifts(fixed):
    p = fl.default_params(fixed, frequency=40.0)
    out = jax.jit(lambda p: fl.cycle_mean(fixed, p, 10000, 5000, checkpoint=False))(p)
    assert bool(out.healthy)
    assert np.all(np.isfinite(np.asarray(out.force)))
    assert 0.2 < float(out.force[2]) < 0.35
    assert float(out.clip_fraction) == 0.0


@pytest.mark.slow
def test_the_joint_tree_flies_every_root_and_model_like_mjx():
    """Every root and aerodynamic model runs on both backends, and backend
    "rigid" (the pure-JAX joint tree) follows MJX's 100-step trajectory to
    round-off; the averaged model's lift is k_f f^2."""
    for root in ("fixed", "free"):
        for model in ("wing", "averaged"):
            runs = {}
            for backend in ("mjx", "rigid"):
                robot = fl.make_robot(root, model, backend=backend)
                p = fl.default_params(robot, frequency=40.0)
                s = fl.init_state(robot, p, periodic=False)  # the schedule start: both backends from one state
                s, tr = jax.jit(lambda s: fl.rollout(robot, p, s, 100))(s)
                assert bool(s.healthy), (root, model, backend)
                runs[backend] = (np.asarray(s.data.qpos), np.asarray(tr.force_world))
                if model == "averaged":
                    fz = float(tr.force_world[-1, 2])
                    assert fz == pytest.approx(float(p.averaged.lift_coefficient) * 40.0**2, rel=1e-6)
            np.testing.assert_allclose(runs["rigid"][0], runs["mjx"][0], rtol=1e-9, atol=1e-12, err_msg=(root, model))
            np.testing.assert_allclose(runs["rigid"][1], runs["mjx"][1], rtol=1e-8, atol=1e-12, err_msg=(root, model))


def test_sweep_compiles_once_for_any_number_of_frequencies(fixed, monkeypatch):
    traces = []
    module = importlib.import_module("flapjax.sim.flapper.sweep")
    real = module.batched_cycle_mean

    def counting(*a, **k):
        traces.append(1)
        return real(*a, **k)

    monkeypatch.setattr(module, "batched_cycle_mean", counting)
    r2 = fl.sweep([21.0, 33.0], duration=0.01, discard=0.005, robot=fixed, batch_size=2)
    r5 = fl.sweep([22.0, 27.0, 31.0, 36.0, 39.0], duration=0.01, discard=0.005, robot=fixed, batch_size=2)
    assert len(traces) == 1
    assert r2.force.shape == (2, 3) and r5.moment.shape == (5, 3)
    np.testing.assert_allclose(r5.frequency, [22.0, 27.0, 31.0, 36.0, 39.0])


# -------------------------------------------------- calibration, gradient --


@pytest.fixture(scope="module")
def seed_sweep():
    """The default robot's fixed-base sweep on the seed's protocol (0.6 s,
    first 0.3 s discarded) at 20, 30, 40 Hz: one compiled chunk of 3 worlds."""
    return fl.sweep([20.0, 30.0, 40.0], batch_size=3)


def test_calibrated_sweep_reproduces_seed_table(seed_sweep):
    seed = np.array([0.0661819985, 0.1486352297, 0.2639114107])
    fz = np.asarray(seed_sweep.force[:, 2])
    np.testing.assert_allclose(fz, seed, rtol=0.03)
    ratio = np.asarray(seed_sweep.lift_per_f2)
    assert (ratio.max() - ratio.min()) / ratio.mean() < SPREAD_BOUND


def test_plate_servo_holds_the_stroke_plane_at_40_hz(seed_sweep):
    """The stiff plate servo keeps the stroke plane within 2 deg peak to
    peak of its set point under the wingbeat's loads (measured 1.5 deg at
    40 Hz; the compliant servo of kp = 0.05 N m/rad let it nod 18.7 deg)."""
    swing = np.degrees(np.asarray(seed_sweep.plate_range))  # (3, 2) [deg]
    mean = np.degrees(np.asarray(seed_sweep.plate_angle))
    assert bool(np.all(np.asarray(seed_sweep.healthy)))
    assert np.all(swing[2] < 2.0), swing
    assert np.all(np.abs(mean[2]) < 0.5), mean
    assert swing[2].max() > 0.01  # measured, not a frozen joint
    assert np.all(np.diff(swing[:, 1]) > 0)  # the nodding grows with the wingbeat's loads


def test_plate_servo_bandwidth_is_well_above_the_wingbeat():
    """Natural frequency of the plate servo at the plate's largest inertia
    (stroke at 0 for pitch_joint, at +-A for roll_joint) above 3x 40 Hz, and
    its fastest mode (smallest inertia) inside the step's stability bound."""
    m = fm.build("fixed")
    d = mujoco.MjData(m)
    inertia = []
    for psi in (0.0, 1.5):
        d.qpos[:] = 0.0
        for name in fm.STROKE_JOINTS:
            d.qpos[m.jnt_qposadr[m.joint(name).id]] = psi
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        dofs = [m.jnt_dofadr[m.joint(j).id] for j in fm.PLATE_JOINTS]
        inertia.append([full[v, v] for v in dofs])
    inertia = np.array(inertia)  # (stroke pose, joint) [kg m^2]
    for k, (joint, act) in enumerate(zip(fm.PLATE_JOINTS, ("pitch_servo", "roll_servo"))):
        kp = float(m.actuator(act).gainprm[0])
        kv = float(m.dof_damping[m.jnt_dofadr[m.joint(joint).id]])
        i_max, i_min = inertia[:, k].max(), inertia[:, k].min()
        omega = np.sqrt(kp / i_max)
        assert omega / (2 * np.pi) > 3 * 40.0, joint
        assert 0.5 < kv / (2 * np.sqrt(kp * i_max)) < 1.0, joint  # damping ratio at the largest inertia
        assert np.sqrt(kp / i_min) * m.opt.timestep < 1.0, joint


def test_lift_gradient_wrt_hinge_stiffness_matches_finite_difference(fixed):
    base = fl.default_params(fixed, frequency=40.0)
    n_steps, discard = 800, 400  # 0.08 s, the last 0.04 s (1.6 cycles -> 1 whole cycle) averaged

    def lift(k_scale):
        p = eqx.tree_at(lambda q: q.hinge.stiffness, base, base.hinge.stiffness * k_scale)
        return fl.cycle_mean(fixed, p, n_steps, discard).force[2]

    g = float(jax.jit(jax.grad(lift))(1.0))
    f = jax.jit(lift)
    h = 1e-4
    fd = (float(f(1.0 + h)) - float(f(1.0 - h))) / (2 * h)
    assert abs(fd) > 1e-4 * float(f(1.0))  # a real sensitivity, not noise
    assert g == pytest.approx(fd, rel=0.02)


@pytest.mark.parametrize("f", [15.0, 25.0, 33.3, 35.0, 45.0])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_cycle_window_spans_an_exact_number_of_cycles(f, dtype):
    """The window is floor(span f) cycles long to float32 resolution at any
    frequency (a 0/1 window is off by up to a step: 1e-4 of a cycle mean at
    33.3 Hz), so a sinusoid averages to zero over it."""
    dt, n, disc = 1e-4, 3500, 1500
    w = np.asarray(fl.cycle_window(jnp.asarray(f, dtype), n, disc, dt), dtype=float)
    cycles = np.floor((n - disc) * dt * f + 1e-9)
    np.testing.assert_allclose(w.sum() * dt, cycles / f, rtol=1e-6)
    assert np.all((w >= 0) & (w <= 1)) and w[-1] == 1.0 and w[: disc - 1].sum() == 0.0
    assert np.count_nonzero((w > 0) & (w < 1)) <= 1  # only the first step is fractional
    t = np.arange(n) * dt
    for phase in (0.0, 0.3, 1.9):
        assert abs(w @ np.sin(2 * np.pi * f * t + phase)) / w.sum() < 1e-6


def test_cycle_window_without_a_whole_cycle_spans_the_window():
    dt, n, disc = 1e-3, 100, 40
    for f in (0.0, 10.0):  # f = 0 (no cycle) and 0.6 cycles in the span
        w = np.asarray(fl.cycle_window(jnp.asarray(f), n, disc, dt))
        np.testing.assert_array_equal(w, (np.arange(n) >= disc).astype(float))
