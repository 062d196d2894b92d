"""Pure-JAX dynamics of a fixed-base tree of hinge and slide joints.

The fixed-base flapper (force-balance rig: plate on two hinges, a stroke and
a feathering hinge per wing) is six joints on a welded base. A general
``mjx.step`` spends hundreds of small kernels on that (body-tree scans,
sparse mass-matrix scatters); here the same model's dynamics are a handful
of dense (nv,)- and (nbody, nv)-shaped expressions, with the same results as
MuJoCo's to round-off (tests/test_sim_tree.py compares every field with
MuJoCo's C step):

    kinematics   R_b = R_parent R_body(b) prod_j R(axis_j, q_j - q0_j),
                 slide joints add axis_j (q_j - q0_j)          (mj_kinematics)
    Jacobians    at each body's CoM c_b, for every joint j on its path to
                 the world: hinge  Jp = a_j x (c_b - anchor_j),  Jr = a_j;
                 slide  Jp = a_j,  Jr = 0
    mass matrix  M = sum_b m_b Jp_b^T Jp_b + Jr_b^T I_b Jr_b + diag(armature)
    bias         c = sum_b Jp_b^T m_b (Jp_b' qd - g) + Jr_b^T (I_b Jr_b' qd
                     + w_b x I_b w_b),  J' qd the velocity-product
                 acceleration, from the rates of the joint axes and anchors
    forces       f = -k (q - q_spring) - b qd + actuators (joint transmission,
                 affine bias) + qfrc_applied + sum_b J_b^T xfrc_applied_b - c
    Euler        (M + h diag(b)) qacc = f;  qd += h qacc;  q += h qd
                 (MuJoCo's Euler with implicit joint damping)

The 6 x 6 system is solved by an unrolled Cholesky factorization (plain
arithmetic, no LAPACK call: batched LAPACK calls are what deadlock large
CPU batches, docs/mjx_notes.md, Dense-Jacobian deadlock).

The state stays an ``mjx.Data`` (``qpos``, ``qvel``, ``time``; :func:`forward`
fills the kinematic fields the flapper bridge reads: ``xpos``, ``xmat``,
``xipos``, ``ximat``, ``subtree_com``, ``cvel``), so both backends share the
bridge code. :func:`check_model` refuses what this does not integrate (free
or ball joints, contacts, tendons, actuators other than joint servos, other
integrators).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import equinox as eqx
import mujoco
import numpy as np
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float
from mujoco import mjx

from flapjax.math import quat_integrate
from flapjax.sim.tree_kinematics import (  # noqa: F401 (forward, kinematics, jacobians: part of this module's API)
    FREE, HINGE, SLIDE, Frames, forward, frames, jacobians, kinematics, mat_mul, mat_vec, scalar_dofs,
    velocity_product_accelerations,
)
from flapjax.validation import ConfigError


#: XLA options for programs that step the tree on CPU:
#:
#: - ``xla_cpu_experimental_ynn_fusion_type: ""``: no reductions handed to the
#:   YNNPACK library, whose per-call cost dwarfs the tree's arrays of a few
#:   dozen numbers (the step ran 2.5x slower with them: 64 worlds x 6000
#:   steps in 2.5 s instead of 1.0 s; forward-mode gradients of a 3-world
#:   rollout 5.4x the forward pass instead of 2.9x);
#: - ``xla_cpu_use_fusion_emitters: False``: XLA's classic CPU emitters, which
#:   compile these programs in about two thirds of the time at the same speed.
CPU_COMPILER_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_cpu_experimental_ynn_fusion_type": ""}


def compiler_options(platform: str | None = None) -> dict[str, Any] | None:
    """XLA options for programs that step the tree on ``platform`` ("cpu",
    "gpu", ...; default JAX's default backend): :data:`CPU_COMPILER_OPTIONS`
    on CPU, else none. Pass them to ``jax.jit(fn, compiler_options=...)``;
    :func:`filter_jit` does it for you."""
    platform = jax.default_backend() if platform is None else platform
    return dict(CPU_COMPILER_OPTIONS) if platform == "cpu" else None


def filter_jit(fun: Callable) -> Callable:
    """``eqx.filter_jit(fun)`` compiled with :func:`compiler_options` of the
    default backend, chosen at the first call on each backend (so importing
    a module that uses it initializes no backend).

    JAX accepts compiler options on top-level programs only: called while
    another transformation traces it (inside a jitted fit step, under
    ``jax.jacfwd``), ``fun`` is a plain nested ``eqx.filter_jit`` and the
    outer program's options apply.
    """
    programs: dict[Any, Callable] = {}

    @functools.wraps(fun)
    def call(*args, **kwargs):
        nested = any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs)))
        key = "nested" if nested else jax.default_backend()
        if key not in programs:
            programs[key] = eqx.filter_jit(fun, compiler_options=None if nested else compiler_options(key))
        return programs[key](*args, **kwargs)

    return call


def check_model(m: mujoco.MjModel) -> None:
    """Raise :class:`ConfigError` naming the first feature of ``m`` that the
    tree step does not integrate."""
    jt = np.asarray(m.jnt_type)
    if m.njnt == 0 or np.any((jt != HINGE) & (jt != SLIDE) & (jt != FREE)):
        raise ConfigError("backend: the pure-JAX tree step needs hinge and slide joints and at most a free joint "
                          f"on a root body (joint types {jt.tolist()}); use backend='mjx'")
    for j in np.flatnonzero(jt == FREE):
        b = int(m.jnt_bodyid[j])
        if m.body_parentid[b] != 0 or int(np.sum(m.jnt_bodyid == b)) != 1:
            raise ConfigError("backend: the pure-JAX tree step takes a free joint only as the one joint of a body "
                              f"attached to the world (joint types {jt.tolist()}); use backend='mjx'")
        if m.jnt_stiffness[j] != 0:
            raise ConfigError(f"backend: the pure-JAX tree step has no spring on a free joint (joint {j} has "
                              f"stiffness {m.jnt_stiffness[j]:g}); use backend='mjx'")
    if m.opt.integrator != mujoco.mjtIntegrator.mjINT_EULER:
        raise ConfigError(f"backend: the pure-JAX tree step integrates MuJoCo's Euler only, the model's integrator is "
                          f"{mujoco.mjtIntegrator(m.opt.integrator).name}; use backend='mjx'")
    no_constraints = (m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONSTRAINT) or (
        m.neq == 0 and not np.any(m.jnt_limited) and not np.any(m.dof_frictionloss)
        and ((m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT) or not _collides(m)))
    if not no_constraints:
        raise ConfigError("backend: the pure-JAX tree step has no constraint solver (contacts, limits, equality, "
                          "friction loss); use backend='mjx'")
    if m.ntendon or m.opt.density or m.opt.viscosity or np.any(m.body_gravcomp) or np.any(m.opt.wind):
        raise ConfigError("backend: the pure-JAX tree step has no tendons, fluid forces or gravity compensation; "
                          "use backend='mjx'")
    if m.nu and (np.any(m.actuator_trntype != mujoco.mjtTrn.mjTRN_JOINT)
                 or np.any(m.actuator_dyntype != mujoco.mjtDyn.mjDYN_NONE)
                 or np.any(m.actuator_gaintype != mujoco.mjtGain.mjGAIN_FIXED)
                 or np.any((m.actuator_biastype != mujoco.mjtBias.mjBIAS_NONE)
                           & (m.actuator_biastype != mujoco.mjtBias.mjBIAS_AFFINE))):
        raise ConfigError("backend: the pure-JAX tree step drives joints by fixed-gain, affine-bias actuators "
                          "without activation dynamics only (position/motor servos); use backend='mjx'")


def _collides(m: mujoco.MjModel) -> bool:
    return bool(m.npair) or bool(np.any((m.geom_contype != 0) | (m.geom_conaffinity != 0)))


# ---------------------------------------------------------------------------
# Dynamics
# ---------------------------------------------------------------------------


def _cholesky_solve(a: Float[Array, "n n"], b: Float[Array, " n"]) -> Float[Array, " n"]:
    """Solve ``a x = b`` for a small symmetric positive-definite ``a`` by an
    unrolled Cholesky factorization (scalar arithmetic only)."""
    n = a.shape[0]
    low = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            s = a[i, j] - sum((low[i][k] * low[j][k] for k in range(j)), jnp.zeros((), a.dtype))
            low[i][j] = jnp.sqrt(s) if i == j else s / low[j][j]
    y = [None] * n
    for i in range(n):
        y[i] = (b[i] - sum((low[i][k] * y[k] for k in range(i)), jnp.zeros((), a.dtype))) / low[i][i]
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = (y[i] - sum((low[k][i] * x[k] for k in range(i + 1, n)), jnp.zeros((), a.dtype))) / low[i][i]
    return jnp.stack(x)


def mass_and_bias(m: mjx.Model, qpos: Float[Array, " nq"], qvel: Float[Array, " nv"],
                  fr: Frames | None = None) -> tuple[Array, Array, tuple]:
    """Joint-space inertia ``M`` (nv, nv) [kg m^2 or kg], bias forces ``c``
    (nv,) (velocity products and gravity, MuJoCo's ``qfrc_bias``) and the
    (Jp, Jr) Jacobians at the centres of mass. ``fr``: :func:`frames` of
    ``qpos`` when the caller has them (computed here otherwise)."""
    dtype = qpos.dtype
    kin, jp, jr = frames(m, qpos) if fr is None else fr
    w = mat_vec(jr, qvel)
    acc, alpha = velocity_product_accelerations(m, kin, qvel, mat_vec(jp, qvel))
    ximat = kin["ximat"]
    inertia = mat_mul(ximat * m.body_inertia.astype(dtype)[:, None, :], jnp.swapaxes(ximat, 1, 2))
    mass = m.body_mass.astype(dtype)
    gravity = m.opt.gravity.astype(dtype)
    big_m = jnp.sum(mass[:, None, None, None] * jp[..., :, None] * jp[..., None, :], axis=(0, 1))
    big_m = big_m + jnp.sum(jr[..., :, None] * mat_mul(inertia, jr)[..., None, :], axis=(0, 1))
    big_m = big_m + jnp.diag(m.dof_armature.astype(dtype))
    force = mass[:, None] * (acc - gravity[None, :])
    torque = mat_vec(inertia, alpha) + jnp.cross(w, mat_vec(inertia, w))
    bias = _wrench_to_joints(jp, jr, force, torque)
    return big_m, bias, (jp, jr)


def _wrench_to_joints(jp: Array, jr: Array, force: Array, torque: Array) -> Array:
    """(nv,) ``sum_b Jp_b^T F_b + Jr_b^T tau_b`` of per-body forces and
    torques (nbody, 3) at the centres of mass."""
    return jnp.sum(jp * force[:, :, None] + jr * torque[:, :, None], axis=(0, 1))


def actuator_force(m: mjx.Model, qpos: Float[Array, " nq"], qvel: Float[Array, " nv"],
                   ctrl: Float[Array, " nu"]) -> Float[Array, " nv"]:
    """(nv,) joint torques of the actuators: ``gear (gain ctrl + b0 + b1 L + b2 L')``
    with ``L = gear q`` (joint transmission), ``ctrl`` and force clamped to
    their ranges where limited."""
    dtype = qpos.dtype
    if m.nu == 0:
        return jnp.zeros_like(qvel)
    jnt = np.asarray(m.actuator_trnid)[:, 0]
    qadr, dadr = np.asarray(m.jnt_qposadr)[jnt], np.asarray(m.jnt_dofadr)[jnt]
    gear = m.actuator_gear[:, 0].astype(dtype)
    ctrl = ctrl.astype(dtype)
    limited = np.asarray(m.actuator_ctrllimited).astype(bool)
    if limited.any():
        lo, hi = m.actuator_ctrlrange[:, 0].astype(dtype), m.actuator_ctrlrange[:, 1].astype(dtype)
        ctrl = jnp.where(limited, jnp.clip(ctrl, lo, hi), ctrl)
    length, velocity = gear * qpos[qadr], gear * qvel[dadr]
    gain, bias = m.actuator_gainprm[:, 0].astype(dtype), m.actuator_biasprm.astype(dtype)
    affine = jnp.asarray(np.asarray(m.actuator_biastype) == mujoco.mjtBias.mjBIAS_AFFINE, dtype)
    force = gain * ctrl + affine * (bias[:, 0] + bias[:, 1] * length + bias[:, 2] * velocity)
    flimited = np.asarray(m.actuator_forcelimited).astype(bool)
    if flimited.any():
        lo, hi = m.actuator_forcerange[:, 0].astype(dtype), m.actuator_forcerange[:, 1].astype(dtype)
        force = jnp.where(flimited, jnp.clip(force, lo, hi), force)
    return jnp.zeros_like(qvel).at[dadr].add(gear * force)


def step(m: mjx.Model, d: mjx.Data, fr: Frames | None = None) -> mjx.Data:
    """One Euler step of length ``m.opt.timestep`` under ``d.ctrl``,
    ``d.qfrc_applied`` and ``d.xfrc_applied`` (world frame, about each body's
    CoM); returns ``d`` with ``qpos``, ``qvel``
    and ``time`` advanced (``qacc`` and the kinematic fields are left as they
    were, as after ``mjx.step``: call :func:`forward`). ``fr``:
    :func:`frames` of ``d.qpos`` when the caller has them already (the
    flapper bridge computes them for its aerodynamics)."""
    dtype = d.qpos.dtype
    h = jnp.asarray(m.opt.timestep, dtype)
    q, qd = d.qpos, d.qvel
    big_m, bias, (jp, jr) = mass_and_bias(m, q, qd, fr)
    dofs, qadr = scalar_dofs(m)
    damping = m.dof_damping.astype(dtype)
    stiffness = m.jnt_stiffness.astype(dtype)[np.asarray(m.dof_jntid)[dofs]]
    spring = jnp.zeros_like(qd).at[dofs].set(-stiffness * (q[qadr] - m.qpos_spring[qadr].astype(dtype)))
    passive = spring - damping * qd
    xfrc = d.xfrc_applied.astype(dtype)
    applied = _wrench_to_joints(jp, jr, xfrc[:, :3], xfrc[:, 3:])
    force = passive - bias + d.qfrc_applied.astype(dtype) + actuator_force(m, q, qd, d.ctrl) + applied
    eulerdamp = not (int(m.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_EULERDAMP))
    system = big_m + jnp.diag(h * damping) if eulerdamp else big_m
    qacc = _cholesky_solve(system, force)
    qvel = qd + h * qacc
    qpos = q.at[qadr].add(h * qvel[dofs])
    for j in np.flatnonzero(np.asarray(m.jnt_type) == FREE):  # MuJoCo's mj_integratePos
        a, v = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
        qpos = qpos.at[a : a + 3].add(h * qvel[v : v + 3])
        qpos = qpos.at[a + 3 : a + 7].set(quat_integrate(q[a + 3 : a + 7], qvel[v + 3 : v + 6], h))
    return d.replace(qpos=qpos, qvel=qvel, time=d.time + h)
