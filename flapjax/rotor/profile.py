"""Robot profiles: rotor layout, limits, actuator constants, mass and arm.

A :class:`RotorProfile` holds everything the multirotor chain needs to know
about one airframe (docs/physics.md, Multirotor chain): per rotor ``i`` the position
``p_i`` and unit thrust axis ``a_i`` in the body frame (origin at the centre of
mass), the spin ``s_i`` (+1 / -1), the thrust range ``[T_min_i, T_max_i]``,
the torque coefficient ``kappa_i`` (reaction torque ``-s_i kappa_i T_i a_i``),
the rotor radius, the actuator time constant and speed-rate limit; for the
whole robot the mass, the principal inertia and a rigid arm with an
end-effector for manipulation.

Presets: :func:`quad_x`, :func:`hexa` (both under-actuated, coplanar rotors)
and :func:`hexa_tilted` (alternately tilted rotors, fully actuated). Profiles
load from TOML or JSON with :func:`flapjax.rotor.profile_files.load_profile`;
every constructor validates
its input eagerly (outside ``jit``) and names the offending field.
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.rotor.feasibility import check_feasible
from flapjax.rotor.flyable import check_flyable
from flapjax.validation import ConfigError, as_float_array, check_positive, check_range, inertia_matrix, is_traced

_AXIS_TOL = 1e-6


def _rank(positions: np.ndarray, axes: np.ndarray, spins: np.ndarray, kappa: np.ndarray) -> int:
    moments = np.cross(positions, axes) - (spins * kappa)[:, None] * axes
    b = np.concatenate([axes.T, moments.T], axis=0)
    return int(np.linalg.matrix_rank(b, tol=1e-9 * max(1.0, np.abs(b).max())))


class RotorProfile(eqx.Module):
    """One multirotor airframe with an arm and end-effector.

    All vectors are in the body frame, whose origin is the centre of mass.

    Attributes:
      positions: (n, 3) rotor centres p_i [m].
      axes: (n, 3) unit thrust axes a_i [-] (thrust acts along +a_i, the
        downwash leaves along -a_i).
      spins: (n,) spin s_i, +1 or -1 [-] (+1: the rotor spins about +a_i,
        its reaction torque is -kappa_i T_i a_i).
      thrust_min: (n,) lowest thrust T_min_i >= 0 [N].
      thrust_max: (n,) highest thrust T_max_i > T_min_i [N].
      torque_coeff: (n,) drag-torque to thrust ratio kappa_i [m].
      radius: (n,) rotor radius R_i [m].
      time_constant: (n,) first-order actuator time constant tau_i [s].
      rate_limit: (n,) symmetric limit on the normalized-speed rate [1/s].
      mass: () total mass including arm [kg].
      inertia: (3,) principal moments of inertia about body x, y, z [kg m^2].
      hull_half_size: (3,) half sizes of the central hull box [m] (collision).
      arm_base: (3,) where the rigid arm leaves the hull [m].
      ee_position: (3,) end-effector centre [m].
      ee_radius: () end-effector sphere radius [m].
      name: preset or file name (static).
      fully_actuated: whether ``B`` has rank 6 (static, derived).

    Besides the per-field checks, a concrete profile must describe an
    airframe that can hover (:func:`flapjax.rotor.feasibility.check_feasible`:
    thrust-to-weight > 1 along body +z, distinct rotor positions, plausible
    mass and inertia); ``allow_infeasible=True`` skips that for deliberate
    experiments (a robot that cannot lift itself, rotors sideways, ...).
    """

    positions: Float[Array, "n 3"]
    axes: Float[Array, "n 3"]
    spins: Float[Array, " n"]
    thrust_min: Float[Array, " n"]
    thrust_max: Float[Array, " n"]
    torque_coeff: Float[Array, " n"]
    radius: Float[Array, " n"]
    time_constant: Float[Array, " n"]
    rate_limit: Float[Array, " n"]
    mass: Float[Array, ""]
    inertia: Float[Array, "3"]
    hull_half_size: Float[Array, "3"]
    arm_base: Float[Array, "3"]
    ee_position: Float[Array, "3"]
    ee_radius: Float[Array, ""]
    name: str = eqx.field(static=True)
    fully_actuated: bool = eqx.field(static=True)

    def __init__(
        self,
        positions,
        axes,
        spins,
        thrust_min,
        thrust_max,
        torque_coeff,
        radius,
        time_constant,
        rate_limit,
        mass,
        inertia,
        *,
        hull_half_size=(0.08, 0.08, 0.03),
        arm_base=(0.08, 0.0, 0.0),
        ee_position=(0.3, 0.0, 0.0),
        ee_radius=0.015,
        name: str = "custom",
        fully_actuated: bool | None = None,
        allow_infeasible: bool = False,
    ):
        values = dict(
            positions=positions, axes=axes, spins=spins, thrust_min=thrust_min, thrust_max=thrust_max,
            torque_coeff=torque_coeff, radius=radius, time_constant=time_constant, rate_limit=rate_limit,
            mass=mass, inertia=inertia, hull_half_size=hull_half_size, arm_base=arm_base,
            ee_position=ee_position, ee_radius=ee_radius,
        )
        traced = any(is_traced(v) for v in values.values())
        if not traced:
            values = _validate(values)
            if not allow_infeasible:
                check_feasible(values)
                check_flyable(values)
            if fully_actuated is None:
                fully_actuated = _rank(values["positions"], values["axes"], values["spins"],
                                       values["torque_coeff"]) == 6
        elif fully_actuated is None:
            raise ConfigError("fully_actuated: must be given when profile values are traced")
        for key, val in values.items():
            setattr(self, key, jnp.asarray(val, dtype=float) if not traced else jnp.asarray(val))
        self.name = str(name)
        self.fully_actuated = bool(fully_actuated)

    @property
    def n_rotors(self) -> int:
        """Number of rotors n (static)."""
        return self.positions.shape[0]


#: Bounds: rotors (more is a typo), time constant [s], end-effector radius [m], mass [kg], kappa [m].
MAX_ROTORS, MAX_TIME_CONSTANT, MAX_EE_RADIUS, MIN_MASS, MAX_TORQUE_COEFF = 64, 10.0, 1.0, 1e-4, 1.0


def _validate(v: dict[str, Any]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    pos = as_float_array("positions", v["positions"], (None, 3))
    n = pos.shape[0]
    if n < 1:
        raise ConfigError("positions: need at least one rotor, got 0")
    if n > MAX_ROTORS:
        raise ConfigError(f"positions: at most {MAX_ROTORS} rotors, got {n}")
    out["positions"] = pos
    axes = as_float_array("axes", v["axes"], (n, 3))
    norms = np.linalg.norm(axes, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > _AXIS_TOL)
    if bad.size:
        i = int(bad[0])
        raise ConfigError(f"axes[{i}]: must be a unit vector (|a| = 1 within {_AXIS_TOL:g}), got {axes[i].tolist()} with norm {norms[i]:.6g}")
    out["axes"] = axes
    for key in ("spins", "thrust_min", "thrust_max", "torque_coeff", "radius", "time_constant", "rate_limit"):
        out[key] = as_float_array(key, v[key], (n,))
    bad = np.flatnonzero(np.abs(np.abs(out["spins"]) - 1.0) > 0)
    if bad.size:
        i = int(bad[0])
        raise ConfigError(f"spins[{i}]: must be +1 or -1, got {out['spins'][i]:g}")
    check_range("thrust_min", out["thrust_min"], 0.0, None)
    bad = np.flatnonzero(out["thrust_max"] <= out["thrust_min"])
    if bad.size:
        i = int(bad[0])
        raise ConfigError(
            f"thrust_max[{i}]: must be > thrust_min[{i}] = {out['thrust_min'][i]:g} N (limits in order), got {out['thrust_max'][i]:g} N"
        )
    check_range("torque_coeff", out["torque_coeff"], 0.0, MAX_TORQUE_COEFF)
    for key, hi in (("radius", None), ("time_constant", MAX_TIME_CONSTANT), ("rate_limit", None)):
        check_positive(key, out[key])
        check_range(key, out[key], None, hi)
    out["mass"] = as_float_array("mass", v["mass"], ())
    check_positive("mass", out["mass"])
    check_range("mass", out["mass"], MIN_MASS, None)  # 1e-300 kg is named, not found through the inertia
    out["inertia"] = as_float_array("inertia", v["inertia"], (3,))
    check_positive("inertia", out["inertia"])
    inertia_matrix("inertia", out["inertia"])  # a physical body: the triangle inequality
    out["hull_half_size"] = as_float_array("hull_half_size", v["hull_half_size"], (3,))
    check_positive("hull_half_size", out["hull_half_size"])
    out["arm_base"] = as_float_array("arm_base", v["arm_base"], (3,))
    out["ee_position"] = as_float_array("ee_position", v["ee_position"], (3,))
    out["ee_radius"] = as_float_array("ee_radius", v["ee_radius"], ())
    check_positive("ee_radius", out["ee_radius"])
    check_range("ee_radius", out["ee_radius"], None, MAX_EE_RADIUS)
    return out


# ----------------------------------------------------------------------------- presets


def _ring(n: int, arm: float, phase: float) -> np.ndarray:
    ang = phase + 2.0 * np.pi * np.arange(n) / n
    return np.stack([arm * np.cos(ang), arm * np.sin(ang), np.zeros(n)], axis=1)


def _preset(n: int, arm: float, phase: float, **values: Any) -> dict[str, Any]:
    """Settings shared by the presets: ``n`` rotors on a ring of radius
    ``arm`` [m] from angle ``phase`` [rad], upright axes, alternating spins,
    5-inch rotors with the same motor, end-effector sphere of 15 mm; ``values``
    add the airframe's own (mass, inertia, thrust range, hull, arm, ...)."""
    cfg: dict[str, Any] = dict(
        positions=_ring(n, arm, phase),
        axes=np.tile([0.0, 0.0, 1.0], (n, 1)),
        spins=np.array([1.0, -1.0] * (n // 2)),
        thrust_min=np.full(n, 0.1),
        torque_coeff=np.full(n, 0.016),
        radius=np.full(n, 0.0635),
        time_constant=np.full(n, 0.035),
        rate_limit=np.full(n, 20.0),
        ee_radius=0.015,
    )
    cfg.update(values)
    return cfg


def quad_x(**overrides: Any) -> RotorProfile:
    """A 1.6 kg X-quadrotor (5-inch rotors on 0.18 m arms) with a forward arm.

    Rotors at 45, 135, 225, 315 degrees, spins +,-,+,-; thrust 0.1-8 N each
    (thrust-to-weight 2.0). Under-actuated: ``B`` has rank 4.
    """
    n = 4
    cfg = _preset(n, 0.18, np.pi / 4, thrust_max=np.full(n, 8.0), mass=1.6, inertia=np.array([0.018, 0.018, 0.030]),
                  hull_half_size=(0.07, 0.07, 0.03), arm_base=(0.07, 0.0, 0.0), ee_position=(0.30, 0.0, 0.0),
                  name="quad_x")
    cfg.update(overrides)
    return RotorProfile(**cfg)


def _hexa(**values: Any) -> dict[str, Any]:
    """The hexarotor frame both hexa presets share (0.22 m arms, rotors at
    30 + 60 k degrees, hull and arm)."""
    return _preset(6, 0.22, np.pi / 6, hull_half_size=(0.08, 0.08, 0.03), arm_base=(0.08, 0.0, 0.0),
                   ee_position=(0.38, 0.0, 0.0), **values)


def hexa(**overrides: Any) -> RotorProfile:
    """A 2.2 kg coplanar hexarotor (0.22 m arms) with a forward arm.

    Rotors at 30 + 60 k degrees, alternating spins; thrust 0.1-6 N each.
    Under-actuated: ``B`` has rank 4.
    """
    cfg = _hexa(thrust_max=np.full(6, 6.0), mass=2.2, inertia=np.array([0.035, 0.035, 0.060]), name="hexa")
    cfg.update(overrides)
    return RotorProfile(**cfg)


def hexa_tilted(tilt: float = math.radians(30.0), **overrides: Any) -> RotorProfile:
    """A 2.4 kg fully actuated hexarotor: rotors tilted alternately by +-``tilt``.

    Each thrust axis is e_z rotated by ``(-1)^k tilt`` [rad] about its own
    radial arm (the fixed-tilt layout of Rajappa et al., ICRA 2015), which
    makes ``B`` rank 6 so forces and torques are independent. Thrust 0.1-8 N.
    """
    cfg = _hexa(thrust_max=np.full(6, 8.0), mass=2.4, inertia=np.array([0.040, 0.040, 0.070]), name="hexa_tilted")
    pos = cfg["positions"]
    axes = np.zeros((6, 3))
    for k in range(6):
        radial = pos[k] / np.linalg.norm(pos[k])
        angle = tilt * (1.0 if k % 2 == 0 else -1.0)
        # Rodrigues rotation of e_z about the radial axis (radial is orthogonal to e_z).
        axes[k] = np.cos(angle) * np.array([0.0, 0.0, 1.0]) + np.sin(angle) * np.cross(radial, [0.0, 0.0, 1.0])
    cfg["axes"] = axes
    cfg.update(overrides)
    return RotorProfile(**cfg)


PRESETS = {"quad_x": quad_x, "hexa": hexa, "hexa_tilted": hexa_tilted}


def preset(name: str) -> RotorProfile:
    """A preset profile by name (``quad_x``, ``hexa``, ``hexa_tilted``)."""
    if name not in PRESETS:
        raise ConfigError(f"profile: must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]()
