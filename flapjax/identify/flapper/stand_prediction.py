"""The stand model (docs/data_formats.md, "Thrust-stand tables"): its
parameters, the prediction of the measured channels, each parameter's
regressor and which terms a table can identify."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from flapjax.data.tables import DataError
from flapjax.data.stand_table import CHANNELS, StandData

#: f_ref of lambda_f = (f / f_ref)^2 [Hz] (the averaged model's).
REFERENCE_FREQUENCY = 42.0

#: Sensor offsets are fitted only when the fitted rows number at least this.
MIN_ROWS_FOR_OFFSETS = 8

#: Parameter -> (channel it enters, unit).
PARAMETERS = {
    "k_f": ("fz_n", "N/Hz^2"),
    "k_roll": ("mx_nm", "N m/rad"),
    "k_roll_cross": ("mx_nm", "N m/rad"),
    "k_pitch": ("my_nm", "N m/rad"),
    "k_pitch_cross": ("my_nm", "N m/rad"),
    "fz_offset": ("fz_n", "N"),
    "fx_offset": ("fx_n", "N"),
    "fy_offset": ("fy_n", "N"),
    "mx_offset": ("mx_nm", "N m"),
    "my_offset": ("my_nm", "N m"),
}


def stand_model(values: Mapping[str, Any], frequency, plate, channels=CHANNELS, *,
                f_ref: float = REFERENCE_FREQUENCY) -> jax.Array:
    """(n, C) predicted cycle means of ``channels`` from physical ``values``
    (missing terms are 0); frequency (n,) [Hz], plate (n, 2) (delta_p,
    delta_r) [rad]."""
    v = lambda k: values.get(k, 0.0)
    f = jnp.asarray(frequency)
    dp, dr = plate[:, 0], plate[:, 1]
    lift = v("k_f") * f**2
    c = 1.0 / jnp.sqrt(1.0 + dp**2 + dr**2)
    lam = (f / f_ref) ** 2
    out = {
        "fz_n": lift * c + v("fz_offset"),
        "fx_n": -lift * dr * c + v("fx_offset"),
        "fy_n": -lift * dp * c + v("fy_offset"),
        "mx_nm": lam * (v("k_roll") * dp + v("k_roll_cross") * dr) + v("mx_offset"),
        "my_nm": lam * (-v("k_pitch") * dr + v("k_pitch_cross") * dp) + v("my_offset"),
    }
    return jnp.stack([out[ch] for ch in channels], axis=-1)


#: :func:`stand_model` compiled, the channel names static.
stand_model_jit = jax.jit(stand_model, static_argnums=(3,))


def physical_values(p: Mapping[str, Any]) -> dict[str, Any]:
    """Physical values from a fit's parameter dict: signed terms are trained
    in units of ``unit_<name>``."""
    out = {}
    for k, val in p.items():
        if k.startswith("unit_"):
            continue
        unit = p.get(f"unit_{k}")
        out[k] = val if unit is None else val * unit
    return out


def predict_stand(p: Mapping[str, Any], inputs) -> jax.Array:
    """The fit's model: ``inputs = (frequency (n,), plate (n, 2), channels)``
    with ``channels`` a static tuple; ``p`` holds trained values (signed ones
    in units of ``unit_<name>``) and ``f_ref``."""
    f, plate, channels = inputs
    return stand_model(physical_values({k: v for k, v in p.items() if k != "f_ref"}), f, plate, channels,
                       f_ref=p["f_ref"])


class StandInputs(tuple):
    """(frequency, plate, channels) with the channel names static under jit."""


jax.tree_util.register_pytree_node(
    StandInputs, lambda x: ((x[0], x[1]), x[2]), lambda aux, ch: StandInputs((ch[0], ch[1], aux))
)


def regressors(data: StandData, f_ref: float) -> dict[str, np.ndarray]:
    """Each parameter's regressor (its column of the linearized model)."""
    f, dp, dr = data.frequency, data.plate[:, 0], data.plate[:, 1]
    c = 1.0 / np.sqrt(1.0 + dp**2 + dr**2)
    lam = (f / f_ref) ** 2
    return {"k_roll": lam * dp, "k_roll_cross": lam * dr, "k_pitch": -lam * dr, "k_pitch_cross": lam * dp,
            "k_f_fz_n": f**2 * c, "k_f_fx_n": -(f**2) * dr * c, "k_f_fy_n": -(f**2) * dp * c}


def stand_terms(data: StandData, *, offsets: bool | None = None) -> list[str]:
    """The parameters ``data`` can identify, in a fixed order."""
    ch = data.channels
    varies = lambda a: bool(np.ptp(a) > 0 or np.any(a != 0))
    dp, dr = varies(data.plate[:, 0]), varies(data.plate[:, 1])
    names = ["k_f"]
    if "mx_nm" in ch:
        names += ["k_roll"] * dp + ["k_roll_cross"] * dr
    if "my_nm" in ch:
        names += ["k_pitch"] * dr + ["k_pitch_cross"] * dp
    if offsets is None:
        offsets = data.n >= MIN_ROWS_FOR_OFFSETS
    if offsets:
        names += [f"{c.split('_')[0]}_offset" for c in data.channel_names]
    return names


def check_identifiable(data: StandData, names: list[str], f_ref: float) -> None:
    """Each moment channel's regressors must be independent (the plate angles
    and the offset must not move together)."""
    reg = regressors(data, f_ref)
    for ch, terms in (("mx_nm", ("k_roll", "k_roll_cross")), ("my_nm", ("k_pitch", "k_pitch_cross"))):
        cols = [reg[t] for t in terms if t in names]
        if f"{ch.split('_')[0]}_offset" in names:
            cols.append(np.ones(data.n))
        if len(cols) > 1:
            a = np.stack(cols, axis=1)
            if np.linalg.matrix_rank(a / np.maximum(np.abs(a).max(axis=0), 1e-300), tol=1e-9) < a.shape[1]:
                raise DataError(f"{data.source}: columns 'pitch_plate_rad' and 'roll_plate_rad': the plate angles "
                                f"do not vary independently, so the moment terms {[t for t in terms if t in names]} "
                                f"of column {ch!r} cannot be told apart; measure each plate angle on its own too")


def per_channel_counts(names: list[str], channels: tuple[str, ...]) -> np.ndarray:
    """How many of ``names`` each channel's residuals spend (k_f counts for ``fz_n``)."""
    counts = []
    for ch in channels:
        own = [n for n in names if PARAMETERS[n][0] == ch and n != "k_f"]
        counts.append(len(own) + (1 if ch == "fz_n" else 0))
    return np.asarray(counts)
