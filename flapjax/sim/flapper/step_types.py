"""The pytrees that pass between the stages of one flapper step
(:mod:`flapjax.sim.flapper.step`): the base's motion and the joint angles
read at the start, the aerodynamic stage's output, the servos' actuation,
and the diagnostics a step returns."""

from __future__ import annotations

from typing import Any

import equinox as eqx
from jaxtyping import Array, Bool, Float

Scalar = Float[Array, ""]
Vec2 = Float[Array, "2"]


class FlapperDiagnostics(eqx.Module):
    """What one step applied and measured.

    Attributes:
      time: () t at the start of the step [s].
      force_world: (3,) vector sum of the aerodynamic forces applied [N].
      moment_world: (3,) their moment about the base-body origin, world
        frame [N m].
      lift_total: () |F_N,L| + |F_N,R| (a load-intensity diagnostic, not the
        vertical lift, which is ``force_world[2]``) [N]; thrust L of the
        averaged model.
      wing_force_world: (2, 3) each wing's applied force [N].
      wing_loads: per-wing loads, leaves of shape (2,) (left, right); None for
        the averaged model.
      force_clipped: (2,) whether each wing's |F_N| clip is active.
      stroke: (2,) stroke angles psi [rad].
      stroke_reference: (2,) servo targets [rad].
      stroke_error: (2,) psi - psi_ref [rad].
      pitch: (2,) feathering angles theta [rad].
      plate: (nj,) joint-channel angles (the seed's plates; the command on the lumped body) [rad].
      frequency: () commanded frequency [Hz].
    """

    time: Scalar
    force_world: Float[Array, "3"]
    moment_world: Float[Array, "3"]
    lift_total: Scalar
    wing_force_world: Float[Array, "2 3"]
    wing_loads: Any
    force_clipped: Bool[Array, "2"]
    stroke: Vec2
    stroke_reference: Vec2
    stroke_error: Vec2
    pitch: Vec2
    plate: Vec2
    frequency: Scalar


class BaseFrame(eqx.Module):
    """Motion of the base body at the start of the step (world frame).

    Attributes:
      rot_world_body: (3, 3) R_WB.
      origin: (3,) base-body origin [m].
      com: (3,) base-body centre of mass [m].
      v_com: (3,) velocity of the centre of mass [m/s].
      w_body: (3,) angular velocity, body frame [rad/s].
    """

    rot_world_body: Float[Array, "3 3"]
    origin: Float[Array, "3"]
    com: Float[Array, "3"]
    v_com: Float[Array, "3"]
    w_body: Float[Array, "3"]


class Joints(eqx.Module):
    """Joint angles at the start of the step (zeros and the command on the lumped body).

    Attributes:
      stroke: (2,) psi [rad]; pitch: (2,) theta [rad]; plate: (nj,) joint-channel angles [rad].
    """

    stroke: Vec2
    pitch: Vec2
    plate: Vec2


class AeroWrench(eqx.Module):
    """Output of the aerodynamic stage: ``xfrc`` (nbody, 6) ``[F; tau]`` per
    body (world frame, about each body's CoM) [N, N m]; the other fields as in
    :class:`FlapperDiagnostics`."""

    xfrc: Float[Array, "nbody 6"]
    force_world: Float[Array, "3"]
    moment_world: Float[Array, "3"]
    lift_total: Scalar
    wing_force_world: Float[Array, "2 3"]
    wing_loads: Any
    force_clipped: Bool[Array, "2"]


class Actuation(eqx.Module):
    """Servo set points ``ctrl`` (nu,) [rad] and joint torques ``qfrc`` (nv,) [N m]."""

    ctrl: Float[Array, " nu"]
    qfrc: Float[Array, " nv"]
