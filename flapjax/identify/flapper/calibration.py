"""The ``[calibration]`` of the seed flapper's per-wing model in a study config.

The per-wing robot's calibration (feathering hinge stiffness and damping in
``flapper.xml``; stops and ``lift_scale`` in ``flapper_params.json``) is
chosen among many that reproduce the seed's table 11.2 equally well
(docs/physics.md, "What the table alone determines"). A study config may
replace it, either as a table of values::

    [calibration]
    hinge_stiffness = 3.2e-4   # N m/rad
    lift_scale = 0.75          # -

or as the ``results.json`` of ``flapjax identify --data RECORD.csv`` for a
phase-resolved stand record (its fitted per-wing values; the sensor offsets
are not the robot's and are left out)::

    calibration = "out/waveform/results.json"

A relative path is read from the current folder. Every simulated study of
the seed flapper (lift, moments, damping, physical, plate_motion,
validation, fidelity) flies its per-wing robot through
:func:`flapjax.sim.flapper.stand.calibrate` with these values;
``results.json`` of the run records the values used
(:func:`calibration_record`). Without a calibration nothing changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from flapjax.safe_io import read_settings
from flapjax.validation import ConfigError, as_float_array, check_range

#: The calibration's values, their units and their allowed range [lo, hi]
#: (SI; the nominal ones lie well inside: hinge 2.9e-4 N m/rad and
#: 4.8e-6 N m s/rad, stops at 0.87 rad, 0.38 N m/rad, 0.0088 rad wide,
#: lift_scale 0.72). ``moment_scale`` and ``wing_inertia_scale`` are values
#: a phase-resolved stand fit may report.
CALIBRATION_UNITS: dict[str, str] = {
    "hinge_stiffness": "N m/rad", "hinge_damping": "N m s/rad", "stop_angle": "rad",
    "stop_stiffness": "N m/rad", "stop_width": "rad", "lift_scale": "-", "moment_scale": "-",
    "wing_inertia_scale": "-",
}
CALIBRATION_RANGES: dict[str, tuple[float, float]] = {
    "hinge_stiffness": (0.0, 0.1), "hinge_damping": (0.0, 0.01), "stop_angle": (0.05, 1.5),
    "stop_stiffness": (0.0, 100.0), "stop_width": (1e-4, 0.5), "lift_scale": (0.05, 5.0),
    "moment_scale": (0.05, 5.0), "wing_inertia_scale": (0.05, 20.0),
}
#: The ``study`` of a ``results.json`` a calibration may be read from.
RECORD_STUDY = "stand_waveform"


def _check_values(values: Mapping[str, Any], where: str) -> dict[str, float]:
    """``values`` as floats, each checked by name against :data:`CALIBRATION_RANGES`."""
    out = {}
    for name, value in values.items():
        if name not in CALIBRATION_RANGES:
            raise ConfigError(f"{where}{name}: unknown calibration value; allowed: {sorted(CALIBRATION_RANGES)}")
        arr = as_float_array(f"{where}{name}", value, ())  # a finite number, not a bool or a string
        check_range(f"{where}{name}", arr, *CALIBRATION_RANGES[name])
        out[name] = float(arr)
    return out


def read_calibration_record(path: str | Path) -> dict[str, float]:
    """The per-wing values of a phase-resolved stand fit's ``results.json``
    (written by ``flapjax identify --data RECORD.csv``): every key of
    :data:`CALIBRATION_UNITS` it holds, checked. :class:`ConfigError` naming
    ``calibration`` for a missing or unreadable file, another study's
    results, or a value out of range."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"calibration: no such file {str(path)!r} (the results.json of "
                          "flapjax identify --data <phase-resolved stand record>)")
    record = read_settings(path, what="calibration")
    if record.get("study") != RECORD_STUDY:
        raise ConfigError(f"calibration: {path} holds the results of study {record.get('study')!r}; expected the "
                          f"results.json of a phase-resolved stand fit (study {RECORD_STUDY!r})")
    values = {k: record[k] for k in CALIBRATION_UNITS if k in record}
    if not values:
        raise ConfigError(f"calibration: {path} holds none of {list(CALIBRATION_UNITS)}")
    return _check_values(values, f"calibration ({path}): ")


#: Keys of a study config (or of a part of one handed to a study): a
#: mapping holding one is a config, never a calibration table.
CONFIG_KEYS = ("run", "lift", "moments", "damping", "physical", "plate_motion", "validation", "fidelity",
               "calibration")


def _entry_values(calibration: Any) -> dict[str, float]:
    """The values of a config's ``calibration`` entry (see :func:`calibration_values`)."""
    if isinstance(calibration, (str, Path)):
        return read_calibration_record(calibration)
    if not isinstance(calibration, Mapping):
        raise ConfigError(f"calibration: expected a table of values or the path of a results.json, got {calibration!r}")
    return _check_values(calibration, "calibration.")


def calibration_values(calibration: Any) -> dict[str, float]:
    """The calibration's values [SI] from a study config (or the part of
    one a study is handed: any mapping with a key of :data:`CONFIG_KEYS`;
    no ``calibration`` key: none) or from its ``calibration`` entry (a
    table of values, the path of a stand fit's ``results.json``, or ``{}``:
    none). Raises :class:`ConfigError` naming the field for a bad value or
    an unknown key."""
    if isinstance(calibration, Mapping) and any(k in CONFIG_KEYS for k in calibration):
        calibration = calibration.get("calibration", {})
    return _entry_values(calibration)


def check_calibration(calibration: Any) -> None:
    """Check a config's ``calibration`` entry (see :func:`calibration_values`;
    an entry holding a config key such as ``lift`` is refused by name)."""
    _entry_values(calibration)


def calibration_record(cfg: Mapping) -> dict[str, Any]:
    """What ``results.json`` records of a config's calibration: ``source``
    (``"nominal"``, ``"config"`` or the record's path) and ``values`` in the
    units of :data:`CALIBRATION_UNITS` (empty: the nominal per-wing model)."""
    calibration = cfg.get("calibration", {})
    source = str(calibration) if isinstance(calibration, (str, Path)) else ("config" if calibration else "nominal")
    return {"source": source, "values": _entry_values(calibration)}


def check_calibration_robot(cfg: Mapping, description) -> None:
    """Refuse a calibration for a described robot (``description`` not None):
    its hinge, stops and wing options are its description file's."""
    if description is not None and calibration_values(cfg):
        raise ConfigError("calibration: applies to the seed flapper only; a described robot's hinge, stops and "
                          "lift_scale are set in its description file (docs/flapper_robots.md)")
