"""Control channels of a flapping-wing robot: what each entry of the
channel vector moves in the step (docs/flapper_robots.md, Control channels).

A robot's channels are the ``[[channels]]`` of its description, in file
order; :attr:`FlapperRobot.channel_kinds` holds their kinds (static) and
``FlapperCommand.plate`` / ``FlapperParams.plate`` hold their values, one per
channel in that order (the seed robot's two channels are both joints, so the
vector is its two plate angles, as it always was). Each kind:

* ``"joint"`` [rad]: the set point of the position servo on a joint (the
  seed's plates); the joint channels, in channel order, drive
  ``FlapperRobot.plate_act``;
* ``"stroke_bias"`` b [rad]: added to the stroke reference of both wings,
  ``psi_ref = d A sin(2 pi f t + phi0) + b``. Both stroke hinges are
  mirrored (left about ``+z``, right about ``-z`` of the plate frame), so the
  same b moves both wings the same way in the body frame: the mean wing,
  and the mean lift with it, shifts along ``-x`` for b > 0 (a pitch moment);
* ``"amplitude_difference"`` u [-]: the left amplitude is ``A (1 + u)`` and
  the right ``A (1 - u)`` (reference, rate and acceleration alike): more
  lift on the left for u > 0 (a roll moment about ``+x``);
* ``"frequency"`` df [Hz]: added to the commanded frequency f (the phase
  and the rates follow ``f + df``).

The values are quasi-static inputs: a changing bias or amplitude adds no
rate feed-forward to the stroke servo. A ``"stroke_plane"`` channel is a
servo-held joint that carries both wings' stroke hinges (it tilts the stroke
plane, as the seed's plates do); the description checks that and hands it
to the bridge as a ``"joint"`` channel.
A robot whose channels are all joints runs exactly the operations it ran
before channels existed (the branches here are on static kinds).
"""

from __future__ import annotations

from typing import Any, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.aero.cycle_averaged import PLATE_LIMIT
from flapjax.control.stroke import phase_cycles, stroke_reference
from flapjax.validation import ConfigError, as_float_array

Scalar = Float[Array, ""]
Vec2 = Float[Array, "2"]

#: Channel kinds of the description schema.
KINDS = ("joint", "stroke_plane", "stroke_bias", "amplitude_difference", "frequency")
#: Kinds that set a servo-held joint: a ``"stroke_plane"`` channel is a
#: joint channel whose joint carries both wings' stroke hinges (the
#: description checks it), so the bridge drives it as ``"joint"``.
JOINT_KINDS = ("joint", "stroke_plane")
#: The seed robot's channels: pitch_joint, roll_joint.
SEED_KINDS = ("joint", "joint")
#: Largest |value| of each kind: [rad], [rad], [-], [Hz].
LIMITS = {"joint": PLATE_LIMIT, "stroke_bias": 0.5, "amplitude_difference": 0.5, "frequency": 100.0}
UNITS = {"joint": "rad", "stroke_bias": "rad", "amplitude_difference": "(a fraction of A)", "frequency": "Hz"}


def joint_slots(kinds: Sequence[str]) -> tuple[int, ...]:
    """Positions of the joint channels in the channel vector."""
    return tuple(i for i, k in enumerate(kinds) if k == "joint")


def slot(kinds: Sequence[str], kind: str) -> int | None:
    """Position of the (one) channel of a non-joint ``kind``; None without one."""
    hits = [i for i, k in enumerate(kinds) if k == kind]
    return hits[0] if hits else None


def joint_setpoints(kinds: Sequence[str], values: Float[Array, " nc"], dtype=None) -> Float[Array, " nj"]:
    """Set points of the joint channels (nj,) [rad] from the channel vector
    (nc,); the vector itself when every channel is a joint."""
    values = jnp.asarray(values, dtype=dtype)
    if all(k == "joint" for k in kinds):
        return values
    return values[np.asarray(joint_slots(kinds), dtype=int)]


def frequency_command(robot: Any, frequency: Scalar, values: Float[Array, " nc"], dtype) -> Scalar:
    """The frequency the stroke runs at [Hz]: the command's ``frequency``
    plus the value of a ``"frequency"`` channel, if the
    :class:`~flapjax.sim.flapper.FlapperRobot` ``robot`` has one (this
    module sits below the robot's types, so they are not imported)."""
    f_cmd = jnp.asarray(frequency, dtype=dtype)
    i = slot(robot.channel_kinds, "frequency")
    return f_cmd if i is None else f_cmd + jnp.asarray(values, dtype=dtype)[i]


def stroke_modulation(kinds: Sequence[str], values: Float[Array, " nc"], dtype
                      ) -> tuple[Vec2 | None, Vec2 | None]:
    """(bias (2,) [rad], amplitude scale (2,) [-]) of the (left, right)
    stroke from the channel vector; None where the robot has no such channel."""
    values = jnp.asarray(values, dtype=dtype)
    ib, iu = slot(kinds, "stroke_bias"), slot(kinds, "amplitude_difference")
    bias = None if ib is None else jnp.stack([values[ib], values[ib]])
    scale = None if iu is None else jnp.stack([1.0 + values[iu], 1.0 - values[iu]])
    return bias, scale


class StrokeTargets(eqx.Module):
    """Stroke references of both wings: psi_ref [rad], psi_dot_ref [rad/s],
    psi_ddot_ref [rad/s^2], each (2,) (zeros for the averaged model: the wings are held)."""

    angle: Vec2
    rate: Vec2
    acceleration: Vec2


def stroke_targets(robot: Any, params: Any, state: Any, f_cmd: Scalar,
                   values: Float[Array, " nc"] | None = None) -> StrokeTargets:
    """Stroke reference at this step's phase (integer step counter plus the
    accumulated offset of a varying frequency), with the stroke-bias and
    amplitude-difference channels of ``values`` (nc,) applied; zeros for the
    averaged model. ``robot``, ``params``, ``state``: the world's
    FlapperRobot, FlapperParams and FlapperState."""
    if robot.aero_model == "averaged":
        zeros2 = jnp.zeros((2,), dtype=f_cmd.dtype)
        return StrokeTargets(angle=zeros2, rate=zeros2, acceleration=zeros2)
    cycles = phase_cycles(params.stroke.frequency, state.step, robot.dt, state.phase_offset)
    bias = scale = None
    if values is not None:
        bias, scale = stroke_modulation(robot.channel_kinds, values, f_cmd.dtype)
    psi, psi_dot, psi_ddot = stroke_reference(params.stroke, cycles, f_cmd, bias=bias, amplitude_scale=scale)
    return StrokeTargets(angle=psi, rate=psi_dot, acceleration=psi_ddot)


def check_values(name: str, values, kinds: Sequence[str], *, amplitude: float | None = None) -> np.ndarray:
    """The channel values (..., nc) as an array, each within its kind's
    :data:`LIMITS`; with ``amplitude`` A [rad], also the largest stroke
    ``|b| + A (1 + |u|)`` within pi. :class:`ConfigError` naming ``name``,
    the channel and its bound."""
    arr = as_float_array(name, values)
    if arr.shape[-1:] != (len(kinds),):
        raise ConfigError(f"{name}: expected one value per control channel, shape (..., {len(kinds)}) for the "
                          f"channel kinds {list(kinds)}, got shape {arr.shape}")
    for i, kind in enumerate(kinds):
        col = arr[..., i]
        if not np.all(np.isfinite(col)) or np.any(np.abs(col) > LIMITS[kind]):
            raise ConfigError(f"{name}: must lie in [-{LIMITS[kind]:g}, {LIMITS[kind]:g}] {UNITS[kind]} at channel "
                              f"{i} (kind {kind!r}), got {col.tolist()}")
    ib, iu = slot(kinds, "stroke_bias"), slot(kinds, "amplitude_difference")
    if amplitude is not None and (ib is not None or iu is not None):
        b = 0.0 if ib is None else np.abs(arr[..., ib])
        u = 0.0 if iu is None else np.abs(arr[..., iu])
        widest = float(np.max(b + float(np.max(amplitude)) * (1.0 + u)))
        if widest > np.pi:
            raise ConfigError(f"{name}: stroke bias and amplitude difference swing a wing to {widest:.4g} rad; "
                              f"|b| + A (1 + |u|) must stay within pi (the stroke would wrap around the body)")
    return arr
