"""Study results as typed pytrees, and their JSON form.

:class:`StudyResult` holds one study's identified values, uncertainties,
diagnostics and plotted data; :func:`to_jsonable` / :func:`to_arrays` map
such pytrees to JSON and back; :func:`write_json` writes atomically (an
interrupted run never leaves half a file); :func:`versions` records the
package versions a result depends on. No robot knowledge: the flapping-wing
robot's aggregate result is :class:`flapjax.identify.flapper.IdentificationResult`.
"""

from __future__ import annotations

import json
import math
import platform
from pathlib import Path
from typing import Any, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array

from flapjax.validation import ConfigError


def to_jsonable(x: Any) -> Any:
    """A pytree of arrays, numbers, strings and dicts as plain JSON values
    (arrays as nested lists, non-finite numbers as null)."""
    if isinstance(x, Mapping):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, (bool, str, type(None))):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    arr = np.asarray(x)
    if arr.dtype == bool:
        return arr.tolist()
    if np.issubdtype(arr.dtype, np.number):
        arr = arr.astype(float)
        if arr.ndim == 0:
            v = float(arr)
            return v if math.isfinite(v) else None
        return [to_jsonable(v) for v in arr]
    return str(x)


def to_arrays(x: Any) -> Any:
    """JSON numbers and number lists back to arrays; strings and dicts as they are."""
    if isinstance(x, Mapping):
        return {k: to_arrays(v) for k, v in x.items()}
    if isinstance(x, bool) or isinstance(x, str) or x is None:
        return x
    if isinstance(x, (int, float)):
        return jnp.asarray(float(x))
    if isinstance(x, list):
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            return [to_arrays(v) for v in x]
        return jnp.asarray(arr)
    return x


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

    def save(self, path: str | Path) -> None:
        write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "StudyResult":
        return cls.from_dict(read_json(path))


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as JSON through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1)
    tmp.replace(path)  # atomic: an interrupted run never leaves half a file


def read_json(path: str | Path) -> Any:
    """Parsed JSON; :class:`ConfigError` when the file is not valid JSON."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc})") from exc


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
