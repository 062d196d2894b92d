"""Robot profile files: TOML or JSON tables to a :class:`RotorProfile` and back.

A profile file holds the body keys (``mass``, ``inertia``, ``hull_half_size``,
``arm_base``, ``ee_position``, ``ee_radius``, ``name``) and a ``rotors`` list of
tables (:func:`profile_from_dict`); :func:`resolve_profile` takes a preset
name, a file or a profile, as every ``robot`` option does.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any, Mapping

import numpy as np

from flapjax.rotor.profile import _AXIS_TOL, MAX_ROTORS, PRESETS, RotorProfile, preset
from flapjax.safe_io import check_input_file, read_settings, write_text
from flapjax.validation import ConfigError, as_float_array

_ROTOR_KEYS = ("position", "axis", "spin", "thrust_min", "thrust_max", "torque_coeff", "radius",
               "time_constant", "rate_limit")
_BODY_KEYS = ("mass", "inertia", "hull_half_size", "arm_base", "ee_position", "ee_radius", "name")


def profile_from_dict(cfg: Mapping[str, Any], *, source: str = "profile",
                      allow_infeasible: bool = False) -> RotorProfile:
    """Build a profile from a mapping: body keys plus a ``rotors`` list of tables.

    Each rotor table holds ``position``, ``axis``, ``spin``, ``thrust_min``,
    ``thrust_max``, ``torque_coeff``, ``radius``, ``time_constant`` and
    ``rate_limit``; a ``defaults`` table may give any of those for every rotor. A ``chain`` table (identified
    chain coefficients, :func:`flapjax.identify.multirotor.load_chain_params`) is allowed and not part of the
    profile. Errors name the field, e.g. ``rotors[2].axis``."""
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"{source}: expected a table, got {type(cfg).__name__}")
    unknown = set(cfg) - set(_BODY_KEYS) - {"rotors", "defaults", "chain"}
    if unknown:
        raise ConfigError(f"{source}: unknown keys {sorted(unknown)}; allowed {sorted(_BODY_KEYS + ('rotors', 'defaults', 'chain'))}")
    rotors = cfg.get("rotors")
    if not isinstance(rotors, list) or not rotors:
        raise ConfigError(f"{source}.rotors: expected a non-empty list of rotor tables, got {rotors!r}")
    if len(rotors) > MAX_ROTORS:
        raise ConfigError(f"{source}.rotors: at most {MAX_ROTORS} rotors, got {len(rotors)}")
    defaults = cfg.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise ConfigError(f"{source}.defaults: expected a table of rotor values, got {defaults!r}")
    bad = set(defaults) - set(_ROTOR_KEYS)
    if bad:
        raise ConfigError(f"{source}.defaults: unknown keys {sorted(bad)}; allowed {list(_ROTOR_KEYS)}")
    columns: dict[str, list[Any]] = {k: [] for k in _ROTOR_KEYS}
    for i, rotor in enumerate(rotors):
        if not isinstance(rotor, Mapping):
            raise ConfigError(f"{source}.rotors[{i}]: expected a table, got {rotor!r}")
        bad = set(rotor) - set(_ROTOR_KEYS)
        if bad:
            raise ConfigError(f"{source}.rotors[{i}]: unknown keys {sorted(bad)}; allowed {list(_ROTOR_KEYS)}")
        merged = {**defaults, **rotor}
        for key in _ROTOR_KEYS:
            if key not in merged:
                raise ConfigError(f"{source}.rotors[{i}].{key}: missing (give it per rotor or in defaults)")
            shape = (3,) if key in ("position", "axis") else ()
            value = as_float_array(f"{source}.rotors[{i}].{key}", merged[key], shape)
            if key == "axis" and abs(np.linalg.norm(value) - 1.0) > _AXIS_TOL:
                raise ConfigError(f"{source}.rotors[{i}].axis: must be a unit vector, got {value.tolist()} with norm {np.linalg.norm(value):.6g}")
            if key == "spin" and abs(abs(float(value)) - 1.0) > 0:
                raise ConfigError(f"{source}.rotors[{i}].spin: must be +1 or -1, got {float(value):g}")
            if key in ("radius", "time_constant", "rate_limit") and float(value) <= 0:
                raise ConfigError(f"{source}.rotors[{i}].{key}: must be > 0, got {float(value):g}")
            if key in ("thrust_min", "torque_coeff") and float(value) < 0:
                raise ConfigError(f"{source}.rotors[{i}].{key}: must be >= 0, got {float(value):g}")
            columns[key].append(value)
        if float(columns["thrust_max"][-1]) <= float(columns["thrust_min"][-1]):
            raise ConfigError(
                f"{source}.rotors[{i}].thrust_max: must be > thrust_min = {float(columns['thrust_min'][-1]):g} N "
                f"(limits in order), got {float(columns['thrust_max'][-1]):g} N"
            )
    for key in ("mass", "inertia"):
        if key not in cfg:
            raise ConfigError(f"{source}.{key}: missing")
    body = {k: cfg[k] for k in _BODY_KEYS if k in cfg and k != "name"}
    try:
        return RotorProfile(
            positions=np.stack(columns["position"]), axes=np.stack(columns["axis"]),
            spins=np.array(columns["spin"]), thrust_min=np.array(columns["thrust_min"]),
            thrust_max=np.array(columns["thrust_max"]), torque_coeff=np.array(columns["torque_coeff"]),
            radius=np.array(columns["radius"]), time_constant=np.array(columns["time_constant"]),
            rate_limit=np.array(columns["rate_limit"]), name=str(cfg.get("name", source)),
            allow_infeasible=allow_infeasible, **body,
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}.{exc}") from None


def profile_to_dict(prof: RotorProfile) -> dict[str, Any]:
    """The inverse of :func:`profile_from_dict` (plain Python floats and lists)."""
    rotors = []
    for i in range(prof.n_rotors):
        rotors.append(dict(
            position=np.asarray(prof.positions[i]).tolist(), axis=np.asarray(prof.axes[i]).tolist(),
            spin=float(prof.spins[i]), thrust_min=float(prof.thrust_min[i]), thrust_max=float(prof.thrust_max[i]),
            torque_coeff=float(prof.torque_coeff[i]), radius=float(prof.radius[i]),
            time_constant=float(prof.time_constant[i]), rate_limit=float(prof.rate_limit[i]),
        ))
    return dict(
        name=prof.name, mass=float(prof.mass), inertia=np.asarray(prof.inertia).tolist(),
        hull_half_size=np.asarray(prof.hull_half_size).tolist(), arm_base=np.asarray(prof.arm_base).tolist(),
        ee_position=np.asarray(prof.ee_position).tolist(), ee_radius=float(prof.ee_radius), rotors=rotors,
    )


#: File suffixes that name a profile file rather than a preset.
PROFILE_SUFFIXES = (".toml", ".json")


def load_profile(path: str | pathlib.Path, *, allow_infeasible: bool = False) -> RotorProfile:
    """Load and validate a profile from a ``.toml`` or ``.json`` file (``allow_infeasible``: :class:`RotorProfile`)."""
    path = pathlib.Path(path)
    suffix = path.suffix.lower()
    if suffix not in PROFILE_SUFFIXES:
        raise ConfigError(f"path: profile files must end in .toml or .json, got {str(path)!r}")
    cfg = {"name": path.stem, **read_settings(path, what="profile")}  # a regular file within the input limit
    return profile_from_dict(cfg, source=path.name, allow_infeasible=allow_infeasible)


def resolve_profile(robot: "str | pathlib.Path | RotorProfile", *, field: str = "robot") -> RotorProfile:
    """A profile from a preset name (``quad_x``, ``hexa``, ``hexa_tilted``), a profile file (``.toml`` /
    ``.json``, :func:`load_profile`) or a profile (returned as is); errors name ``field``."""
    if isinstance(robot, RotorProfile):
        return robot
    if not isinstance(robot, (str, pathlib.Path)):
        raise ConfigError(f"{field}: must be a preset name {sorted(PRESETS)}, a profile file (.toml or .json) "
                          f"or a RotorProfile, got {type(robot).__name__}")
    if str(robot).lower().endswith(PROFILE_SUFFIXES):
        path = pathlib.Path(robot)
        if not path.exists():
            raise ConfigError(f"{field}: profile file {str(robot)!r} does not exist")
        try:
            check_input_file(path, what="profile file")  # a folder, FIFO or device is named as such
        except ConfigError as exc:
            raise ConfigError(f"{field}: {exc}") from None
        return load_profile(path)
    if str(robot) not in PRESETS:
        raise ConfigError(f"{field}: must be one of {sorted(PRESETS)} or a profile file (.toml or .json), "
                          f"got {str(robot)!r}")
    return preset(str(robot))


def save_profile_json(prof: RotorProfile, path: str | pathlib.Path) -> None:
    """Write ``prof`` as JSON readable by :func:`load_profile`."""
    write_text(path, json.dumps(profile_to_dict(prof), indent=2))
