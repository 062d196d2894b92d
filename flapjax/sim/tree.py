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
from flapjax.validation import ConfigError

HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
FREE = int(mujoco.mjtJoint.mjJNT_FREE)

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
# Kinematics
# ---------------------------------------------------------------------------


def _quat_mat(q) -> Array:
    """(..., 3, 3) rotation of unit quaternions (..., 4) ``[w, x, y, z]``."""
    w, x, y, z = (q[..., i] for i in range(4))
    return jnp.stack([
        jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def _mm(a: Array, b: Array) -> Array:
    """Matrix product over the last two axes, as a broadcast multiply and sum
    (the small products fuse into elementwise loops instead of one tiny
    matrix-multiply call each)."""
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def _mv(a: Array, v: Array) -> Array:
    """Matrix-vector product ``a v`` over the last axes (broadcast multiply and sum)."""
    return jnp.sum(a * v[..., None, :], axis=-1)


def _axis_rotation(axis, angle) -> Array:
    """(3, 3) rotation by ``angle`` [rad] about the unit ``axis`` (3,) (Rodrigues:
    ``cos a I + sin a [axis]x + (1 - cos a) axis axis^T``)."""
    k = jnp.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]], dtype=axis.dtype)
    c, s = jnp.cos(angle), jnp.sin(angle)
    return c * jnp.eye(3, dtype=axis.dtype) + s * k + (1 - c) * (axis[:, None] * axis[None, :])


def kinematics(m: mjx.Model, qpos: Float[Array, " nq"]) -> dict[str, Array]:
    """Body frames and dof axes at ``qpos`` (MuJoCo's ``mj_kinematics`` and
    ``mj_comPos`` frames): ``xpos`` (nbody, 3) [m], ``xmat`` (nbody, 3, 3),
    ``xipos`` (nbody, 3) [m] (centres of mass), ``ximat`` (nbody, 3, 3), and
    per dof ``dof_axis`` (nv, 3) and ``dof_anchor`` (nv, 3) [m], world frame
    (a free joint: the world axes at the body origin for its translations,
    the body's axes there for its rotations)."""
    dtype = qpos.dtype
    parent = np.asarray(m.body_parentid)
    jnt_body, jnt_type = np.asarray(m.jnt_bodyid), np.asarray(m.jnt_type)
    adr, dof_adr = np.asarray(m.jnt_qposadr), np.asarray(m.jnt_dofadr)
    body_mat = _quat_mat(m.body_quat.astype(dtype))
    xpos = [jnp.zeros(3, dtype)]
    xmat = [jnp.eye(3, dtype=dtype)]
    dof_axis = [None] * m.nv
    dof_anchor = [None] * m.nv
    for b in range(1, m.nbody):
        p = parent[b]
        pos = xpos[p] + _mv(xmat[p], m.body_pos[b].astype(dtype))
        rot = _mm(xmat[p], body_mat[b])
        for j in np.flatnonzero(jnt_body == b):
            a, v = adr[j], dof_adr[j]
            if jnt_type[j] == FREE:
                quat = qpos[a + 3 : a + 7]
                pos, rot = qpos[a : a + 3], _quat_mat(quat / jnp.linalg.norm(quat))
                eye = jnp.eye(3, dtype=dtype)
                for i in range(3):
                    dof_axis[v + i], dof_anchor[v + i] = eye[i], pos
                    dof_axis[v + 3 + i], dof_anchor[v + 3 + i] = rot[:, i], pos
                continue
            jpos, jax_ = m.jnt_pos[j].astype(dtype), m.jnt_axis[j].astype(dtype)
            dof_anchor[v] = _mv(rot, jpos) + pos
            dof_axis[v] = _mv(rot, jax_)
            dq = qpos[a] - m.qpos0[a].astype(dtype)
            if jnt_type[j] == SLIDE:
                pos = pos + dof_axis[v] * dq
            else:
                rot = _mm(rot, _axis_rotation(jax_, dq))
                pos = dof_anchor[v] - _mv(rot, jpos)
        xpos.append(pos)
        xmat.append(rot)
    xpos, xmat = jnp.stack(xpos), jnp.stack(xmat)
    xipos = xpos + _mv(xmat, m.body_ipos.astype(dtype))
    ximat = _mm(xmat, _quat_mat(m.body_iquat.astype(dtype)))
    return dict(xpos=xpos, xmat=xmat, xipos=xipos, ximat=ximat, dof_axis=jnp.stack(dof_axis),
                dof_anchor=jnp.stack(dof_anchor))


def _scalar_dofs(m: mjx.Model) -> tuple[np.ndarray, np.ndarray]:
    """Dofs of hinge and slide joints and their qpos addresses (one each)."""
    kind = np.asarray(m.jnt_type)
    joints = np.flatnonzero((kind == HINGE) | (kind == SLIDE))
    return np.asarray(m.jnt_dofadr)[joints], np.asarray(m.jnt_qposadr)[joints]


def _rotational(m: mjx.Model) -> np.ndarray:
    """(nv,) 1 for dofs that rotate (hinges, a free joint's last three), 0 for translations."""
    out = np.zeros(m.nv)
    for j, (kind, v) in enumerate(zip(np.asarray(m.jnt_type), np.asarray(m.jnt_dofadr))):
        if kind == HINGE:
            out[v] = 1.0
        elif kind == FREE:
            out[v + 3 : v + 6] = 1.0
    return out


def _ancestry(m: mjx.Model) -> np.ndarray:
    """(nbody, nv) 1 where dof v moves body b (v's joint is on b's path to the world)."""
    parent, dof_body = np.asarray(m.body_parentid), np.asarray(m.dof_bodyid)
    mask = np.zeros((m.nbody, m.nv))
    for b in range(m.nbody):
        a = b
        while a > 0:
            mask[b, dof_body == a] = 1.0
            a = parent[a]
    return mask


def _descendants(m: mjx.Model) -> np.ndarray:
    """(nbody, nbody) 1 where body k is in the subtree of body b (b included)."""
    parent = np.asarray(m.body_parentid)
    mask = np.eye(m.nbody)
    for k in range(1, m.nbody):
        a = parent[k]
        while True:
            mask[a, k] = 1.0
            if a == 0:
                break
            a = parent[a]
    return mask


def jacobians(m: mjx.Model, kin: dict[str, Array]) -> tuple[Array, Array]:
    """Translational Jacobians at every body's centre of mass and rotational
    Jacobians, (nbody, 3, nv) each."""
    rotational = _rotational(m)
    mask = jnp.asarray(_ancestry(m), dtype=kin["xpos"].dtype)
    axis, anchor = kin["dof_axis"], kin["dof_anchor"]  # (nv, 3)
    arm = kin["xipos"][:, None, :] - anchor[None, :, :]  # (nbody, nv, 3)
    lin = jnp.where(rotational[None, :, None] > 0, jnp.cross(axis[None], arm), axis[None])
    rot = axis[None] * rotational[None, :, None]
    jp = jnp.swapaxes(lin * mask[:, :, None], 1, 2)
    jr = jnp.swapaxes(jnp.broadcast_to(rot, lin.shape) * mask[:, :, None], 1, 2)
    return jp, jr


def forward(m: mjx.Model, d: mjx.Data) -> mjx.Data:
    """``d`` with the kinematic and velocity fields of its ``qpos``, ``qvel``
    that the flapper bridge reads: ``xpos``, ``xmat``, ``xipos``, ``ximat``,
    ``subtree_com`` (nbody, 3) and ``cvel`` (nbody, 6) ``[w; v]``, ``v`` the
    velocity of the point at the subtree CoM of the body's root (MJX's
    convention, docs/mjx_notes.md, Velocities)."""
    kin = kinematics(m, d.qpos)
    jp, jr = jacobians(m, kin)
    dtype = d.qpos.dtype
    mass = m.body_mass.astype(dtype)
    desc = jnp.asarray(_descendants(m), dtype=dtype)
    weight = desc * mass[None, :]
    subtree_com = jnp.sum(weight[:, :, None] * kin["xipos"][None], axis=1) / jnp.maximum(weight.sum(1), 1e-30)[:, None]
    subtree_com = jnp.where((weight.sum(1) > 0)[:, None], subtree_com, kin["xipos"])
    w = _mv(jr, d.qvel)
    v_com = _mv(jp, d.qvel)
    at = subtree_com[np.asarray(m.body_rootid)]
    v = v_com + jnp.cross(w, at - kin["xipos"])
    return d.replace(xpos=kin["xpos"], xmat=kin["xmat"], xipos=kin["xipos"], ximat=kin["ximat"],
                     subtree_com=subtree_com, cvel=jnp.concatenate([w, v], axis=-1))


# ---------------------------------------------------------------------------
# Dynamics
# ---------------------------------------------------------------------------


def _frame_ancestry(m: mjx.Model) -> np.ndarray:
    """(nv, nv) 1 where dof k moves the frame that carries dof j's axis and
    anchor: k's body is a strict ancestor of j's, k is an earlier joint of
    the same body (MuJoCo applies a body's joints in order), or j and k
    rotate the same free joint (its rotation axes are the body's own)."""
    parent, dof_body, dof_jnt = np.asarray(m.body_parentid), np.asarray(m.dof_bodyid), np.asarray(m.dof_jntid)
    rotational = _rotational(m)
    free = np.asarray(m.jnt_type)[dof_jnt] == FREE
    mask = np.zeros((m.nv, m.nv))
    for j in range(m.nv):
        mask[j, :j] = dof_body[:j] == dof_body[j]
        if free[j] and rotational[j]:
            mask[j, (dof_jnt == dof_jnt[j]) & (rotational > 0)] = 1.0
        if free[j] and not rotational[j]:
            mask[j, :] = 0.0  # the world axes of a free translation do not turn
        a = parent[dof_body[j]]
        while a > 0:
            mask[j, dof_body == a] = 1.0
            a = parent[a]
    return mask


def velocity_product_accelerations(m: mjx.Model, kin: dict[str, Array], qvel: Float[Array, " nv"],
                                   v_com: Float[Array, "nbody 3"]) -> tuple[Array, Array]:
    """``J'p qd`` and ``J'r qd`` (nbody, 3) [m/s^2, rad/s^2]: the accelerations
    of every body's centre of mass and its angular acceleration when
    ``qacc = 0``, from the rates of the joint axes and anchors.

    The frame carrying dof j turns at ``W_j = sum_k F_jk a_k qd_k`` (hinges k
    that move it, :func:`_frame_ancestry`) and moves its anchor at ``V_j``;
    its axis turns at ``a_j' = W_j x a_j``. A hinge's Jacobian column at
    the centre of mass c_b changes at ``a_j' x (c_b - p_j) + a_j x (v_b - V_j)``,
    a slide's at ``a_j'``; the accelerations are those rates times ``qd``.
    ``v_com`` (nbody, 3): velocities of the centres of mass (``Jp qd``).
    """
    dtype = qvel.dtype
    hinge = jnp.asarray(_rotational(m), dtype)
    frame = jnp.asarray(_frame_ancestry(m), dtype)
    ancestry = jnp.asarray(_ancestry(m), dtype)
    axis, anchor = kin["dof_axis"], kin["dof_anchor"]  # (nv, 3)
    rate = axis * qvel[:, None]  # (nv, 3) a_k qd_k
    w_frame = jnp.sum(frame[:, :, None] * (hinge[:, None] * rate)[None], axis=1)  # (nv, 3)
    point = jnp.where(hinge[None, :, None] > 0, jnp.cross(rate[None], anchor[:, None] - anchor[None]), rate[None])
    v_anchor = jnp.sum(frame[:, :, None] * point, axis=1)  # (nv, 3)
    axis_rate = jnp.cross(w_frame, axis)  # (nv, 3)
    arm = kin["xipos"][:, None] - anchor[None]  # (nbody, nv, 3)
    column_rate = jnp.where(hinge[None, :, None] > 0,
                            jnp.cross(axis_rate[None], arm) + jnp.cross(axis[None], v_com[:, None] - v_anchor[None]),
                            axis_rate[None])  # (nbody, nv, 3)
    weight = ancestry * qvel[None, :]  # (nbody, nv)
    acc = jnp.sum(weight[:, :, None] * column_rate, axis=1)
    alpha = jnp.sum((weight * hinge[None])[:, :, None] * axis_rate[None], axis=1)
    return acc, alpha


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


def mass_and_bias(m: mjx.Model, qpos: Float[Array, " nq"], qvel: Float[Array, " nv"]) -> tuple[Array, Array, tuple]:
    """Joint-space inertia ``M`` (nv, nv) [kg m^2 or kg], bias forces ``c``
    (nv,) (velocity products and gravity, MuJoCo's ``qfrc_bias``) and the
    (Jp, Jr) Jacobians at the centres of mass."""
    dtype = qpos.dtype
    kin = kinematics(m, qpos)
    jp, jr = jacobians(m, kin)
    w = _mv(jr, qvel)
    acc, alpha = velocity_product_accelerations(m, kin, qvel, _mv(jp, qvel))
    ximat = kin["ximat"]
    inertia = _mm(ximat * m.body_inertia.astype(dtype)[:, None, :], jnp.swapaxes(ximat, 1, 2))
    mass = m.body_mass.astype(dtype)
    gravity = m.opt.gravity.astype(dtype)
    big_m = jnp.sum(mass[:, None, None, None] * jp[..., :, None] * jp[..., None, :], axis=(0, 1))
    big_m = big_m + jnp.sum(jr[..., :, None] * _mm(inertia, jr)[..., None, :], axis=(0, 1))
    big_m = big_m + jnp.diag(m.dof_armature.astype(dtype))
    force = mass[:, None] * (acc - gravity[None, :])
    torque = _mv(inertia, alpha) + jnp.cross(w, _mv(inertia, w))
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


def step(m: mjx.Model, d: mjx.Data) -> mjx.Data:
    """One Euler step of length ``m.opt.timestep`` under ``d.ctrl``,
    ``d.qfrc_applied`` and ``d.xfrc_applied`` (world frame, about each body's
    CoM); returns ``d`` with ``qpos``, ``qvel``
    and ``time`` advanced (``qacc`` and the kinematic fields are left as they
    were, as after ``mjx.step``: call :func:`forward`)."""
    dtype = d.qpos.dtype
    h = jnp.asarray(m.opt.timestep, dtype)
    q, qd = d.qpos, d.qvel
    big_m, bias, (jp, jr) = mass_and_bias(m, q, qd)
    dofs, qadr = _scalar_dofs(m)
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
