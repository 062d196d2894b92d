"""Cycle-averaged hover model (seed section 10).

Over one flapping cycle the per-wing loads average to a thrust along the
plate normal, a horizontal damping force and identified control moments:

    L = k_f f^2
    n_B = [-delta_r, -delta_p, 1] / sqrt(1 + delta_r^2 + delta_p^2)
    F_W = R_WB L n_B - k_v [v_x, v_y, 0]_W
    v_B = R_WB^T v_W
    tau_B = (f / f_ref)^2 [k_roll delta_p, -k_pitch delta_r, 0] - D_w omega_B
            + [L_v v_B,y, M_u v_B,x, 0]

with ``delta_p`` the pitch_joint and ``delta_r`` the roll_joint angle: the
plate robot. A robot steered by other channels (:mod:`flapjax.sim.flapper.channels`)
has a ``control_matrix`` B (3, nc) and a ``thrust_tilt`` T (2, nc) instead:
``tau_B = (f / f_ref)^2 B u + ...`` and ``n_B ~ [-(T u)_0, -(T u)_1, 1]`` for
the channel vector u (nc,); the plate robot is ``B = [[k_roll, 0],
[0, -k_pitch], [0, 0]]``, ``T = [[0, 1], [1, 0]]``
(:mod:`flapjax.aero.control_matrix`). The naming is crossed, as in the
seed: pitch_joint makes the *roll* moment and roll_joint the *pitch*
moment. ``L_v`` and ``M_u`` couple horizontal speed into moments (the horizontal drag of the flapping wings acts above the
centre of mass: a drag ``-k_v v`` at height ``h`` gives ``L_v = k_v h_y``,
``M_u = -k_v h_x``); both default to 0, the seed's model. The kernel is pure
(parameters and state in, one body wrench out) so any rigid-body backend can
use it. :func:`linearize_hover` gives the lateral/longitudinal linear model
about hover.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.aero.control_matrix import channel_control, check_control_matrix
from flapjax.validation import ConfigError, as_float_array, check_finite, check_positive, inertia_matrix

#: The largest plate angle |delta_p|, |delta_r| of the robot's plate servos
#: [rad]: the range of the simulator's plate commands and sweeps and of the
#: measured files the models are fitted to.
PLATE_LIMIT = 0.6

Scalar = Float[Array, ""]

_FIELDS = (
    "lift_coefficient",
    "horizontal_damping",
    "roll_gain",
    "pitch_gain",
    "rate_damping",
    "roll_speed_coupling",
    "pitch_speed_coupling",
    "plate_reaction",
    "stroke_plane_damping", "airspeed_rate_coupling",
    "reference_frequency",
    "mass",
    "gravity",
    "control_matrix",
    "thrust_tilt",
)
#: Fields that may be absent (None): the plate robot's control term.
_OPTIONAL = ("control_matrix", "thrust_tilt")


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


def _as_optional_array(x) -> Array | None:
    return None if x is None else jnp.asarray(x, dtype=float)


class CycleAveragedParams(eqx.Module):
    """Identified cycle-averaged hover parameters (seed section 10).

    Attributes:
      lift_coefficient: () k_f in L = k_f f^2 [N/Hz^2].
      horizontal_damping: () k_v, world-frame horizontal drag [N s/m].
      roll_gain: () k_roll, roll moment per rad of pitch_joint [N m/rad].
      pitch_gain: () k_pitch, pitch moment per rad of roll_joint [N m/rad].
      rate_damping: (3,) D_w diagonal, body-rate damping [N m s/rad]; finite, signed: an identified
        slope (< 0: anti-damped, as some calibrations' free-flight D_w,y; gains then hold an unstable loop).
      roll_speed_coupling: () L_v, body roll moment per body lateral speed
        v_B,y [N m s/m] (> 0: drag above the centre of mass); default 0.
      pitch_speed_coupling: () M_u, body pitch moment per body forward speed
        v_B,x [N m s/m] (< 0: drag above the centre of mass); default 0.
      plate_reaction: (2,) kappa per plate joint (pitch_joint, roll_joint)
        [rad/rad]: the body turns back by kappa times the plate's turn, the
        plate's and wings' inertial reaction (angular momentum kept); 0 to
        1, default 0.
      stroke_plane_damping: (2,) D_s per plate joint [N m s/rad]: the
        flapping wings resist the turning of their stroke plane, so a plate
        turning at rate delta' about its joint axis pushes the body with
        -D_s delta' about that axis; default 0 (docs/physics.md,
        Decomposition of the plate-step response).
      airspeed_rate_coupling: (2,) A, roll (pitch) moment per rate of change of the body
        airspeed v_B,y (v_B,x) [N m s^2/m] (:mod:`flapjax.sim.flapper.airspeed_rate`); default 0.
      reference_frequency: () f_ref of lambda_f = (f / f_ref)^2 [Hz].
      mass: () m, the rigid body the model flies [kg].
      gravity: () g [m/s^2].
      control_matrix: (3, nc) B, body moment per unit of each control
        channel at f_ref [N m per channel unit] (rows body x, y, z; columns
        the robot's channels in order). None (default): the plate robot,
        ``[[k_roll, 0], [0, -k_pitch], [0, 0]]`` from the gains above, its
        thrust tilted by the plates. A ``"frequency"`` channel acts through
        f itself (L = k_f f^2 and lambda_f at the commanded f plus its
        value), so its column is 0 unless an asymmetry makes it turn the body.
      thrust_tilt: (2, nc) T, tilt of the thrust direction per channel unit
        [rad per channel unit], ``n_B ~ [-(T u)_0, -(T u)_1, 1]``; read only
        with a ``control_matrix``; None: no tilt (a stroke bias or an
        amplitude difference moves the mean lift, it does not turn it).
    """

    lift_coefficient: Scalar = eqx.field(converter=_as_array, default=0.14858349039827917 / 30.0**2)
    horizontal_damping: Scalar = eqx.field(converter=_as_array, default=0.06)
    roll_gain: Scalar = eqx.field(converter=_as_array, default=0.01055 / 20.0)
    pitch_gain: Scalar = eqx.field(converter=_as_array, default=0.01144 / 20.0)
    rate_damping: Float[Array, "3"] = eqx.field(converter=_as_array, default=(2e-4, 2e-4, 1e-4))
    roll_speed_coupling: Scalar = eqx.field(converter=_as_array, default=0.0)
    pitch_speed_coupling: Scalar = eqx.field(converter=_as_array, default=0.0)
    plate_reaction: Float[Array, "2"] = eqx.field(converter=_as_array, default=(0.0, 0.0))
    stroke_plane_damping: Float[Array, "2"] = eqx.field(converter=_as_array, default=(0.0, 0.0))
    airspeed_rate_coupling: Float[Array, "2"] = eqx.field(converter=_as_array, default=(0.0, 0.0))
    reference_frequency: Scalar = eqx.field(converter=_as_array, default=42.0)
    mass: Scalar = eqx.field(converter=_as_array, default=0.03)
    gravity: Scalar = eqx.field(converter=_as_array, default=9.81)
    control_matrix: Float[Array, "3 nc"] | None = eqx.field(converter=_as_optional_array, default=None)
    thrust_tilt: Float[Array, "2 nc"] | None = eqx.field(converter=_as_optional_array, default=None)

    def __check_init__(self):
        check_positive("CycleAveragedParams.lift_coefficient", self.lift_coefficient)
        check_positive("CycleAveragedParams.horizontal_damping", self.horizontal_damping, allow_zero=True)
        check_finite("CycleAveragedParams.rate_damping", self.rate_damping)  # signed: see the docstring
        if jnp.shape(self.rate_damping)[-1:] != (3,):
            raise ConfigError(
                f"CycleAveragedParams.rate_damping: expected shape (3,), got shape {jnp.shape(self.rate_damping)}"
            )
        for name in ("roll_speed_coupling", "pitch_speed_coupling"):
            value = getattr(self, name)
            if jnp.shape(value) != () and not isinstance(value, jax.core.Tracer):
                raise ConfigError(f"CycleAveragedParams.{name}: expected a scalar, got shape {jnp.shape(value)}")
        for name in ("plate_reaction", "stroke_plane_damping", "airspeed_rate_coupling"):
            value = getattr(self, name)
            if jnp.shape(value)[-1:] != (2,):
                raise ConfigError(f"CycleAveragedParams.{name}: expected shape (2,) (pitch_joint, roll_joint), "
                                  f"got shape {jnp.shape(value)}")
            if not isinstance(value, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(value))):
                raise ConfigError(f"CycleAveragedParams.{name}: must be finite, got {np.asarray(value).tolist()}")
        if not isinstance(self.plate_reaction, jax.core.Tracer):
            kappa = np.asarray(self.plate_reaction)
            if not (np.all(np.isfinite(kappa)) and np.all(np.abs(kappa) < 1.0)):
                raise ConfigError(f"CycleAveragedParams.plate_reaction: must lie in (-1, 1), got {kappa.tolist()}")
        check_positive("CycleAveragedParams.reference_frequency", self.reference_frequency)
        check_positive("CycleAveragedParams.mass", self.mass)
        check_positive("CycleAveragedParams.gravity", self.gravity, allow_zero=True)
        check_control_matrix(self.control_matrix, self.thrust_tilt)

    @classmethod
    def flapsim(cls) -> "CycleAveragedParams":
        """The seed's identified values (k_f from the 30 Hz fixed-base point)."""
        return cls()

    @property
    def hover_frequency(self) -> Scalar:
        """f_h = sqrt(m g / k_f) [Hz] (42.2213 Hz for the seed's values)."""
        return jnp.sqrt(self.mass * self.gravity / self.lift_coefficient)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "CycleAveragedParams":
        """Build from a mapping of field name -> number (unknown keys rejected;
        missing ones keep their defaults, so files written before a field
        existed still load)."""
        unknown = sorted(set(values) - set(_FIELDS) - {"comment", "units"})
        if unknown:
            raise ConfigError(f"CycleAveragedParams: unknown field(s) {unknown}; allowed: {list(_FIELDS)}")
        kwargs = {}
        for name in _FIELDS:
            if name in values and name in _OPTIONAL:
                kwargs[name] = None if values[name] is None else as_float_array(
                    f"CycleAveragedParams.{name}", values[name], (3 if name == "control_matrix" else 2, None))
            elif name in values:
                shape = {"rate_damping": (3,), "plate_reaction": (2,), "stroke_plane_damping": (2,),
                         "airspeed_rate_coupling": (2,)}.get(name, ())
                kwargs[name] = as_float_array(f"CycleAveragedParams.{name}", values[name], shape)
        return cls(**kwargs)

    @classmethod
    def from_json(cls, path: str | Path) -> "CycleAveragedParams":
        """Load from a JSON object of field name -> number (see :meth:`from_dict`)."""
        path = Path(path)
        try:
            values = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path.name}: cannot read cycle-averaged parameters ({exc})") from exc
        if not isinstance(values, dict):
            raise ConfigError(f"{path.name}: expected a JSON object of field -> number, got {type(values).__name__}")
        if "study" in values:  # an identification's results.json, not a parameter file
            hint = ("load cycle_averaged.json from the same folder" if (path.parent / "cycle_averaged.json").is_file()
                    else "cycle-averaged parameters come from stand tables and flight logs (cycle_averaged.json)")
            raise ConfigError(f"{path}: the results of a {values['study']!r} identification; {hint}")
        return cls.from_dict(values)

    def to_dict(self) -> dict[str, Any]:
        """Plain floats / lists, the inverse of :meth:`from_dict` (an absent
        control matrix or thrust tilt is left out, as in files older than them)."""
        out = {}
        for name in _FIELDS:
            if name in _OPTIONAL and getattr(self, name) is None:
                continue
            v = jnp.asarray(getattr(self, name))
            out[name] = v.tolist()
        return out


class CycleAveragedLoads(eqx.Module):
    """Cycle-mean wrench of the whole robot.

    Attributes:
      wrench: (6,) ``[F_world; tau_world]`` about the robot's centre of mass,
        MuJoCo order [N, N m].
      force_world: (3,) thrust plus horizontal damping, world frame [N].
      torque_body: (3,) control moment minus rate damping, body frame [N m].
      torque_world: (3,) the same in the world frame [N m].
      thrust: () L = k_f f^2 [N].
      thrust_direction_body: (3,) unit n_B [-].
      moment_scale: () lambda_f = (f / f_ref)^2 [-].
    """

    wrench: Float[Array, "6"]
    force_world: Float[Array, "3"]
    torque_body: Float[Array, "3"]
    torque_world: Float[Array, "3"]
    thrust: Scalar
    thrust_direction_body: Float[Array, "3"]
    moment_scale: Scalar


def cycle_averaged_wrench(
    params: CycleAveragedParams,
    *,
    frequency: Scalar,
    plate: Float[Array, "2"],
    rot_world_body: Float[Array, "3 3"],
    v_world: Float[Array, "3"],
    w_body: Float[Array, "3"],
    plate_rate: Float[Array, "2"] | None = None,
) -> CycleAveragedLoads:
    """Cycle-averaged wrench (seed section 10); no batch axis.

    Args:
      params: identified model parameters.
      frequency: () flapping frequency f [Hz].
      plate: (2,) plate angles ``(delta_p, delta_r)`` = (pitch_joint,
        roll_joint) [rad]; with a ``params.control_matrix``, the channel
        vector u (nc,) [channel units].
      rot_world_body: (3, 3) R_WB, body to world.
      v_world: (3,) centre-of-mass velocity, world frame [m/s].
      w_body: (3,) body angular velocity, body frame [rad/s].
      plate_rate: (2,) plate joint rates ``(delta_p', delta_r')`` [rad/s]
        for the stroke-plane damping (:func:`stroke_plane_torque`); None:
        no such term (the same operations as before it existed).

    The speed-to-moment coupling uses the body-frame velocity
    ``v_B = R_WB^T v_W``. With the drag above the centre of mass, a body
    moving along its +x gets a negative body-y moment (``M_u < 0``) and one
    moving along its +y a positive body-x moment (``L_v > 0``): either way
    the top tilts back, against the motion.
    """
    thrust = params.lift_coefficient * frequency**2
    if params.control_matrix is None:  # the plate robot
        if jnp.shape(plate) != (2,):
            raise ConfigError(f"plate: expected shape (2,) (delta_p, delta_r), got shape {jnp.shape(plate)}")
        delta_p, delta_r = plate[0], plate[1]
        n_raw = jnp.stack([-delta_r, -delta_p, jnp.ones_like(delta_p)])
        n_body = n_raw / jnp.sqrt(1.0 + delta_r**2 + delta_p**2)
        control = jnp.stack([params.roll_gain * delta_p, -params.pitch_gain * delta_r, jnp.zeros_like(delta_p)])
    else:
        n_body, control = channel_control(params.control_matrix, params.thrust_tilt, plate)
    drag = -params.horizontal_damping * jnp.stack([v_world[0], v_world[1], jnp.zeros_like(v_world[2])])
    force_world = rot_world_body @ (thrust * n_body) + drag
    lam = (frequency / params.reference_frequency) ** 2
    v_body = rot_world_body.T @ v_world
    coupling = jnp.stack([params.roll_speed_coupling * v_body[1], params.pitch_speed_coupling * v_body[0],
                          jnp.zeros_like(v_body[0])])
    torque_body = lam * control - params.rate_damping * w_body + coupling
    if plate_rate is not None:
        torque_body = torque_body + stroke_plane_torque(params, plate_rate)
    torque_world = rot_world_body @ torque_body
    return CycleAveragedLoads(
        wrench=jnp.concatenate([force_world, torque_world]),
        force_world=force_world,
        torque_body=torque_body,
        torque_world=torque_world,
        thrust=thrust,
        thrust_direction_body=n_body,
        moment_scale=lam,
    )


#: Body-frame axes the plate joints turn about: pitch_joint +x, roll_joint -y.
PLATE_AXES = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
#: Lag of the stroke plane's plate behind the commanded plate, in wingbeats
#: (first order; the group delay of a one-wingbeat average): what the
#: plate-motion terms read (:mod:`flapjax.sim.flapper.plate_motion`).
STROKE_PLANE_LAG_WINGBEATS = 0.5


def stroke_plane_torque(params: CycleAveragedParams, plate_rate: Float[Array, "2"]) -> Float[Array, "3"]:
    """Body torque of the stroke-plane damping, ``-sum_j D_s,j delta_j' a_j``
    with ``a_j`` the joint axes (:data:`PLATE_AXES`); no batch axis.

    Args:
      plate_rate: (2,) ``(delta_p', delta_r')`` [rad/s].
    Returns: (3,) torque, body frame [N m].
    """
    plate_rate = jnp.asarray(plate_rate)
    if jnp.shape(plate_rate) != (2,):
        raise ConfigError(f"plate_rate: expected shape (2,) (pitch_joint, roll_joint), got shape {jnp.shape(plate_rate)}")
    return -(params.stroke_plane_damping * plate_rate) @ jnp.asarray(PLATE_AXES, dtype=plate_rate.dtype)


# ---------------------------------------------------------------------------
# Linear model about hover
# ---------------------------------------------------------------------------

#: State order of :func:`linearize_hover`.
HOVER_STATE = ("x", "y", "vx", "vy", "roll", "pitch", "p", "q")
#: Input order of :func:`linearize_hover`.
HOVER_INPUT = ("delta_p", "delta_r")


def hover_dynamics(params: CycleAveragedParams, state, inputs, *, inertia, frequency):
    """Time derivative of the reduced hover state under the averaged model
    (level flight at constant altitude, yaw and yaw rate zero); no batch axis.

    Args:
      state: (8,) ``(x, y, vx, vy, roll, pitch, p, q)``: centre-of-mass
        position [m] and velocity [m/s] in the world frame, ZYX Euler roll and
        pitch (yaw 0) [rad], body rates about body x and y [rad/s].
      inputs: (2,) plate angles ``(delta_p, delta_r)`` [rad].
      inertia: (3, 3) body inertia about the centre of mass [kg m^2].
      frequency: () flapping frequency f [Hz].
    Returns: (8,) the state's time derivative (SI units).
    """
    state = jnp.asarray(state)
    _, _, vx, vy, roll, pitch, p, q = (state[i] for i in range(8))
    cr, sr, cp, sp = jnp.cos(roll), jnp.sin(roll), jnp.cos(pitch), jnp.sin(pitch)
    rot_x = jnp.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    rot_y = jnp.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rot = rot_y @ rot_x
    zero = jnp.zeros_like(vx)
    w = jnp.stack([p, q, zero])
    loads = cycle_averaged_wrench(params, frequency=jnp.asarray(frequency), plate=jnp.asarray(inputs),
                                  rot_world_body=rot, v_world=jnp.stack([vx, vy, zero]), w_body=w)
    acc = loads.force_world[:2] / params.mass
    inertia = jnp.asarray(inertia)
    w_dot = jnp.linalg.solve(inertia, loads.torque_body - jnp.cross(w, inertia @ w))
    # ZYX Euler rates with yaw rate r = 0
    roll_dot = p + jnp.sin(roll) * jnp.tan(pitch) * q
    pitch_dot = jnp.cos(roll) * q
    return jnp.stack([vx, vy, acc[0], acc[1], roll_dot, pitch_dot, w_dot[0], w_dot[1]])


def linearize_hover(params: CycleAveragedParams, inertia, *, frequency=None) -> tuple[np.ndarray, np.ndarray]:
    """Linear lateral/longitudinal model of the averaged model about hover.

    ``d/dt s = A s + B u`` with state ``s = (x, y, vx, vy, roll, pitch, p, q)``
    [m, m, m/s, m/s, rad, rad, rad/s, rad/s] (:data:`HOVER_STATE`:
    centre-of-mass position and velocity in the world frame, ZYX Euler roll
    and pitch, body rates about body x and y) and input
    ``u = (delta_p, delta_r)`` [rad] (:data:`HOVER_INPUT`, plate angles),
    about level hover at rest with ``f = f_h = sqrt(m g / k_f)`` (thrust
    equals weight; altitude and yaw are decoupled to first order). The
    speed-to-moment coupling enters ``A[6, 3] = L_v / I_xx`` and
    ``A[7, 2] = M_u / I_yy`` (diagonal inertia). Jacobians of
    :func:`hover_dynamics` by forward-mode autodiff.

    Args:
      params: averaged-model parameters.
      inertia: (3,) principal moments or (3, 3) inertia about the centre of
        mass [kg m^2]; the robot's own, from its MJCF, is
        :func:`flapjax.sim.flapper.lumped_inertia` (about 5e-6 kg m^2), and
        :func:`flapjax.sim.flapper.linearize_hover` uses it by default.
      frequency: () linearization frequency [Hz]; default the hover frequency.
    Returns: ``A`` (8, 8) [1/s, 1/s^2 ...] and ``B`` (8, 2), float64 numpy
    arrays (``B`` (8, nc) per control channel with a ``control_matrix``).
    """
    inertia = inertia_matrix("linearize_hover.inertia", inertia)
    f = params.hover_frequency if frequency is None else jnp.asarray(frequency, dtype=float)
    s0, u0 = jnp.zeros(8), jnp.zeros(2 if params.control_matrix is None else jnp.shape(params.control_matrix)[1])
    dyn = lambda s, u: hover_dynamics(params, s, u, inertia=inertia, frequency=f)  # noqa: E731
    a = jax.jacfwd(dyn, argnums=0)(s0, u0)
    b = jax.jacfwd(dyn, argnums=1)(s0, u0)
    return np.asarray(a, dtype=float), np.asarray(b, dtype=float)
