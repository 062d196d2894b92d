"""The simulated worlds the benchmarks time, built through flapjax's public API.

Each builder returns a :class:`Workload`: a pure function of batched
``args`` that runs ``n_steps`` steps of ``n_worlds`` worlds under
``jax.lax.scan`` inside ``jax.vmap`` and returns the final state (no
per-step trace, so memory measures the simulation, not a recording).
Float precision is JAX's default (float32 unless x64 is enabled).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from mujoco import mjx

from flapjax import rng, rotor
from flapjax.control.wrench import Reference, wrench_command
from flapjax.math import quat_to_mat
from flapjax.sim import flapper as fl
from flapjax.sim.multirotor import MultirotorWorld
from flapjax.sim.multirotor import step as mstep
from flapjax.sim.rollout import broadcast_worlds

# Multirotor scene: the X-quad (0.18 m arms, 0.0635 m rotor radius) 0.3 m
# above the ground and near a vertical wall at x = 1 m, 0.1 m further from it
# than WALL_CONTACT_POSITION, so the timed window is contact-free (the
# ground effect and the near-wall effect still act); the worlds spread
# +-2 cm around it.
WALL_POSITION = (0.6, 0.0, 0.3)
# In contact: the end-effector starts ~1.5 cm inside the wall, so the contact
# solver works in every step of the timed window (the "_contact" workloads).
WALL_CONTACT_POSITION = (0.7, 0.0, 0.3)


@dataclass
class Workload:
    name: str
    fn: Callable
    args: tuple
    n_worlds: int
    n_steps: int
    dt: float

    @property
    def world_steps(self) -> int:
        return self.n_worlds * self.n_steps


def _final_only(step, n_steps):
    """scan of ``step(carry) -> carry`` keeping only the final carry."""
    def run(carry):
        return jax.lax.scan(lambda c, _: (step(c), None), carry, None, length=n_steps)[0]
    return run


# --------------------------------------------------------------------------- flapper


def flapper_batch(root: str, aero_model: str, n_worlds: int):
    robot = fl.make_robot(root, aero_model)
    if root == "fixed":
        params = fl.sweep_params(np.linspace(20.0, 40.0, n_worlds), robot=robot)
    else:
        base = fl.default_params(robot)
        f_h = float(base.averaged.hover_frequency)
        base = eqx.tree_at(lambda p: p.stroke.frequency, base, jnp.asarray(f_h))
        params = broadcast_worlds(base, n_worlds)
        params = eqx.tree_at(lambda p: p.stroke.frequency, params,
                             jnp.asarray(f_h * np.linspace(0.98, 1.02, n_worlds)))
    state = eqx.filter_jit(jax.vmap(lambda p: fl.init_state(robot, p)))(params)
    return robot, params, state


def flapper(root: str, aero_model: str, n_worlds: int, n_steps: int) -> Workload:
    """Open-loop flapper worlds through :func:`flapjax.sim.flapper.step`."""
    robot, params, state = flapper_batch(root, aero_model, n_worlds)

    def fn(robot, params, state):
        def one(p, s):
            return _final_only(lambda c: fl.step(robot, p, c)[0], n_steps)(s)
        return jax.vmap(one)(params, state)

    return Workload(f"flapper_{root}_{aero_model}", fn, (robot, params, state), n_worlds, n_steps, robot.dt)


def flapper_bare(root: str, aero_model: str, n_worlds: int, n_steps: int) -> Workload:
    """The same model and batch advanced by bare ``mjx.step`` (no bridge, no aero)."""
    robot, params, state = flapper_batch(root, aero_model, n_worlds)

    def fn(model, data):
        return jax.vmap(lambda d: _final_only(lambda c: mjx.step(model, c), n_steps)(d))(data)

    return Workload(f"flapper_{root}_{aero_model}_bare", fn, (robot.model, state.data), n_worlds, n_steps, robot.dt)


def flapper_kernel(root: str, aero_model: str, n_worlds: int, n_steps: int) -> Workload:
    """Only the aerodynamic kernels of one step, as the bridge calls them,
    from kinematics computed once; the inputs drift each iteration so XLA
    cannot hoist the work out of the loop."""
    robot, params, state = flapper_batch(root, aero_model, n_worlds)
    data = jax.jit(jax.vmap(lambda m, d: mjx.fwd_velocity(m, mjx.fwd_position(m, d)), in_axes=(None, 0)))(
        robot.model, state.data)

    if aero_model == "wing":
        def kernel(p, d):
            return fl.wing_aero(robot, p, d).xfrc.sum(0)
    else:
        def kernel(p, d):
            base = fl.base_frame(robot, d)
            return fl.averaged_aero(robot, p, base, p.stroke.frequency, p.plate).xfrc[robot.base_body]

    def fn(params, data):
        def one(p, d):
            def step(d):
                # Feed the result back into every field the kernels read, so
                # no part of them is loop-invariant (XLA would hoist it).
                e = 1e-12 * jnp.sum(kernel(p, d))
                return d.replace(qpos=d.qpos + e, qvel=d.qvel + e, cvel=d.cvel + e, xpos=d.xpos + e,
                                 xipos=d.xipos + e, xmat=d.xmat + e, subtree_com=d.subtree_com + e)
            return _final_only(step, n_steps)(d).qvel
        return jax.vmap(one)(params, data)

    return Workload(f"flapper_{root}_{aero_model}_kernel", fn, (params, data), n_worlds, n_steps, robot.dt)


# --------------------------------------------------------------------------- multirotor


def multirotor_world(iterations: int = 3) -> MultirotorWorld:
    return MultirotorWorld(rotor.profile.quad_x(), options=rotor.ChainOptions(), dt=0.002, iterations=iterations)


def multirotor_batch(world: MultirotorWorld, n_worlds: int, position=None):
    """Params, state and hover reference of ``n_worlds`` worlds around
    ``position`` (default :data:`WALL_POSITION`, clear of the wall)."""
    params = broadcast_worlds(world.default_params(), n_worlds)
    keys = jax.random.split(jax.random.PRNGKey(0), n_worlds)
    pos = jnp.broadcast_to(jnp.asarray(WALL_POSITION if position is None else position), (n_worlds, 3))
    # Small per-world offsets so the worlds are not identical.
    pos = pos + jnp.linspace(-0.02, 0.02, n_worlds)[:, None] * jnp.array([1.0, 1.0, 1.0])
    state = jax.jit(jax.vmap(lambda p, k, x: world.reset(p, k, x)))(params, keys, pos)
    ref = jax.jit(jax.vmap(lambda x: Reference.hover(x)))(pos)
    return params, state, ref


def _prepared_args(world: MultirotorWorld, params):
    """``prepare`` of every world, done once before timing (the ``prepared=True`` workloads)."""
    return eqx.filter_jit(lambda p: jax.vmap(world.prepare)(p))(params)


def _multirotor_fn(world: MultirotorWorld, n_steps: int, prepared: bool):
    def fn(params, state, ref):
        def one(p, s, r):
            ready = p if prepared else world.prepare(p)
            return _final_only(lambda c: world.step(ready, c, r)[0], n_steps)(s)
        return jax.vmap(one)(params, state, ref)
    return fn


def multirotor(n_worlds: int, n_steps: int, *, iterations: int = 3, in_contact: bool = False,
               prepared: bool = False) -> Workload:
    """X-quad near a wall and the ground, full chain, MJX backend
    (:meth:`MultirotorWorld.step`, the body of its rollout); clear of the
    wall, or (``in_contact``, workload ``multirotor_mjx_contact``) pressed
    into it from :data:`WALL_CONTACT_POSITION`. ``prepared``: the worlds are
    prepared before the timed function (which then holds only the steps)."""
    world = multirotor_world(iterations)
    params, state, ref = multirotor_batch(world, n_worlds, WALL_CONTACT_POSITION if in_contact else None)
    if prepared:
        params = _prepared_args(world, params)
    fn = _multirotor_fn(world, n_steps, prepared)

    name = "multirotor_mjx_contact" if in_contact else "multirotor_mjx"
    return Workload(name, fn, (params, state, ref), n_worlds, n_steps, world.dt)


def multirotor_bare(n_worlds: int, n_steps: int) -> Workload:
    """The same MJX model and batch advanced by bare ``mjx.step``, with a
    constant weight-cancelling force on the base so the robot hovers in the
    same contact-free state as under the chain (a falling robot would hit
    the ground and time the contact solver instead)."""
    world = multirotor_world()
    params, state, _ = multirotor_batch(world, n_worlds)
    base = world.ids.base

    def fn(params, data):
        def one(p, d):
            m = world.prepare(p).model
            lift = jnp.zeros_like(d.xfrc_applied).at[base, 2].set((p.profile.mass * 9.81).astype(d.qpos.dtype))
            d = d.replace(xfrc_applied=lift)
            return _final_only(lambda c: mjx.step(m, c), n_steps)(d)
        return jax.vmap(one)(params, data)

    return Workload("multirotor_bare", fn, (params, state.data), n_worlds, n_steps, world.dt)


def _chain_step(world: MultirotorWorld, prepared, pos, quat, vel, w_body, aux, ref, step_index):
    """Controller + noise + proximity + chain of one world (the stages of
    :meth:`MultirotorWorld.step` around the backend's advance); returns the
    world wrench [F; tau] (6,) and the next (actuator, disturbance,
    controller, noise key, turbulence key)."""
    actuator, disturbance, controller, noise_key, turb_key = aux
    p = prepared.params
    prof = p.profile
    draws = rng.normals(jnp.stack([noise_key, turb_key]), step_index, 12, prof.mass.dtype)
    z, xi = draws[0], draws[1, :3]
    qpos = jnp.concatenate([pos, quat])
    data = mstep.BodyState(qpos=qpos, position=pos, quat=quat, rotation=quat_to_mat(quat), velocity=vel,
                           rate=w_body)
    estimate, _ = mstep.estimate(p.noise.sensor, z.reshape(4, 3), data)
    wrench_cmd, controller = wrench_command(p.gains, prof, estimate, ref, controller, dt=world.dt)
    prox = mstep.proximity(p.scene, prof, data, with_box=False)
    time = step_index.astype(prof.mass.dtype) * world.dt
    inputs = mstep.chain_input(p, actuator, disturbance, prox, data, time, (None, None, xi))
    out = mstep.realize(prepared, wrench_cmd, inputs, world.options, world.dt)
    return mstep.to_world(data.rotation, out.wrench), (out.actuator_state, out.disturbance_state, controller,
                                                         noise_key, turb_key)


def multirotor_chain(n_worlds: int, n_steps: int) -> Workload:
    """Only the controller + rotor chain of each step, on a drifting state."""
    world = multirotor_world()
    params, state, ref = multirotor_batch(world, n_worlds)

    def fn(params, state, ref):
        def one(p, s, r):
            prepared = world.prepare(p)
            q, v = s.data.qpos, s.data.qvel
            aux = (s.actuator, s.disturbance, s.controller, s.noise_key, s.turbulence_key)

            def step(c):
                # Every input drifts with the output: nothing is loop-invariant.
                pos, quat, vel, rate, aux, k = c
                w, aux = _chain_step(world, prepared, pos, quat, vel, rate, aux, r, k)
                e = 1e-9 * jnp.sum(w)
                return pos + e, quat + e, vel + e, rate + e, aux, k + 1
            return _final_only(step, n_steps)((q[0:3], q[3:7], v[0:3], v[3:6], aux, s.step))[0]
        return jax.vmap(one)(params, state, ref)

    return Workload("multirotor_chain", fn, (params, state, ref), n_worlds, n_steps, world.dt)


def multirotor_rigid(n_worlds: int, n_steps: int, *, sensor_noise: bool = True, prepared: bool = False) -> Workload:
    """Full chain on the pure-JAX rigid-body backend
    (``MultirotorWorld(backend="rigid")``, the body of its rollout);
    ``sensor_noise=False`` builds the world without sensor-noise draws;
    ``prepared`` as for :func:`multirotor`."""
    world = MultirotorWorld(rotor.profile.quad_x(), options=rotor.ChainOptions(), dt=0.002, backend="rigid",
                            sensor_noise=sensor_noise)
    params, state, ref = multirotor_batch(world, n_worlds)
    if prepared:
        params = _prepared_args(world, params)
    fn = _multirotor_fn(world, n_steps, prepared)

    name = "multirotor_rigid" if sensor_noise else "multirotor_rigid_exact"
    return Workload(name, fn, (params, state, ref), n_worlds, n_steps, world.dt)


# The multirotors with ``prepare`` done before the timed function: the
# roofline's programs hold only the steps (and no batched LAPACK call, which
# two host devices cannot run at once, see flapjax.sim.sharding).
PREPARED_BUILDERS: dict[str, Callable[..., Workload]] = {
    "multirotor_mjx": lambda n, k: multirotor(n, k, prepared=True),
    "multirotor_mjx_contact": lambda n, k: multirotor(n, k, in_contact=True, prepared=True),
    "multirotor_rigid": lambda n, k: multirotor_rigid(n, k, prepared=True),
    "multirotor_rigid_exact": lambda n, k: multirotor_rigid(n, k, sensor_noise=False, prepared=True),
}

BUILDERS: dict[str, Callable[..., Workload]] = {
    "flapper_fixed_wing": lambda n, k: flapper("fixed", "wing", n, k),
    "flapper_free_averaged": lambda n, k: flapper("free", "averaged", n, k),
    "multirotor_mjx": multirotor,
    "multirotor_mjx_contact": lambda n, k: multirotor(n, k, in_contact=True),
    "multirotor_rigid": multirotor_rigid,
    "multirotor_rigid_exact": lambda n, k: multirotor_rigid(n, k, sensor_noise=False),
}

LABELS = {
    "flapper_fixed_wing": "flapper, fixed base, per-wing aero",
    "flapper_free_averaged": "flapper, free, cycle-averaged aero",
    "multirotor_mjx": "X-quad, full chain near a wall (MJX)",
    "multirotor_mjx_contact": "X-quad, full chain pressed into a wall (MJX, in contact)",
    "multirotor_rigid": "X-quad, full chain near a wall (rigid backend)",
    "multirotor_rigid_exact": "X-quad, full chain near a wall (rigid backend, no sensor-noise draws)",
}

