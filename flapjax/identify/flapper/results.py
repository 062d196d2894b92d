"""What ``flapjax identify`` produced for the flapping-wing robot.

:class:`IdentificationResult` gathers the studies' :class:`StudyResult` records
under the seed's symbols (``k_f``, ``k_v``, ``k_roll``, ``k_pitch``,
``D_w``, the speed-to-moment coupling ``L_v``, ``M_u``, plus per-wing
physical parameters), round-trips through JSON, and
turns the identified values into the cycle-averaged model's parameters
(:meth:`IdentificationResult.to_cycle_averaged_params`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import equinox as eqx
import numpy as np
from jaxtyping import Array

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.fit_report import data_record
from flapjax.files import read_json, to_arrays, to_jsonable, write_json
from flapjax.identify.results import StudyResult, versions
from flapjax.validation import ConfigError

#: Seed symbol -> (CycleAveragedParams field, unit, seed section 10 default for the summary's "seed" column).
_SEED = {
    "k_f": ("lift_coefficient", "N/Hz^2", 0.14858349039827917 / 30.0**2),
    "k_v": ("horizontal_damping", "N s/m", 0.06),
    "k_roll": ("roll_gain", "N m/rad", 0.01055 / 20.0),
    "k_pitch": ("pitch_gain", "N m/rad", 0.01144 / 20.0),
    "D_w": ("rate_damping", "N m s/rad", [2e-4, 2e-4, 1e-4]),
    "L_v": ("roll_speed_coupling", "N m s/m", 0.0),
    "M_u": ("pitch_speed_coupling", "N m s/m", 0.0),
    "kappa": ("plate_reaction", "-", None),
    "D_s": ("stroke_plane_damping", "N m s/rad", None),
    "A_v": ("airspeed_rate_coupling", "N m s^2/m", None),
    "B": ("control_matrix", "N m/unit", None),
    "T": ("thrust_tilt", "rad/unit", None),
}
SEED_NAMES: dict[str, str] = {k: row[0] for k, row in _SEED.items()}
SEED_UNITS: dict[str, str] = {k: row[1] for k, row in _SEED.items()}
SEED_VALUES = {k: row[2] for k, row in _SEED.items() if row[2] is not None}

#: Units of the per-wing physical parameters, and of every value a simulated
#: identification reports (seed symbols and physical parameters).
PHYSICAL_UNITS: dict[str, str] = {"hinge_stiffness": "N m/rad", "hinge_damping": "N m s/rad", "lift_scale": "-",
                                  "moment_scale": "-"}
VALUE_UNITS: dict[str, str] = {**SEED_UNITS, **PHYSICAL_UNITS, "wing_inertia_scale": "-"}

#: ``source`` of a simulated identification's ``results.json``.
SOURCE = "per-wing simulation (flapjax.sim.flapper)"


class IdentificationResult(eqx.Module):
    """Everything ``flapjax identify`` produced.

    Attributes:
      identified: seed name -> value [SI] (``k_f``, ``k_roll``, ``k_pitch``,
        ``D_w`` (3,), ``k_v``, and physical parameters of the per-wing model).
      std: seed name -> one-standard-deviation uncertainty where estimated.
      studies: study name -> :class:`StudyResult`.
      validation: name -> metrics of the flights that compare the models.
      settings: the configuration that was run (static, JSON-like).
      versions: package versions (static).
    """

    identified: dict[str, Array]
    std: dict[str, Array]
    studies: dict[str, StudyResult]
    validation: dict[str, Any]
    settings: dict = eqx.field(static=True)
    versions: dict = eqx.field(static=True)

    @classmethod
    def from_studies(
        cls,
        studies: Mapping[str, StudyResult],
        *,
        validation: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> "IdentificationResult":
        identified, std = {}, {}
        for s in studies.values():
            identified.update(s.values)
            std.update(s.std)
        return cls(
            identified=identified,
            std=std,
            studies=dict(studies),
            validation=dict(validation or {}),
            settings=dict(settings or {}),
            versions=versions(),
        )

    def to_cycle_averaged_params(self, base: CycleAveragedParams | None = None) -> CycleAveragedParams:
        """The cycle-averaged model with the identified values; fields not
        identified keep ``base``'s (default: the seed's values)."""
        base = CycleAveragedParams() if base is None else base
        values = base.to_dict()
        for seed, field in SEED_NAMES.items():
            if seed in self.identified:
                values[field] = np.asarray(self.identified[seed]).tolist()
        return CycleAveragedParams.from_dict(values)

    def flat_values(self) -> tuple[dict[str, float], dict[str, float | None], dict[str, str]]:
        """Every identified value as a scalar (a vector such as ``D_w``
        becomes ``D_w_x``, ``D_w_y``, ``D_w_z``, the flight-log fit's names),
        its standard deviation (``None`` where none was estimated) and unit."""
        values, std, units = {}, {}, {}
        for name, value in self.identified.items():
            v = np.asarray(value, dtype=float)
            s = None if name not in self.std else np.asarray(self.std[name], dtype=float)
            names = ([name] if v.ndim == 0 else [f"{name}_{a}" for a in "xyz"[: v.size]] if v.ndim == 1
                     else [f"{name}_{a}{j}" for a in "xyz"[: v.shape[0]] for j in range(v.shape[1])])
            for i, flat in enumerate(names):
                values[flat] = float(v.reshape(-1)[i])
                std[flat] = None if s is None else float(s.reshape(-1)[i])
                units[flat] = VALUE_UNITS.get(name, "")
        return values, std, units

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record. It starts as the identifications from data
        do (``study``, ``source``, every value ``NAME`` with ``NAME_std``,
        ``units``; see :func:`flapjax.identify.fit_report.data_record`), then
        the nested ``identified`` / ``std`` (seed names, vectors kept) that
        :meth:`from_dict` reads back, the model, the studies' records and
        the validation flights."""
        values, std, units = self.flat_values()
        return to_jsonable(
            {
                **data_record("simulation", SOURCE, values, std, units),
                "identified": self.identified,
                "std": self.std,
                "cycle_averaged": self.to_cycle_averaged_params().to_dict(),
                "residuals": {name: s.metrics for name, s in self.studies.items()},
                "validation": self.validation,
                # None without a validation study; False when a flight failed its thresholds
                "validation_passed": self.validation.get("validation_passed") if self.validation else None,
                "settings": self.settings,
                "versions": self.versions,
                "studies": {name: s.to_dict() for name, s in self.studies.items()},
            }
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "IdentificationResult":
        if "identified" not in d:
            raise ConfigError("IdentificationResult: missing field 'identified'")
        studies = {name: StudyResult.from_dict(s) for name, s in (d.get("studies") or {}).items()}
        return cls(
            identified=to_arrays(dict(d["identified"])),
            std=to_arrays(dict(d.get("std") or {})),
            studies=studies,
            validation=to_arrays(dict(d.get("validation") or {})),
            settings=dict(d.get("settings") or {}),
            versions=dict(d.get("versions") or {}),
        )

    def save(self, path: str | Path) -> None:
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "IdentificationResult":
        return cls.from_dict(read_json(path))
