"""The wing file: a FlapSim-style ``Wing.json`` read into ``aero.Wing`` and
``aero.AeroOptions`` (seed sections 3 and 12.3; docs/data_formats.md, Wing file).

One JSON object, SI units, every key checked::

    {
      "version": 1,
      "wing_length": 0.07,               R [m]            > 0
      "mean_chord": 0.02,                c_bar [m]        > 0
      "air_density": 1.225,              rho [kg/m^3]     > 0
      "shoulder_half_width": 0.01395,    d0 [m]           >= 0
      "stroke_plane_offset": 0.0189913,  ds [m]           finite
      "r00": 1.0, "r11": 0.5, "r22": 0.333..., "r33": 0.25,    chord moments [-]
      "z_cp0": 1.0, "z_cp1": 0.5, "z_cp2": 0.333...,          chord^2 moments [-]
      "z_rd": 1.0,                                            chord^4 moment [-]
      "options": {"lift_scale": 0.72, ...}                    optional
    }

:func:`flapjax.aero.read_wing_file` and :meth:`flapjax.aero.Wing.from_flapsim_json`
build the wing from this module's checked numbers. The integrals are moments of one non-negative chord distribution ``c_hat``
on ``[0, 1]`` with ``int c_hat = 1``; a file whose numbers no wing can have
is refused (:func:`check_integrals`). Unlike FlapSim, whose options block
was silently ignored, every option given here is used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from flapjax.aero.options import AeroOptions
from flapjax.files import read_json, write_json
from flapjax.validation import ConfigError, check_number

VERSION = 1
LENGTHS = ("wing_length", "mean_chord", "air_density", "shoulder_half_width", "stroke_plane_offset")
R_KEYS = ("r00", "r11", "r22", "r33")
Z_KEYS = ("z_cp0", "z_cp1", "z_cp2")
REQUIRED = ("version", *LENGTHS, *R_KEYS, *Z_KEYS, "z_rd")
OPTIONS = ("lift_scale", "moment_scale", "force_limit", "damping_limit", "rotational_damping",
           "angular_velocity_limit")
# Relative slack of the equalities and inequalities among the integrals: a
# rectangular wing meets several of them with equality, and a file written
# with 16 significant digits must still pass.
RTOL = 1e-9


def _check_keys(obj: Any, allowed: tuple[str, ...], required: tuple[str, ...], where: str, prefix: str = "") -> None:
    if not isinstance(obj, Mapping):
        raise ConfigError(f"{where}: {prefix or 'the file'} must be a JSON object, got {type(obj).__name__}")
    unknown = [k for k in obj if k not in allowed]
    if unknown:
        raise ConfigError(f"{where}: {prefix}{unknown[0]}: unknown key (allowed: {', '.join(allowed)})")
    missing = [k for k in required if k not in obj]
    if missing:
        raise ConfigError(f"{where}: {prefix}{missing[0]}: missing key (required: {', '.join(required)})")


def _le(name: str, lhs: float, rhs: float, why: str) -> None:
    """Refuse ``lhs > rhs`` beyond the relative slack, naming ``name``."""
    if lhs > rhs + RTOL * max(abs(lhs), abs(rhs)):
        raise ConfigError(f"{name}: inconsistent with the other integrals: {why} needs {lhs:.12g} <= {rhs:.12g}")


def check_integrals(r: np.ndarray, z_cp: np.ndarray, z_rd: float, *, where: str = "wing file") -> None:
    """Refuse integrals that no non-negative chord ``c_hat`` on ``[0, 1]``
    with ``int c_hat = 1`` can have (positive values assumed checked):

    * ``r00 = 1`` (the definition of the mean chord);
    * ``r_(k+1) <= r_k`` and ``z_cp,(k+1) <= z_cp,k`` (``r_hat <= 1``);
    * Cauchy-Schwarz within each family: ``r11^2 <= r00 r22``,
      ``r22^2 <= r11 r33``, ``z_cp1^2 <= z_cp0 z_cp2``;
    * Cauchy-Schwarz with the weight ``c_hat (1 - r_hat)``:
      ``(r11 - r22)^2 <= (r00 - r11) (r22 - r33)`` (with the two above, the
      whole Hausdorff condition on four moments of a chord on ``[0, 1]``);
    * across the families: ``r_kk^2 <= z_cp,k / (k + 1)`` (Cauchy-Schwarz
      of ``c_hat r^(k/2)`` and ``r^(k/2)``) and ``z_cp0^2 <= z_rd``.

    A rectangular wing meets the last two with equality.
    """
    if abs(r[0] - 1.0) > RTOL:
        raise ConfigError(f"{where}: r00: must be 1 (int c_hat dr_hat = 1 defines the mean chord), got {r[0]:.12g}")
    for k in range(3):
        _le(f"{where}: {R_KEYS[k + 1]}", r[k + 1], r[k], f"r_hat <= 1 ({R_KEYS[k + 1]} <= {R_KEYS[k]})")
    for k in range(2):
        _le(f"{where}: {Z_KEYS[k + 1]}", z_cp[k + 1], z_cp[k], f"r_hat <= 1 ({Z_KEYS[k + 1]} <= {Z_KEYS[k]})")
    _le(f"{where}: r22", r[1] ** 2, r[0] * r[2], "Cauchy-Schwarz r11^2 <= r00 r22")
    _le(f"{where}: r33", r[2] ** 2, r[1] * r[3], "Cauchy-Schwarz r22^2 <= r11 r33")
    _le(f"{where}: r33", (r[1] - r[2]) ** 2, (r[0] - r[1]) * (r[2] - r[3]),
        "Cauchy-Schwarz with weight (1 - r_hat): (r11 - r22)^2 <= (r00 - r11) (r22 - r33)")
    _le(f"{where}: z_cp2", z_cp[1] ** 2, z_cp[0] * z_cp[2], "Cauchy-Schwarz z_cp1^2 <= z_cp0 z_cp2")
    for k in range(3):
        _le(f"{where}: {Z_KEYS[k]}", r[k] ** 2, z_cp[k] / (k + 1),
            f"Cauchy-Schwarz {R_KEYS[k]}^2 <= {Z_KEYS[k]} / {k + 1}")
    _le(f"{where}: z_rd", z_cp[0] ** 2, z_rd, "Cauchy-Schwarz z_cp0^2 <= z_rd")


def wing_values(obj: Any, *, where: str = "wing file") -> tuple[dict[str, float], AeroOptions | None]:
    """The checked numbers of a parsed wing file, by key (without
    ``version`` and ``options``), and its options (``None`` without an
    ``options`` block); :class:`ConfigError` naming the field.
    :func:`flapjax.aero.read_wing_file` makes the :class:`~flapjax.aero.Wing`."""
    _check_keys(obj, (*REQUIRED, "options"), REQUIRED, where)
    if isinstance(obj["version"], bool) or obj["version"] != VERSION:
        raise ConfigError(f"{where}: version: must be {VERSION}, got {obj['version']!r}")
    v = {k: check_number(f"{where}: {k}", obj[k]) for k in REQUIRED[1:]}
    for k in ("wing_length", "mean_chord", "air_density"):
        if v[k] <= 0:
            raise ConfigError(f"{where}: {k}: must be > 0, got {v[k]:g}")
    if v["shoulder_half_width"] < 0:
        raise ConfigError(f"{where}: shoulder_half_width: must be >= 0, got {v['shoulder_half_width']:g}")
    for k in (*R_KEYS, *Z_KEYS, "z_rd"):
        if v[k] <= 0:
            raise ConfigError(f"{where}: {k}: must be > 0 (a moment of a positive chord), got {v[k]:g}")
    check_integrals(np.array([v[k] for k in R_KEYS]), np.array([v[k] for k in Z_KEYS]), v["z_rd"], where=where)
    options = None
    if "options" in obj:
        _check_keys(obj["options"], OPTIONS, (), where, "options.")
        values = {k: check_number(f"{where}: options.{k}", x) for k, x in obj["options"].items()}
        try:
            options = AeroOptions(**values)
        except ConfigError as exc:  # its own range checks, with the file named
            raise ConfigError(f"{where}: options: {exc}") from None
    return v, options


def read_values(path: str | Path) -> tuple[dict[str, float], AeroOptions | None]:
    """:func:`wing_values` of the wing file at ``path`` (errors name the file)."""
    return wing_values(read_json(path), where=str(path))


def write_values(path: str | Path, values: Mapping[str, Any], options: AeroOptions | None = None) -> None:
    """Write a wing file of ``values`` (every key of :data:`REQUIRED` but
    ``version``; floats keep every digit, so reading gives back the same
    values) and of the scalar ``options`` (the coefficient model is not part
    of the file). The values are checked as a reader would."""
    out: dict[str, Any] = {"version": VERSION, **{k: float(values[k]) for k in REQUIRED[1:]}}
    if options is not None:
        out["options"] = {k: float(getattr(options, k)) for k in OPTIONS}
    wing_values(out, where=str(path))
    write_json(path, out, indent=2)
