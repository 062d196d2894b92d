"""Input validation shared by every public constructor and loader.

All checks run eagerly, outside ``jit``, on concrete values. Each failure raises
:class:`ConfigError` (a ``ValueError``) whose message names the field, the value
that was given and what is allowed, so a bad configuration fails loudly before
any world is simulated. Inside ``jit`` values are traced and these helpers
return without checking (a tracer has no value to check).
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

import jax
import numpy as np


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the field."""


def is_traced(value: Any) -> bool:
    """True when ``value`` is a JAX tracer (inside ``jit``/``grad``/``vmap``),
    whose value cannot be checked."""
    return isinstance(value, jax.core.Tracer)


def _fmt(value: Any) -> str:
    arr = np.asarray(value)
    if arr.size > 8:
        return f"array of shape {arr.shape}"
    return np.array2string(arr, precision=6) if arr.ndim else repr(arr.item())


def as_float_array(name: str, value: Any, shape: Sequence[int | None] | None = None) -> np.ndarray:
    """Return ``value`` as a finite float64 NumPy array of the given shape.

    ``shape`` may contain ``None`` for a free dimension. Raises :class:`ConfigError`
    naming ``name`` on a non-numeric dtype, a wrong shape, or NaN/inf entries.
    """
    if _holds_bool(value):
        raise ConfigError(f"{name}: expected numbers, got a boolean ({value!r}); true/false is not a number")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise ConfigError(f"{name}: cannot be read as a number array ({exc})") from exc
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise ConfigError(f"{name}: expected numbers, got dtype {arr.dtype} ({value!r})")
    if np.iscomplexobj(arr):
        raise ConfigError(f"{name}: expected real numbers, got complex dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == d for s, d in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise ConfigError(f"{name}: expected shape {want}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ConfigError(f"{name}: must be finite, got {_fmt(arr)}")
    return arr


def _holds_bool(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is a boolean, a boolean array, or a (nested) list or
    tuple holding one (NumPy would read ``[1.0, True]`` as ``[1.0, 1.0]``)."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == bool
    if isinstance(value, (list, tuple)) and depth < 8:
        return any(_holds_bool(v, depth + 1) for v in value)
    return False


def check_number(name: str, value: Any, lo: float | None = None, hi: float | None = None, *,
                 allow_nonfinite: bool = False) -> float:
    """``value`` as a Python float, refusing booleans (``true`` is not 1),
    strings (``"2_0"`` is not 20), None, NaN and inf (unless
    ``allow_nonfinite``) and anything outside ``[lo, hi]``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        dtype = getattr(value, "dtype", None)  # a 0-d NumPy or JAX array of numbers is a number
        if not (dtype is not None and np.ndim(value) == 0 and np.issubdtype(dtype, np.number)):
            raise ConfigError(f"{name}: must be a number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not math.isfinite(v):
        if not allow_nonfinite or math.isnan(v):
            raise ConfigError(f"{name}: must be a finite number, got {v}")
        return v
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        raise ConfigError(f"{name}: must lie in [{lo_s}, {hi_s}], got {v:g}")
    return v


def check_prng_key(name: str, key: Any, *, allow_none: bool = False) -> None:
    """Raise unless ``key`` is a JAX PRNG key: a typed key array
    (``jax.random.key``) or a raw ``uint32`` key (``jax.random.PRNGKey``),
    or None with ``allow_none``; no-op on tracers."""
    if is_traced(key) or (allow_none and key is None):
        return
    dtype = getattr(key, "dtype", None)
    if dtype is not None and (jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)
                              or (dtype == np.uint32 and np.shape(key)[-1:] == (2,))):
        return
    raise ConfigError(f"{name}: must be a JAX random key (jax.random.key(seed)), got {type(key).__name__} {key!r}")


def check_bool(name: str, value: Any) -> bool:
    """``value`` when it is a boolean; :class:`ConfigError` for anything
    else (``"no"`` and ``0`` are not booleans)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name}: must be true or false, got {type(value).__name__} {value!r}")
    return bool(value)


def _no_duplicates(where: str):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ConfigError(f"{where}: key {key!r} is given twice")
            out[key] = value
        return out

    return hook


def _no_constant(where: str, allow_infinity: bool):
    def hook(text: str) -> Any:
        if allow_infinity and text == "Infinity":
            return math.inf
        raise ConfigError(f"{where}: {text} is not a JSON number (write a finite number)")

    return hook


def loads_json(text: str, *, where: str, allow_infinity: bool = False) -> Any:
    """Parse JSON strictly: an object repeating a key and the non-standard
    ``NaN`` / ``Infinity`` are refused (``allow_infinity``: ``Infinity`` is
    read as +inf, for a value whose documentation gives it a meaning);
    :class:`ConfigError` naming ``where``."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates(where),
                          parse_constant=_no_constant(where, allow_infinity))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: cannot parse: not valid JSON ({exc})") from None


def check_finite(name: str, value: Any) -> None:
    """Raise if a concrete ``value`` holds NaN or inf; no-op on tracers."""
    if is_traced(value):
        return
    as_float_array(name, value)


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> None:
    """Raise unless every entry of ``value`` is > 0 (or >= 0 with ``allow_zero``)."""
    if is_traced(value):
        return
    arr = as_float_array(name, value)
    bad = arr < 0 if allow_zero else arr <= 0
    if np.any(bad):
        rng = ">= 0" if allow_zero else "> 0"
        raise ConfigError(f"{name}: must be {rng}, got {_fmt(arr)}")


def check_range(name: str, value: Any, lo: float | None = None, hi: float | None = None) -> None:
    """Raise unless ``lo <= value <= hi`` entrywise (either bound may be None)."""
    if is_traced(value):
        return
    arr = as_float_array(name, value)
    if (lo is not None and np.any(arr < lo)) or (hi is not None and np.any(arr > hi)):
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        raise ConfigError(f"{name}: must lie in [{lo_s}, {hi_s}], got {_fmt(arr)}")


def check_shape(name: str, value: Any, shape: Sequence[int | None]) -> None:
    """Raise unless ``value`` has the given shape (``None`` = any length)."""
    arr_shape = np.shape(value)
    ok = len(arr_shape) == len(shape) and all(s is None or s == d for s, d in zip(shape, arr_shape))
    if not ok:
        want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ConfigError(f"{name}: expected shape {want}, got shape {tuple(arr_shape)}")


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ConfigError(f"{name}: must be one of {list(choices)}, got {value!r}")


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """Return ``value`` as an int, refusing booleans, floats and anything
    outside ``[lo, hi]`` (either bound may be None)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        allowed = (f"an integer in [{lo}, {hi}]" if lo is not None and hi is not None else
                   "an integer" + (f" >= {lo}" if lo is not None else "") + (f" <= {hi}" if hi is not None else ""))
        raise ConfigError(f"{name}: must be {allowed}, got {value!r}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        lo_s = "-inf" if lo is None else str(lo)
        hi_s = "inf" if hi is None else str(hi)
        raise ConfigError(f"{name}: must be an integer in [{lo_s}, {hi_s}], got {v}")
    return v


def inertia_matrix(name: str, value: Any) -> np.ndarray:
    """A rigid body's (3, 3) inertia [kg m^2] from three principal moments,
    six values (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or a (3, 3) matrix. Raises
    :class:`ConfigError` naming ``name`` unless it is finite, symmetric and
    positive definite with principal moments that satisfy the triangle
    inequality (a physical body)."""
    arr = as_float_array(name, value)
    if arr.size == 3:
        arr = np.diag(arr.ravel())
    elif arr.size == 6:
        xx, yy, zz, xy, xz, yz = arr.ravel()
        arr = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    elif arr.shape != (3, 3):
        raise ConfigError(f"{name}: expected 3 principal moments, 6 values (Ixx, Iyy, Izz, Ixy, Ixz, Iyz) or a "
                          f"(3, 3) matrix [kg m^2], got shape {arr.shape}")
    if not np.allclose(arr, arr.T, rtol=1e-9, atol=0.0):
        raise ConfigError(f"{name}: must be symmetric, got {arr.tolist()}")
    moments = np.linalg.eigvalsh(arr)
    if moments[0] <= 0:
        raise ConfigError(f"{name}: must be positive definite, principal moments {moments.tolist()} kg m^2")
    if moments[2] > (moments[0] + moments[1]) * (1 + 1e-9):
        raise ConfigError(f"{name}: principal moments must satisfy the triangle inequality, got {moments.tolist()}")
    return arr
