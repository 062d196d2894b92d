"""Study results as typed pytrees.

:class:`StudyResult` holds one study's identified values, uncertainties,
diagnostics and plotted data, saved and loaded through the atomic JSON
files of :mod:`flapjax.files`;
:func:`versions` records the package versions a result depends on. No robot
knowledge: the flapping-wing robot's aggregate result is
:class:`flapjax.identify.flapper.IdentificationResult`.
"""

from __future__ import annotations

import platform
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from flapjax.files import to_arrays, to_jsonable
from flapjax.validation import ConfigError

__all__ = ["StudyResult", "versions"]


class StudyResult(eqx.Module):
    """One study's outcome.

    Attributes:
      name: the study's name (static).
      values: seed name -> identified value [SI] (e.g. ``k_f``).
      std: seed name -> one-standard-deviation uncertainty [SI] (may be empty).
      metrics: name -> scalar or array diagnostics (R^2, residual RMS,
        closed-form values, ...).
      data: name -> the measurements and fitted curves (for plots).
      loss: (steps,) loss curve of the fit (empty when no fit ran).
      notes: free-text remarks (static): what was measured, caveats.
      converged: whether the fit met a tolerance (static).
      seconds: wall time [s] (static).
    """

    name: str = eqx.field(static=True)
    values: dict[str, Array]
    std: dict[str, Array]
    metrics: dict[str, Any]
    data: dict[str, Array]
    loss: Array
    notes: str = eqx.field(static=True, default="")
    converged: bool = eqx.field(static=True, default=True)
    seconds: float = eqx.field(static=True, default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(
            {
                "name": self.name,
                "values": self.values,
                "std": self.std,
                "metrics": self.metrics,
                "data": self.data,
                "loss": self.loss,
                "notes": self.notes,
                "converged": bool(self.converged),
                "seconds": float(self.seconds),
            }
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StudyResult":
        for key in ("name", "values"):
            if key not in d:
                raise ConfigError(f"StudyResult: missing field {key!r}")
        loss = d.get("loss") or []
        return cls(
            name=str(d["name"]),
            values=to_arrays(dict(d["values"])),
            std=to_arrays(dict(d.get("std") or {})),
            metrics=to_arrays(dict(d.get("metrics") or {})),
            data=to_arrays(dict(d.get("data") or {})),
            loss=jnp.asarray(np.asarray(loss, dtype=float)),
            notes=str(d.get("notes", "")),
            converged=bool(d.get("converged", True)),
            seconds=float(d.get("seconds", 0.0)),
        )


def versions() -> dict[str, str]:
    """Versions of the packages a result depends on."""
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("flapjax", "jax", "jaxlib", "mujoco", "mujoco-mjx", "equinox", "optax", "numpy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    out["jax_backend"] = jax.default_backend()
    out["float64"] = str(bool(jax.config.jax_enable_x64))
    return out
