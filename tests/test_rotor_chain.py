"""The six-step chain: order, switches, realized wrench, gradients, noise streams."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from flapjax import rotor
from flapjax.noise import CommandNoise, command_noise

R = 0.0635
DT = 0.002


def _near(prof, h=0.5 * R, d=jnp.inf, normal=(-1.0, 0.0, 0.0)):
    n = prof.n_rotors
    return rotor.ProximityInput(
        ground_distance=jnp.full(n, h), wall_distance=jnp.full(n, d),
        wall_normal=jnp.tile(jnp.asarray(normal), (n, 1)),
    )


def test_saturation_before_proximity():
    prof = rotor.profiles.quad_x()
    opts = rotor.ChainOptions(actuator=False, drag=False, wind=False)
    w = jnp.array([0.0, 0.0, 60.0, 0.0, 0.0, 0.0])  # asks 15 N per rotor, T_max = 8
    state = rotor.ActuatorState.at_thrust(prof, jnp.full(4, 8.0))
    out = rotor.realize_wrench(prof, w, rotor.ChainInput(state, _near(prof, h=0.5 * R)), opts, dt=DT)
    np.testing.assert_allclose(out.thrust_command, 15.0, rtol=1e-12)
    np.testing.assert_allclose(out.thrust_clamped, 8.0, rtol=1e-12)
    assert bool(jnp.all(out.saturated))
    assert float(out.control_margin) < 0
    np.testing.assert_allclose(out.thrust_realized, 8.0 * 4 / 3, rtol=1e-12)  # > T_max
    np.testing.assert_allclose(out.wrench[2], 4 * 8.0 * 4 / 3, rtol=1e-12)


def test_wall_force_moment_about_com():
    prof = rotor.profiles.quad_x()
    opts = rotor.ChainOptions(actuator=False, ground_effect=False, drag=False, wind=False)
    thrust = jnp.full(4, 4.0)
    prox = rotor.ProximityInput(
        ground_distance=jnp.full(4, jnp.inf),
        wall_distance=jnp.array([1.5 * R, jnp.inf, jnp.inf, jnp.inf]),
        wall_normal=jnp.tile(jnp.array([-1.0, 0.0, 0.0]), (4, 1)),
    )
    inputs = rotor.ChainInput(rotor.ActuatorState.at_thrust(prof, thrust), prox)
    out = rotor.realize_thrusts(prof, thrust, inputs, opts, dt=DT)
    f_lat = 0.05 * 4.0 / 1.5**2
    k_wall = 1 + 0.05 / 1.5**2
    np.testing.assert_allclose(out.wall_force[0], [f_lat, 0, 0], rtol=1e-12)
    b = rotor.allocation_matrix(prof)
    t_real = thrust.at[0].multiply(k_wall)
    expect = b @ t_real + jnp.concatenate([jnp.array([f_lat, 0, 0]), jnp.cross(prof.positions[0], jnp.array([f_lat, 0, 0]))])
    np.testing.assert_allclose(out.wrench, expect, rtol=1e-12, atol=1e-14)
    assert float(out.wrench[0]) > 0  # net force toward the wall


def test_switches_and_drag_wind_frames():
    prof = rotor.profiles.hexa()
    w = jnp.array([0.0, 0.0, 21.0, 0.0, 0.0, 0.0])
    t0 = rotor.allocate(prof, w)
    state = rotor.ActuatorState.at_thrust(prof, t0)
    rot = jnp.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # yaw 90 deg
    motion = rotor.BodyMotion(rotation=rot, velocity_body=jnp.array([1.0, 0.0, 0.0]), time=jnp.array(0.0))
    params = rotor.ChainParams(wind=rotor.WindParams(constant=(0.5, 0.0, 0.0)), drag=rotor.DragParams((0.2, 0.2, 0.2), (0.0, 0.0, 0.0)))
    inputs = rotor.ChainInput(state, _near(prof, h=R, d=1.5 * R), motion=motion)
    ideal = rotor.realize_wrench(prof, w, inputs, rotor.ChainOptions.all_off(), dt=DT, params=params)
    np.testing.assert_allclose(ideal.wrench, w, atol=1e-12)
    full = rotor.realize_wrench(prof, w, inputs, rotor.ChainOptions(turbulence=False), dt=DT, params=params)
    np.testing.assert_allclose(full.drag_force, [-0.2, 0, 0], rtol=1e-12)
    # World +x wind seen from a body yawed by 90 deg is along body -y.
    np.testing.assert_allclose(full.wind_force, [0, -0.5, 0], atol=1e-12)
    np.testing.assert_allclose(full.ground_factor, 16 / 15, rtol=1e-12)
    assert float(full.wrench[2]) > 21.0 * 16 / 15


@pytest.mark.parametrize("name", ["quad_x", "hexa_tilted"])
def test_jit_vmap_matches_loop(name):
    prof = rotor.profiles.preset(name)
    n = prof.n_rotors
    xis = jax.random.normal(jax.random.key(3), (5, 3))
    ws = jax.random.normal(jax.random.key(4), (5, 6)) + jnp.array([0, 0, 20.0, 0, 0, 0])
    hs = jnp.linspace(0.3, 3.0, 5) * R
    params = rotor.ChainParams(wind=rotor.WindParams(turbulence_std=(0.3, 0.3, 0.1)))

    def f(w, h, k):
        st = rotor.ActuatorState.at_thrust(prof, jnp.full(n, 3.0))
        inputs = rotor.ChainInput(st, _near(prof, h=h, d=2 * R), turbulence_normal=k)
        return rotor.realize_wrench(prof, w, inputs, dt=DT, params=params).wrench

    batched = jax.jit(jax.vmap(f))(ws, hs, xis)
    for i in range(5):
        np.testing.assert_allclose(batched[i], f(ws[i], hs[i], xis[i]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["quad_x", "hexa_tilted"])
def test_check_grads_whole_chain(name):
    prof = rotor.profiles.preset(name)
    n = prof.n_rotors
    params = rotor.ChainParams(wind=rotor.WindParams(turbulence_std=(0.2, 0.2, 0.1), constant=(0.1, 0.0, 0.0),
                                                     gust_amplitude=[[0.3, 0.1, 0.0]], gust_start=[0.2], gust_duration=[0.4]))

    def f(wrench, speed, ground, wall, v_body, c_l, t_max):
        prof2 = eqx_set(prof, "thrust_max", t_max)
        prox = rotor.ProximityInput(ground_distance=ground, wall_distance=wall,
                                    wall_normal=jnp.tile(jnp.array([-0.96, 0.0, -0.28]), (n, 1)))
        p = rotor.ChainParams(proximity=eqx_set(params.proximity, "wall_lateral_coeff", c_l),
                              drag=params.drag, wind=params.wind)
        motion = rotor.BodyMotion(rotation=jnp.eye(3), velocity_body=v_body, time=jnp.array(0.3))
        inputs = rotor.ChainInput(rotor.ActuatorState(speed=speed), prox, motion=motion,
                                  turbulence_normal=jnp.array([0.3, -1.2, 0.7]))
        out = rotor.realize_wrench(prof2, wrench, inputs, dt=DT, params=p)
        return out.wrench

    args = (
        jnp.array([0.3, -0.2, 0.9 * 9.81 * float(prof.mass), 0.05, -0.04, 0.02]),
        jnp.linspace(0.6, 0.8, n),
        jnp.linspace(0.9, 2.5, n) * R,
        jnp.linspace(1.3, 3.5, n) * R,
        jnp.array([0.4, -0.3, 0.2]),
        jnp.array(0.05),
        prof.thrust_max,
    )
    check_grads(f, args, order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-5, rtol=1e-5)


def eqx_set(module, field, value):
    import equinox as eqx

    return eqx.tree_at(lambda m: getattr(m, field), module, value)


def test_gradients_at_clamp_boundary_and_zero_thrust():
    prof = rotor.profiles.quad_x()
    opts = rotor.ChainOptions(actuator=False, drag=False, wind=False)
    free = rotor.ProximityInput.free_air(4)
    st = rotor.ActuatorState.at_thrust(prof, jnp.full(4, 4.0))

    def fz(t_cmd):
        return rotor.realize_thrusts(prof, t_cmd, rotor.ChainInput(st, free), opts, dt=DT).wrench[2]

    # Exactly at T_max: JAX's tie rule gives 1/2 (documented); inside 1; beyond 0.
    g = jax.grad(fz)(jnp.array([8.0, 4.0, 9.0, 0.1]))
    np.testing.assert_allclose(g, [0.5, 1.0, 0.0, 0.5], rtol=1e-12)
    # Zero thrust through the actuator: finite (zero) derivative of the sqrt.
    opts_act = rotor.ChainOptions(saturation=False, drag=False, wind=False)

    def fa(t_cmd, speed):
        return rotor.realize_thrusts(prof, t_cmd, rotor.ChainInput(rotor.ActuatorState(speed=speed), free), opts_act,
                                     dt=DT).wrench[2]

    gt, gs = jax.grad(fa, argnums=(0, 1))(jnp.zeros(4), jnp.zeros(4))
    assert bool(jnp.all(jnp.isfinite(gt))) and bool(jnp.all(jnp.isfinite(gs)))
    np.testing.assert_array_equal(gt, 0.0)
    np.testing.assert_array_equal(gs, 0.0)  # T = T_max u^2 has zero slope at u = 0
    # Hovering rotors: ordinary, positive sensitivities.
    gt, gs = jax.grad(fa, argnums=(0, 1))(jnp.full(4, 4.0), jnp.full(4, 0.5))
    assert bool(jnp.all(gt > 0)) and bool(jnp.all(gs > 0))


def test_command_and_turbulence_draws_enter_only_their_own_step():
    prof = rotor.profiles.quad_x()
    opts = rotor.ChainOptions(command_noise=True, turbulence=True)
    params = rotor.ChainParams(wind=rotor.WindParams(turbulence_std=(1.0, 1.0, 1.0)))
    command = CommandNoise(0.2)
    st = rotor.ActuatorState.at_thrust(prof, jnp.full(4, 4.0))
    w = jnp.array([0, 0, 16.0, 0, 0, 0])
    free = rotor.ProximityInput.free_air(4)

    def run(nk, tk):
        inputs = rotor.ChainInput(st, free, turbulence_normal=tk, command_noise=command_noise(command, nk))
        return rotor.realize_wrench(prof, w, inputs, opts, dt=DT, params=params)

    z1, z2 = jnp.array([1.0, -0.5, 0.2, 2.0]), jnp.array([0.0, 0.5, -1.0, 1.0])
    t1, t2 = jnp.array([0.3, 0.1, -0.2]), jnp.array([-1.0, 0.4, 0.9])
    a = run(z1, t1)
    b = run(z2, t1)
    c = run(z1, t2)
    base = rotor.allocate(prof, w)
    # Command noise is std * draw, added before the clamp.
    np.testing.assert_allclose(a.thrust_command, base + 0.2 * z1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b.thrust_command, base + 0.2 * z2, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(a.disturbance_state.turbulence, b.disturbance_state.turbulence)
    np.testing.assert_array_equal(a.thrust_command, c.thrust_command)
    assert float(jnp.max(jnp.abs(a.disturbance_state.turbulence - c.disturbance_state.turbulence))) > 1e-3


def test_control_margin_is_the_nearest_limit_as_a_fraction_of_the_range():
    prof = rotor.profiles.quad_x()  # T_min = 0.1 N, T_max = 8 N
    opts = rotor.ChainOptions(actuator=False, ground_effect=False, wall_effect=False, drag=False, wind=False)
    inputs = rotor.ChainInput(rotor.ActuatorState.at_thrust(prof, jnp.full(4, 4.0)), _near(prof, h=jnp.inf))
    span = 8.0 - 0.1
    for command, margin in (([15.0, 4.0, 4.0, 4.0], (8.0 - 15.0) / span),   # beyond T_max
                            ([6.0, 1.0, 3.0, 5.0], (1.0 - 0.1) / span),     # nearest: rotor 1 to T_min
                            ([7.5, 2.0, 3.0, 5.0], (8.0 - 7.5) / span),     # nearest: rotor 0 to T_max
                            ([-0.5, 2.0, 3.0, 5.0], (-0.5 - 0.1) / span)):  # below T_min
        out = rotor.realize_thrusts(prof, jnp.array(command), inputs, opts, dt=DT)
        np.testing.assert_allclose(out.control_margin, margin, rtol=1e-12)
        np.testing.assert_array_equal(out.saturated, (np.array(command) >= 8.0) | (np.array(command) <= 0.1))


def test_drag_acts_on_the_velocity_relative_to_the_air():
    # A yawed, pitched body: steady air velocity in the world, body velocity
    # in the body frame. Moving with the air gives no drag; at rest the drag
    # pushes along the air velocity expressed in the body frame.
    prof = rotor.profiles.quad_x()
    opts = rotor.ChainOptions(actuator=False, ground_effect=False, wall_effect=False, wind=False)
    air = jnp.array([2.0, -1.0, 0.5])
    params = rotor.ChainParams(wind=rotor.WindParams(air_velocity=air))
    yaw, pitch = 0.9, 0.3
    rz = jnp.array([[np.cos(yaw), -np.sin(yaw), 0.0], [np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
    ry = jnp.array([[np.cos(pitch), 0.0, np.sin(pitch)], [0.0, 1.0, 0.0], [-np.sin(pitch), 0.0, np.cos(pitch)]])
    rot = rz @ ry
    thrust = jnp.full(4, 4.0)

    def drag(v_body):
        motion = rotor.BodyMotion(rotation=rot, velocity_body=v_body, time=jnp.zeros(()))
        inputs = rotor.ChainInput(rotor.ActuatorState.at_thrust(prof, thrust), _near(prof, h=jnp.inf), motion)
        return rotor.realize_thrusts(prof, thrust, inputs, opts, dt=DT, params=params).drag_force

    np.testing.assert_allclose(drag(rot.T @ air), 0.0, atol=1e-15)
    a_body = np.asarray(rot.T @ air)
    d = rotor.DragParams()
    expected = np.asarray(d.linear) * a_body + np.asarray(d.quadratic) * np.linalg.norm(a_body) * a_body
    np.testing.assert_allclose(drag(jnp.zeros(3)), expected, rtol=1e-13)
