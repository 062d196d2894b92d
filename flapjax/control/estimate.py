"""Cycle-averaged state estimate of the flapping-wing robot.

The wingbeat makes the body rock at the flapping frequency ``f`` and its
harmonics (body rates swing by about +/-10 rad/s at ``f`` on the per-wing
model), while the flight dynamics the hover controller acts on are the
cycle means. A bank of notch filters at ``f, 2f, ...`` removes the wingbeat
from every measured signal with little delay at the low frequencies of the
flight modes (docs/physics.md, Hover controller).

Each notch is the bilinear (Tustin) discretization, prewarped at the notch,
of ``H(s) = (s^2 + w0^2) / (s^2 + (w0 / Q) s + w0^2)`` with ``w0 = 2 pi h f``
(the audio-EQ cookbook biquad: ``c = cos(w0 dt)``, ``alpha = sin(w0 dt) /
(2 Q)``, ``b = [1, -2c, 1] / (1 + alpha)``, ``a = [1, -2c / (1 + alpha),
(1 - alpha) / (1 + alpha)]``), run in transposed direct form II. The
coefficients are recomputed every step from the current flapping
frequency, so the notches follow ``f`` when the altitude loop changes it.
At low frequency each notch delays by about ``1 / (Q w0)`` seconds; it has
unit gain at DC, zero gain at ``w0`` and a -3 dB width of ``w0 / Q``.

Pure JAX, no batch axis inside (vmap it); any number of signals.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float

from flapjax.validation import ConfigError, check_positive

Scalar = Float[Array, ""]

DEFAULT_HARMONICS = (1, 2, 3)


class CycleFilterState(eqx.Module):
    """Memory of the notch bank.

    Attributes:
      z: (n_harmonics, 2, n) transposed-direct-form-II states of each notch
        for each of the n signals [unit of the signal].
    """

    z: Float[Array, "h 2 n"]


def notch_coefficients(frequency: Scalar, dt: float, quality: float) -> tuple[Array, Array]:
    """Biquad notch at ``frequency`` [Hz] sampled every ``dt`` [s].

    Returns ``(b, a)``, each (3,), normalized so ``a[0] = 1``; the filter is
    ``y_k = b0 x_k + b1 x_{k-1} + b2 x_{k-2} - a1 y_{k-1} - a2 y_{k-2}``.
    """
    w0 = 2.0 * jnp.pi * frequency * dt
    c = jnp.cos(w0)
    alpha = jnp.sin(w0) / (2.0 * quality)
    a0 = 1.0 + alpha
    b = jnp.stack([jnp.ones_like(c), -2.0 * c, jnp.ones_like(c)]) / a0
    a = jnp.stack([jnp.ones_like(c), -2.0 * c / a0, (1.0 - alpha) / a0])
    return b, a


def _check(harmonics, quality):
    if len(harmonics) == 0:
        raise ConfigError("harmonics: need at least one harmonic of the flapping frequency, got ()")
    for h in harmonics:
        if int(h) != h or h < 1:
            raise ConfigError(f"harmonics: must be positive integers, got {tuple(harmonics)}")
    check_positive("quality", quality)


def cycle_filter_init(
    x: Float[Array, " n"],
    frequency: Scalar,
    dt: float,
    *,
    harmonics: tuple[int, ...] = DEFAULT_HARMONICS,
    quality: float = 1.0,
) -> CycleFilterState:
    """Notch-bank memory at rest on the constant signal ``x`` (n,) at
    flapping frequency ``frequency`` [Hz]: the output equals ``x`` while the
    input stays there (no start transient)."""
    _check(harmonics, quality)
    x = jnp.asarray(x)
    zs = []
    for h in harmonics:
        b, a = notch_coefficients(h * frequency, dt, quality)
        # Steady state of a unit-DC-gain section on a constant input: y = x.
        zs.append(jnp.stack([(1.0 - b[0]) * x, (b[2] - a[2]) * x]))
    return CycleFilterState(z=jnp.stack(zs).astype(x.dtype))


def cycle_filter_update(
    state: CycleFilterState,
    x: Float[Array, " n"],
    frequency: Scalar,
    dt: float,
    *,
    harmonics: tuple[int, ...] = DEFAULT_HARMONICS,
    quality: float = 1.0,
) -> tuple[CycleFilterState, Float[Array, " n"]]:
    """One sample through the notches at ``h * frequency`` for each ``h`` in
    ``harmonics`` (in series).

    Args:
      state: memory from :func:`cycle_filter_init` or the previous update.
      x: (n,) this sample of the n measured signals.
      frequency: () current flapping frequency f [Hz]; every ``h f`` must
        stay below the Nyquist frequency ``1 / (2 dt)``.
      dt: sample period [s].
      harmonics: the multiples of f to remove (static).
      quality: Q of every notch (static); larger is narrower and delays less.

    Returns:
      the new memory and the (n,) cycle-averaged estimate.
    """
    if state.z.shape[0] != len(harmonics):
        raise ConfigError(f"state: holds {state.z.shape[0]} notches, harmonics has {len(harmonics)}")
    y = jnp.asarray(x)
    zs = []
    for i, h in enumerate(harmonics):
        b, a = notch_coefficients(h * frequency, dt, quality)
        b, a = b.astype(y.dtype), a.astype(y.dtype)
        z1, z2 = state.z[i, 0], state.z[i, 1]
        out = b[0] * y + z1
        zs.append(jnp.stack([b[1] * y - a[1] * out + z2, b[2] * y - a[2] * out]))
        y = out
    return CycleFilterState(z=jnp.stack(zs)), y


def notch_response(omega: Float[Array, ...], frequency: float, *, harmonics=DEFAULT_HARMONICS,
                   quality: float = 1.0) -> Array:
    """Continuous-time frequency response of the bank at ``omega`` [rad/s]
    (complex), the design model of the estimate's delay."""
    s = 1j * jnp.asarray(omega)
    out = jnp.ones_like(s)
    for h in harmonics:
        w0 = 2.0 * jnp.pi * h * frequency
        out = out * (s**2 + w0**2) / (s**2 + (w0 / quality) * s + w0**2)
    return out
