"""Geometric SE(3) wrench controller: closed forms, signs, closed-loop convergence."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from flapjax import rotor
from flapjax.control.wrench import (ControllerState, Reference, StateEstimate, WrenchGains, desired_rotation,
                                    wrench_command)
from flapjax.math import quat_integrate, quat_to_mat, rot_x

DT = 0.002


def _est(pos=(0, 0, 1.0), vel=(0, 0, 0), rot=None, rate=(0, 0, 0)):
    return StateEstimate(position=jnp.asarray(pos, float), velocity=jnp.asarray(vel, float),
                         rotation=jnp.eye(3) if rot is None else rot, rate=jnp.asarray(rate, float))


@pytest.mark.parametrize("name", ["quad_x", "hexa", "hexa_tilted"])
def test_hover_wrench_is_weight(name):
    prof = rotor.profiles.preset(name)
    g = WrenchGains.for_profile(prof)
    w, _ = wrench_command(g, prof, _est(), Reference.hover([0, 0, 1.0]), ControllerState.zero(), dt=DT)
    np.testing.assert_allclose(w, [0, 0, float(prof.mass) * 9.81, 0, 0, 0], atol=1e-12)


def test_underactuated_tilts_toward_target():
    prof = rotor.profiles.quad_x()
    g = WrenchGains.for_profile(prof)
    e = 0.1  # robot 10 cm beyond the target in +x
    w, _ = wrench_command(g, prof, _est(pos=(e, 0, 1.0)), Reference.hover([0, 0, 1.0]), ControllerState.zero(), dt=DT)
    kx, ki = float(g.position[0]), float(g.integral[0])
    fx = -(kx * e + ki * e * DT)
    mg = float(prof.mass) * 9.81
    theta = np.arctan2(-fx, mg)  # desired body z leans toward -x by theta
    np.testing.assert_allclose(w[:2], 0.0, atol=1e-14)  # no lateral force request
    np.testing.assert_allclose(w[2], mg * 1.0, rtol=1e-12)  # F_des . R e3 with R = I
    np.testing.assert_allclose(w[4], -float(g.attitude[1]) * np.sin(theta), rtol=1e-10)
    assert float(w[4]) < 0  # pitch so the thrust points to -x
    np.testing.assert_allclose(w[jnp.array([3, 5])], 0.0, atol=1e-12)


def test_fully_actuated_pushes_without_tilting():
    prof = rotor.profiles.hexa_tilted()
    g = WrenchGains.for_profile(prof)
    w, _ = wrench_command(g, prof, _est(pos=(0.1, 0, 1.0)), Reference.hover([0, 0, 1.0]), ControllerState.zero(), dt=DT)
    kx, ki = float(g.position[0]), float(g.integral[0])
    np.testing.assert_allclose(w[0], -(kx * 0.1 + ki * 0.1 * DT), rtol=1e-12)
    np.testing.assert_allclose(w[3:], 0.0, atol=1e-12)
    # And the allocator can realize it exactly.
    np.testing.assert_allclose(rotor.allocation_matrix(prof) @ rotor.allocate(prof, w), w, atol=1e-9)


def test_attitude_error_and_gyroscopic_term():
    prof = rotor.profiles.hexa()
    g = WrenchGains.for_profile(prof)
    th = 0.2
    w, _ = wrench_command(g, prof, _est(rot=rot_x(jnp.asarray(th))), Reference.hover([0, 0, 1.0]),
                          ControllerState.zero(), dt=DT)
    # F_des is vertical, so R_d = I and e_R = (sin th, 0, 0).
    np.testing.assert_allclose(w[3], -float(g.attitude[0]) * np.sin(th), rtol=1e-12)
    rate = jnp.array([0.5, -1.0, 2.0])
    w, _ = wrench_command(g, prof, _est(rate=rate), Reference.hover([0, 0, 1.0]), ControllerState.zero(), dt=DT)
    expect = -g.rate * rate + jnp.cross(rate, prof.inertia * rate)
    np.testing.assert_allclose(w[3:], expect, rtol=1e-12)


def test_desired_rotation_orthonormal_and_free_fall_safe():
    for f in (jnp.array([1.0, -2.0, 9.0]), jnp.zeros(3), jnp.array([0.0, 0.0, -3.0])):
        r = desired_rotation(f, jnp.asarray(0.4), fully_actuated=False)
        np.testing.assert_allclose(r.T @ r, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(jnp.linalg.det(r), 1.0, atol=1e-12)
    g = jax.jacfwd(lambda f: desired_rotation(f, jnp.asarray(0.4), fully_actuated=False))(jnp.zeros(3))
    assert bool(jnp.all(jnp.isfinite(g)))


def test_check_grads_controller():
    prof = rotor.profiles.quad_x()

    def f(pos, vel, rate, kx):
        g = WrenchGains.for_profile(prof)
        g = WrenchGains(position=kx, velocity=g.velocity, integral=g.integral, attitude=g.attitude, rate=g.rate)
        est = _est(pos=pos, vel=vel, rot=rot_x(jnp.asarray(0.1)), rate=rate)
        return wrench_command(g, prof, est, Reference.hover([0, 0, 1.0], 0.3), ControllerState.zero(), dt=DT)[0]

    check_grads(f, (jnp.array([0.1, -0.05, 0.97]), jnp.array([0.2, 0.1, -0.1]), jnp.array([0.1, 0.2, -0.3]),
                    jnp.full(3, 14.0)), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("name", ["quad_x", "hexa_tilted"])
def test_closed_loop_rigid_body_converges(name):
    # Ideal rotors (chain all off) on a rigid body integrated in pure JAX:
    # a 0.3 m offset with a 0.4 rad yaw error and a tilt settles within 7 s.
    prof = rotor.profiles.preset(name)
    g = WrenchGains.for_profile(prof)
    ref = Reference.hover([0.0, 0.0, 1.0], 0.4)
    opts = rotor.ChainOptions.all_off()
    free = rotor.ProximityInput.free_air(prof.n_rotors)
    act = rotor.ActuatorState.at_thrust(prof, jnp.ones(prof.n_rotors))

    def body(carry, _):
        x, v, q, w, c = carry
        r = quat_to_mat(q)
        wr, c = wrench_command(g, prof, _est(pos=x, vel=v, rot=r, rate=w), ref, c, dt=DT)
        out = rotor.realize_wrench(prof, wr, rotor.ChainInput(act, free), opts, dt=DT)
        f_world = r @ out.wrench[:3] - jnp.array([0, 0, 9.81]) * prof.mass
        tau = out.wrench[3:]
        w_dot = (tau - jnp.cross(w, prof.inertia * w)) / prof.inertia
        return (x + DT * v, v + DT * f_world / prof.mass, quat_integrate(q, w, DT), w + DT * w_dot, c), x

    q0 = jnp.array([jnp.cos(0.1), jnp.sin(0.1), 0.0, 0.0])
    carry0 = (jnp.array([0.3, -0.2, 0.8]), jnp.zeros(3), q0, jnp.zeros(3), ControllerState.zero())
    (x, v, q, w, _), xs = jax.lax.scan(body, carry0, None, length=3500)
    np.testing.assert_allclose(x, [0.0, 0.0, 1.0], atol=5e-3)
    np.testing.assert_allclose(v, 0.0, atol=5e-3)
    yaw = jnp.arctan2(quat_to_mat(q)[1, 0], quat_to_mat(q)[0, 0])
    np.testing.assert_allclose(yaw, 0.4, atol=5e-3)
