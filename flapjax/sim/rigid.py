"""Pure-JAX rigid-body backend: one free body per world, no MuJoCo.

For contact-free flight (hover, near-ground and near-wall flight that never
touches, the cycle-averaged flapper) a single free body is all the dynamics
there is, and integrating it directly is much cheaper than a general MJX step.
The integrator reproduces MuJoCo's semi-implicit Euler for a free joint. The
state is MuJoCo's: the body origin's position and world velocity and the body
rates; the centre of mass sits at ``c`` (body frame) and the inertia ``I``
about it may be rotated by ``inertia_quat``:

    a_com   = F_world / m + g
    w_dot   = I^-1 (R^T tau_world - w x I w)                 (body frame)
    a_o     = a_com - (R w_dot) x (R c) - w_W x (w_W x R c)  (origin, world)
    v      += dt a_o;   w += dt w_dot
    p      += dt v;     q  = q * exp(dt w / 2)                (renormalized)

so the same body wrench that the MJX bridges write into ``xfrc_applied``
(world frame, about the centre of mass) drives both backends, and their
trajectories agree to float32 round-off (tests/test_sim_rigid.py).
Contacts are out of scope: :func:`touching` flags a world whose probe points
reach a surface so it can be masked or reset.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

from flapjax.math import quat_integrate, quat_to_mat
from flapjax.rotor.unrolled import any_rows, matvec, rmatvec, rotate_rows
from flapjax.validation import ConfigError, as_float_array, check_positive, inertia_matrix, is_traced

Scalar = Float[Array, ""]


class RigidBody(eqx.Module):
    """Mass properties of the body.

    Attributes:
      mass: () m [kg].
      inertia: (3,) principal moments of inertia about the CoM [kg m^2].
      gravity: (3,) gravitational acceleration, world frame [m/s^2].
      com_offset: (3,) centre of mass in the body frame [m] (MuJoCo's body_ipos).
      inertia_quat: (4,) orientation of the principal axes in the body frame
        ``[w, x, y, z]`` (MuJoCo's body_iquat).
    """

    mass: Scalar
    inertia: Float[Array, "3"]
    gravity: Float[Array, "3"]
    com_offset: Float[Array, "3"]
    inertia_quat: Float[Array, "4"]

    def __init__(self, mass, inertia, gravity=(0.0, 0.0, -9.81), com_offset=(0.0, 0.0, 0.0),
                 inertia_quat=(1.0, 0.0, 0.0, 0.0)):
        if not any(is_traced(x) for x in (mass, inertia, gravity, com_offset, inertia_quat)):
            as_float_array("mass", mass, ())
            as_float_array("inertia", inertia, (3,))
            as_float_array("gravity", gravity, (3,))
            as_float_array("com_offset", com_offset, (3,))
            q = as_float_array("inertia_quat", inertia_quat, (4,))
            if abs(float((q**2).sum()) - 1.0) > 1e-6:
                raise ConfigError(f"inertia_quat: must be a unit quaternion, got {q.tolist()}")
            check_positive("mass", mass)
            check_positive("inertia", inertia)
            inertia_matrix("inertia", inertia)  # a physical body: the triangle inequality
        self.mass = jnp.asarray(mass, dtype=float)
        self.inertia = jnp.asarray(inertia, dtype=float)
        self.gravity = jnp.asarray(gravity, dtype=float)
        self.com_offset = jnp.asarray(com_offset, dtype=float)
        self.inertia_quat = jnp.asarray(inertia_quat, dtype=float)

    @property
    def inertia_matrix(self) -> Float[Array, "3 3"]:
        """(3, 3) inertia about the CoM in body axes [kg m^2]."""
        r = quat_to_mat(self.inertia_quat)
        return (r * self.inertia) @ r.T

    @property
    def inverse_inertia_matrix(self) -> Float[Array, "3 3"]:
        """(3, 3) inverse of :attr:`inertia_matrix` [1/(kg m^2)], in closed
        form from the principal moments (no linear solve per step)."""
        r = quat_to_mat(self.inertia_quat)
        return (r / self.inertia) @ r.T


class PreparedBody(eqx.Module):
    """A :class:`RigidBody` with its inertia matrices computed, for stepping.

    Build it once per rollout with :func:`prepare` (outside ``lax.scan``):
    under a checkpointed scan the reverse pass would otherwise recompute the
    matrices in every step. Rebuild it whenever the body changes.

    Attributes:
      body: the mass properties.
      inertia_matrix: (3, 3) inertia about the CoM, body axes [kg m^2].
      inverse_inertia_matrix: (3, 3) its inverse [1/(kg m^2)].
    """

    body: RigidBody
    inertia_matrix: Float[Array, "3 3"]
    inverse_inertia_matrix: Float[Array, "3 3"]


def prepare(body: RigidBody | PreparedBody) -> PreparedBody:
    """:class:`PreparedBody` of ``body`` (a prepared body is returned as is)."""
    if isinstance(body, PreparedBody):
        return body
    return PreparedBody(body=body, inertia_matrix=body.inertia_matrix,
                        inverse_inertia_matrix=body.inverse_inertia_matrix)


class RigidState(eqx.Module):
    """State of one free body.

    Attributes:
      position: (3,) CoM position, world frame [m].
      quat: (4,) attitude ``[w, x, y, z]``, body to world [-].
      velocity: (3,) CoM velocity, world frame [m/s] (MuJoCo's free-joint qvel[0:3]).
      angular_velocity: (3,) body rates, body frame [rad/s] (MuJoCo's qvel[3:6]).
    """

    position: Float[Array, "3"]
    quat: Float[Array, "4"]
    velocity: Float[Array, "3"]
    angular_velocity: Float[Array, "3"]

    @classmethod
    def at_rest(cls, position, quat=(1.0, 0.0, 0.0, 0.0)) -> "RigidState":
        position = jnp.asarray(position, dtype=float)
        return cls(position=position, quat=jnp.asarray(quat, dtype=position.dtype),
                   velocity=jnp.zeros_like(position), angular_velocity=jnp.zeros_like(position))

    @property
    def rotation(self) -> Float[Array, "3 3"]:
        """(3, 3) body-to-world rotation R_WB."""
        return quat_to_mat(self.quat)

    @property
    def qpos(self) -> Float[Array, "7"]:
        """MuJoCo free-joint ``qpos`` layout ``[p, q]`` (7,) (batched: (..., 7))."""
        return jnp.concatenate([self.position, self.quat], axis=-1)

    @property
    def qvel(self) -> Float[Array, "6"]:
        """MuJoCo free-joint ``qvel`` layout ``[v_world, w_body]`` (6,) (batched: (..., 6))."""
        return jnp.concatenate([self.velocity, self.angular_velocity], axis=-1)


def accelerations(body: RigidBody | PreparedBody, state: RigidState, wrench_world: Float[Array, "6"]
                  ) -> tuple[Float[Array, "3"], Float[Array, "3"]]:
    """Acceleration of the body origin (world) [m/s^2] and angular acceleration
    (body) [rad/s^2] under a world wrench ``[F; tau]`` about the CoM."""
    prepared = prepare(body)
    body = prepared.body
    rot = state.rotation
    w = state.angular_velocity
    inertia = prepared.inertia_matrix
    tau_body = rmatvec(rot, wrench_world[3:])
    ang = matvec(prepared.inverse_inertia_matrix, tau_body - jnp.cross(w, matvec(inertia, w)))
    a_com = wrench_world[:3] / body.mass + body.gravity
    c_w, w_w = matvec(rot, body.com_offset), matvec(rot, w)
    lin = a_com - jnp.cross(matvec(rot, ang), c_w) - jnp.cross(w_w, jnp.cross(w_w, c_w))
    return lin, ang


def com_velocity(body: RigidBody, state: RigidState) -> Float[Array, "3"]:
    """(3,) velocity of the centre of mass, world frame [m/s]."""
    rot = state.rotation
    return state.velocity + jnp.cross(rot @ state.angular_velocity, rot @ body.com_offset)


def com_position(body: RigidBody, state: RigidState) -> Float[Array, "3"]:
    """(3,) position of the centre of mass, world frame [m]."""
    return state.position + state.rotation @ body.com_offset


def step(body: RigidBody | PreparedBody, state: RigidState, wrench_world: Float[Array, "6"], dt) -> RigidState:
    """One semi-implicit Euler step of length ``dt`` [s] (MuJoCo's Euler);
    ``body`` may be :func:`prepare`-d once per rollout."""
    lin, ang = accelerations(body, state, wrench_world)
    velocity = state.velocity + dt * lin
    angular_velocity = state.angular_velocity + dt * ang
    return RigidState(
        position=state.position + dt * velocity,
        quat=quat_integrate(state.quat, angular_velocity, dt),
        velocity=velocity,
        angular_velocity=angular_velocity,
    )


def touching(points_body: Float[Array, "k 3"], radii: Float[Array, " k"], state: RigidState,
             planes: Float[Array, "m 4"]) -> Bool[Array, ""]:
    """True if any probe sphere (body-frame centre, radius [m]) reaches any
    plane ``(n, c)`` (free side ``n . x > c``): contact would begin."""
    centres = state.position + rotate_rows(points_body, state.rotation)
    gap = rotate_rows(centres, planes[:, :3]) - planes[:, 3][None, :] - radii[:, None]
    return any_rows(jnp.ravel(gap <= 0.0))
