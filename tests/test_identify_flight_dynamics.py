"""The flight-log fit's rigid body (flapjax.sim.flapper.averaged_body)
against the simulator's (flapjax.sim.rigid): the same conventions (state
layout, quaternion R_WB as (w, x, y, z), world velocity, body rates) and the
same equations of motion, integrated differently (RK4 on the sample grid in
the fit, MuJoCo's semi-implicit Euler in the simulator). Both converge to one
trajectory as the step shrinks; at the fit's step they do not agree, so the
fit keeps its RK4 (swapping it would change every flight-log result)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams, cycle_averaged_wrench
from flapjax.sim.flapper import averaged_body as FD
from flapjax.math import euler_to_quat, quat_integrate, quat_to_mat
from flapjax.sim import rigid

PARAMS = CycleAveragedParams(roll_speed_coupling=8e-4, pitch_speed_coupling=-5e-4)
INERTIA = jnp.array([5e-6, 4e-6, 3e-6])
FREQ, PLATE = 44.0, jnp.array([0.05, -0.03])


def _state13():
    q = euler_to_quat(0.2, -0.3, 1.1)
    return jnp.concatenate([jnp.array([0.1, -0.2, 0.5, 0.3, -0.2, 0.1]), q, jnp.array([0.7, -1.1, 0.5])])


def _body():
    return rigid.RigidBody(mass=PARAMS.mass, inertia=INERTIA, gravity=(0.0, 0.0, -float(PARAMS.gravity)))


def _as_rigid(s):
    return rigid.RigidState(position=s[:3], velocity=s[3:6], quat=s[6:10], angular_velocity=s[10:13])


def _world_wrench(s):
    """The averaged model's wrench in the simulator's form: world force and world torque about the CoM."""
    rot = quat_to_mat(s[6:10])
    loads = cycle_averaged_wrench(PARAMS, frequency=FREQ, plate=PLATE, rot_world_body=rot, v_world=s[3:6],
                                  w_body=s[10:13])
    return jnp.concatenate([loads.force_world, rot @ loads.torque_body])


def test_state_derivative_equals_the_simulators_accelerations():
    s = _state13()
    d = FD.derivative(PARAMS, jnp.diag(INERTIA), s, FREQ, PLATE)
    lin, ang = rigid.accelerations(_body(), _as_rigid(s), _world_wrench(s))
    np.testing.assert_allclose(d[0:3], s[3:6], rtol=1e-15)
    np.testing.assert_allclose(d[3:6], lin, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(d[10:13], ang, rtol=1e-10)
    # the quaternion rate is the limit of the simulator's exponential-map update
    h = 1e-7
    q_rate = (quat_integrate(s[6:10], s[10:13], h) - s[6:10]) / h
    np.testing.assert_allclose(d[6:10], q_rate, atol=1e-6)


@jax.jit
def _euler_rollout(s, t, n):
    """The state after ``n`` simulator steps over ``t`` [s] (one compiled program for every ``n``)."""
    body = rigid.prepare(_body())

    def one(_, state):
        return rigid.step(body, state, _world_wrench(jnp.concatenate([state.position, state.velocity, state.quat,
                                                                      state.angular_velocity])), t / n)

    end = jax.lax.fori_loop(0, n, one, _as_rigid(s))
    return jnp.concatenate([end.position, end.velocity, end.quat, end.angular_velocity])


def test_both_integrators_converge_to_one_trajectory_but_differ_at_the_fits_step():
    s0, t, inertia = _state13(), 0.02, jnp.diag(INERTIA)
    ref = FD.rk4(PARAMS, inertia, s0, FREQ, PLATE, t, 256)
    err = lambda a: float(jnp.max(jnp.abs(a - ref)))  # noqa: E731
    rk4_4, rk4_16 = (FD.rk4(PARAMS, inertia, s0, FREQ, PLATE, t, n) for n in (4, 16))
    euler_4, euler_1024, euler_4096 = (_euler_rollout(s0, t, n) for n in (4, 1024, 4096))
    assert err(rk4_4) / err(rk4_16) > 100  # fourth order (4^4 = 256)
    assert 3.0 < err(euler_1024) / err(euler_4096) < 5.0  # first order, towards the same trajectory
    assert err(euler_4096) < 1e-4 * float(jnp.max(jnp.abs(ref - s0)))
    assert err(euler_4) > 1000 * err(rk4_4)  # at the fit's step the integrators are not interchangeable
