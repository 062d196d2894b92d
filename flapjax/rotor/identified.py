"""Identified coefficients -> :class:`flapjax.rotor.ChainParams`.

A hover identification's ``results.json`` (or any mapping with the same
keys) applies to a chain with :func:`chain_params_from_results`; a robot
profile file may point at one (or give values directly) in a ``[chain]``
table, read by :func:`load_chain_params`::

    # quad_lab.toml
    mass = 1.6
    ...
    [chain]
    results = "hover_results.json"    # relative to this file
    wall_lateral_coeff = 0.07         # a value given here wins over the file

Keys: ``ground_coeff``, ``wall_thrust_coeff``, ``wall_lateral_coeff``,
``wall_fade_start``, ``wall_range`` (rotor radii), ``drag_linear_{x,y,z}``
[N s/m], ``drag_quadratic_{x,y,z}`` [N s^2/m^2]. Values a results file
lists under ``not_identified`` keep the chain's defaults.
"""

from __future__ import annotations

import json
import math
import pathlib
import tomllib
from typing import Any, Mapping

import numpy as np

from flapjax import rotor
from flapjax.validation import ConfigError

AXES = ("x", "y", "z")
PROXIMITY_KEYS = ("ground_coeff", "wall_thrust_coeff", "wall_lateral_coeff", "wall_fade_start", "wall_range")
DRAG_KEYS = tuple(f"drag_{kind}_{a}" for kind in ("linear", "quadratic") for a in AXES)
CHAIN_KEYS = PROXIMITY_KEYS + DRAG_KEYS


def _number(source: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ConfigError(f"{source}: {key} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigError(f"{source}: {key} must be finite, got {value!r}")
    return v


def chain_params_from_results(results: Mapping[str, Any] | str | pathlib.Path,
                              base: rotor.ChainParams | None = None, *, source: str = "results") -> rotor.ChainParams:
    """``base`` (default :class:`~flapjax.rotor.ChainParams` ``()``) with the
    identified proximity and drag coefficients of ``results`` (a mapping or
    the path of a ``results.json``). Unknown keys are ignored (a results
    file holds more); keys listed under ``not_identified`` are skipped; bad
    values raise :class:`~flapjax.ConfigError` naming the key (and
    ``source``, for a mapping: where its values came from)."""
    if isinstance(results, (str, pathlib.Path)):
        path = pathlib.Path(results)
        source = str(path)
        try:
            results = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such results file") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the results file ({exc})") from None
    if not isinstance(results, Mapping):
        raise ConfigError(f"{source}: expected a mapping of coefficient names, got {type(results).__name__}")
    study = results.get("study", "hover")
    if study != "hover":
        raise ConfigError(f"{source}: results of a {study!r} study; chain coefficients come from a multirotor hover "
                          "log (flapjax identify --robot NAME --data HOVER.csv)")
    skip = set(results.get("not_identified") or {})
    if not any(k in results and k not in skip for k in CHAIN_KEYS):
        raise ConfigError(f"{source}: holds none of the chain coefficients {list(CHAIN_KEYS)}")
    base = rotor.ChainParams() if base is None else base
    prox = base.proximity
    vals = {k: float(getattr(prox, k)) for k in PROXIMITY_KEYS}
    lin, quad = np.asarray(base.drag.linear, dtype=float).copy(), np.asarray(base.drag.quadratic, dtype=float).copy()
    for k in CHAIN_KEYS:
        if k not in results or k in skip or results[k] is None:
            continue
        v = _number(source, k, results[k])
        if k in DRAG_KEYS and v < 0.0:  # named here: the chain's own check names only the vector
            raise ConfigError(f"{source}: {k}: must lie in [0, inf], got {v:g} (drag is never negative)")
        if k in PROXIMITY_KEYS:
            vals[k] = v
        else:
            kind, axis = k.split("_")[1], AXES.index(k[-1])
            (lin if kind == "linear" else quad)[axis] = v
    try:
        proximity = rotor.ProximityParams(**vals)
        drag = rotor.DragParams(linear=lin, quadratic=quad)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return rotor.ChainParams(proximity=proximity, drag=drag, wind=base.wind, allocation_weights=base.allocation_weights)


def chain_table(path: str | pathlib.Path) -> dict[str, Any] | None:
    """The ``[chain]`` table of a profile file (TOML or JSON), or None."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        cfg = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path.name}: cannot read the profile file ({exc})") from None
    table = cfg.get("chain") if isinstance(cfg, Mapping) else None
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise ConfigError(f"{path.name}.chain: expected a table, got {table!r}")
    return dict(table)


def chain_results_path(path: str | pathlib.Path, table: Mapping[str, Any] | None = None) -> pathlib.Path | None:
    """The ``results.json`` a profile file's ``[chain]`` table points at
    (``results``, relative to the profile file), or None when it points at
    none; ``table`` is the file's :func:`chain_table` when already read.
    Raises :class:`~flapjax.ConfigError` for a bad or missing reference."""
    path = pathlib.Path(path)
    table = chain_table(path) if table is None else table
    if table is None or "results" not in table:
        return None
    ref = table["results"]
    if not isinstance(ref, str) or not ref:
        raise ConfigError(f"{path.name}.chain.results: must be the path of a results.json, got {ref!r}")
    target = (path.parent / ref) if not pathlib.Path(ref).is_absolute() else pathlib.Path(ref)
    if not target.is_file():
        raise ConfigError(f"{path.name}.chain.results: no such results file {str(target)!r}")
    return target


def load_chain_params(path: str | pathlib.Path, base: rotor.ChainParams | None = None) -> rotor.ChainParams:
    """The chain coefficients of a profile file's ``[chain]`` table
    (``results = "file.json"`` relative to the profile, plus explicit
    values, which win); ``base`` (defaults) when the file has no table."""
    path = pathlib.Path(path)
    table = chain_table(path)
    base = rotor.ChainParams() if base is None else base
    if table is None:
        return base
    unknown = sorted(set(table) - set(CHAIN_KEYS) - {"results"})
    if unknown:
        raise ConfigError(f"{path.name}.chain: unknown keys {unknown}; allowed: {['results', *CHAIN_KEYS]}")
    params = base
    target = chain_results_path(path, table)
    if target is not None:
        params = chain_params_from_results(target, params)
    explicit = {k: v for k, v in table.items() if k != "results"}
    if explicit:
        params = chain_params_from_results(explicit, params, source=f"{path.name}.chain")
    return params
