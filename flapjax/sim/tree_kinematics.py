"""Kinematics of a joint tree in pure JAX: body frames, dof axes, Jacobians
at the centres of mass, the fields of ``mjx.Data`` the flapper bridge reads,
and the velocity-product accelerations of the dynamics
(:mod:`flapjax.sim.tree` integrates them; formulas: docs/physics.md, Joint
tree). Hinge and slide joints, and a free joint on a body attached to the
world; the model's structure (parents, joint types, addresses) is read on
the host, its values (positions, axes, masses) from the ``mjx.Model``, so
they may be traced.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Float
from mujoco import mjx

from flapjax.math import quat_to_mat, skew

HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
FREE = int(mujoco.mjtJoint.mjJNT_FREE)


# ---------------------------------------------------------------------------
# Kinematics
# ---------------------------------------------------------------------------


#: (..., 4) unit quaternions ``[w, x, y, z]`` -> (..., 3, 3) rotations.
_quat_mat = jnp.vectorize(quat_to_mat, signature="(4)->(3,3)")


def mat_mul(a: Array, b: Array) -> Array:
    """Matrix product over the last two axes, as a broadcast multiply and sum
    (the small products fuse into elementwise loops instead of one tiny
    matrix-multiply call each)."""
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def mat_vec(a: Array, v: Array) -> Array:
    """Matrix-vector product ``a v`` over the last axes (broadcast multiply and sum)."""
    return jnp.sum(a * v[..., None, :], axis=-1)


def _axis_rotation(axis, angle) -> Array:
    """(3, 3) rotation by ``angle`` [rad] about the unit ``axis`` (3,) (Rodrigues:
    ``cos a I + sin a [axis]x + (1 - cos a) axis axis^T``)."""
    c, s = jnp.cos(angle), jnp.sin(angle)
    return c * jnp.eye(3, dtype=axis.dtype) + s * skew(axis) + (1 - c) * (axis[:, None] * axis[None, :])


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
        pos = xpos[p] + mat_vec(xmat[p], m.body_pos[b].astype(dtype))
        rot = mat_mul(xmat[p], body_mat[b])
        for j in np.flatnonzero(jnt_body == b):
            a, v = adr[j], dof_adr[j]
            if jnt_type[j] == FREE:
                quat = qpos[a + 3 : a + 7]
                pos, rot = qpos[a : a + 3], quat_to_mat(quat)
                eye = jnp.eye(3, dtype=dtype)
                for i in range(3):
                    dof_axis[v + i], dof_anchor[v + i] = eye[i], pos
                    dof_axis[v + 3 + i], dof_anchor[v + 3 + i] = rot[:, i], pos
                continue
            jpos, jax_ = m.jnt_pos[j].astype(dtype), m.jnt_axis[j].astype(dtype)
            dof_anchor[v] = mat_vec(rot, jpos) + pos
            dof_axis[v] = mat_vec(rot, jax_)
            dq = qpos[a] - m.qpos0[a].astype(dtype)
            if jnt_type[j] == SLIDE:
                pos = pos + dof_axis[v] * dq
            else:
                rot = mat_mul(rot, _axis_rotation(jax_, dq))
                pos = dof_anchor[v] - mat_vec(rot, jpos)
        xpos.append(pos)
        xmat.append(rot)
    xpos, xmat = jnp.stack(xpos), jnp.stack(xmat)
    xipos = xpos + mat_vec(xmat, m.body_ipos.astype(dtype))
    ximat = mat_mul(xmat, _quat_mat(m.body_iquat.astype(dtype)))
    return dict(xpos=xpos, xmat=xmat, xipos=xipos, ximat=ximat, dof_axis=jnp.stack(dof_axis),
                dof_anchor=jnp.stack(dof_anchor))


def scalar_dofs(m: mjx.Model) -> tuple[np.ndarray, np.ndarray]:
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


class Frames(NamedTuple):
    """What the kinematics of one ``qpos`` give both the bridge's fields
    (:func:`forward`) and the dynamics (:func:`flapjax.sim.tree.step`).

    Attributes:
      kin: :func:`kinematics` (body frames, dof axes and anchors).
      jp, jr: :func:`jacobians` at the centres of mass, (nbody, 3, nv) each.
    """

    kin: dict[str, Array]
    jp: Array
    jr: Array


def frames(m: mjx.Model, qpos: Float[Array, " nq"]) -> Frames:
    """:class:`Frames` of ``qpos``, computed once and materialized (an
    optimization barrier): a step that reads them for its forces and again
    for its dynamics computes them once, and XLA does not copy the chain of
    frame products into each of their many consumers (measured on the
    fixed-base flapper: forward-mode gradients through its rollout 15 %
    faster, the forward pass within a few per cent)."""
    kin = kinematics(m, qpos)
    jp, jr = jacobians(m, kin)
    return Frames(*jax.lax.optimization_barrier((kin, jp, jr)))


def forward(m: mjx.Model, d: mjx.Data, fr: Frames | None = None) -> mjx.Data:
    """``d`` with the kinematic and velocity fields of its ``qpos``, ``qvel``
    that the flapper bridge reads: ``xpos``, ``xmat``, ``xipos``, ``ximat``,
    ``subtree_com`` (nbody, 3) and ``cvel`` (nbody, 6) ``[w; v]``, ``v`` the
    velocity of the point at the subtree CoM of the body's root (MJX's
    convention, docs/mjx_notes.md, Velocities). ``fr``: :func:`frames` of
    ``d.qpos`` when the caller has them (computed here otherwise)."""
    kin, jp, jr = frames(m, d.qpos) if fr is None else fr
    dtype = d.qpos.dtype
    mass = m.body_mass.astype(dtype)
    desc = jnp.asarray(_descendants(m), dtype=dtype)
    weight = desc * mass[None, :]
    subtree_com = jnp.sum(weight[:, :, None] * kin["xipos"][None], axis=1) / jnp.maximum(weight.sum(1), 1e-30)[:, None]
    subtree_com = jnp.where((weight.sum(1) > 0)[:, None], subtree_com, kin["xipos"])
    w = mat_vec(jr, d.qvel)
    v_com = mat_vec(jp, d.qvel)
    at = subtree_com[np.asarray(m.body_rootid)]
    v = v_com + jnp.cross(w, at - kin["xipos"])
    return d.replace(xpos=kin["xpos"], xmat=kin["xmat"], xipos=kin["xipos"], ximat=kin["ximat"],
                     subtree_com=subtree_com, cvel=jnp.concatenate([w, v], axis=-1))


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
