"""Configuration of the flapping-wing identification studies.

:data:`DEFAULT_CONFIG` holds every setting, one section per study plus
``[run]``; :data:`QUICK_OVERRIDES` sizes the studies for a 2-core CPU in
minutes (``flapjax identify --quick``). :func:`load_config` overlays a TOML
or JSON file (the study configs in ``identification/``) and
:func:`validate_config` checks every value, outside any trace, with a
message that names the setting. :func:`optimizer_for`,
:func:`convergence_for` and :func:`fit_averaged` turn a section's settings
into a fit of the cycle-averaged model.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import optax

from flapjax.identify.fit import (GRAD_MODES, LINE_SEARCHES, OPTIMIZERS, Convergence, FitResult, combine, fit,
                                  make_optimizer, split)
from flapjax.identify.losses import Measurements, gauss_newton_uncertainty, least_squares, residuals
from flapjax.identify.flapper.results import PHYSICAL_UNITS
from flapjax.safe_io import read_settings
from flapjax.identify.flapper.calibration import check_calibration
from flapjax.identify.flapper.fidelity import check_fidelity_settings
from flapjax.identify.flapper.plate_motion import check_plate_motion_settings
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError, as_float_array, check_choice, check_int, check_positive, check_range

STUDIES = ("lift", "moments", "damping", "physical", "plate_motion", "validation", "fidelity")

#: The run window [s] and the fit of the lift, moments and damping studies.
_FIT = {"duration": 0.6, "discard": 0.3, "optimizer": "lbfgs", "learning_rate": 0.05, "max_steps": 300,
        "start_factor": 1.3}

DEFAULT_CONFIG: dict[str, Any] = {
    "run": {"studies": list(STUDIES), "float64": True, "batch_size": 8, "plots": True},
    "lift": {
        "frequencies": [20.0, 25.0, 30.0, 35.0, 40.0, 45.0],
        **_FIT,
    },
    "moments": {
        "frequencies": [30.0, 38.0, 45.0],
        "tilts": [-0.3, -0.2, -0.1, 0.1, 0.2, 0.3],
        **_FIT,
    },
    "damping": {
        "frequency": 0.0,
        "rates": [-2.0, -1.0, 1.0, 2.0],
        "speeds": [-1.0, -0.5, 0.5, 1.0],
        "axes": ["x", "y", "z"],
        "armature": 1000.0,
        **_FIT,
    },
    "physical": {
        "parameters": ["hinge_stiffness", "lift_scale"],
        "frequencies": [20.0, 30.0, 40.0],
        "targets": "seed",
        "duration": 0.6,
        "discard": 0.3,
        "start": {},
        "optimizer": "lbfgs",
        "line_search": "backtracking",
        "grad_mode": "forward",
        "learning_rate": 0.05,
        "max_steps": 25,
    },
    "validation": {
        "duration": 2.0,
        "height": 0.5,
        "plate_step": 0.05,
        "step_start": 1.0,
        "step_length": 0.1,
        "tail": 0.5,
        "window": 1.0,
        "max_attitude_rms_deg": 2.0,
        "max_position_rms": 0.01,
        "controller": "designed",
    },
    # Open-loop +/- pairs flown by the free per-wing robot and by the identified
    # averaged model (flapjax.identify.flapper.fidelity): plate steps of each
    # amplitude [rad] on each plate joint, a frequency step [Hz], a forward and
    # a lateral gust [m/s]; onset and horizon [s]; height [m].
    "fidelity": {
        "amplitudes": [0.02, 0.05],
        "frequency_step": 0.5,
        "gust": 0.5,
        "height": 0.5,
        "onset": 0.02,
        "horizon": 0.15,
        "timestep": 5e-5,
        "phases": 2,
        "backend": "rigid",
    },
    # Plate-motion fit (identify/flapper/plate_motion.py), SI: plate, gust (0: none), closed-loop (horizon 0: none) pulses
    "plate_motion": {
        "amplitude": 0.03,
        "pulse_wingbeats": 2.0,
        "gust": 0.3, "gust_wingbeats": 4.0,
        "closed_loop_onset": 0.1, "closed_loop_horizon": 0.0,
        "height": 0.5, "onset": 0.02, "horizon": 0.15,
        "timestep": 5e-5,
        "phases": 2,
        "backend": "rigid",
    },
    # The seed flapper's per-wing calibration (identify/flapper/calibration.py): a table of values, or the path
    # of a phase-resolved stand fit's results.json; {}: the nominal one
    "calibration": {},
}

QUICK_OVERRIDES: dict[str, Any] = {
    "lift": {"frequencies": [20.0, 30.0, 40.0, 45.0]},
    # the damping runs' window, so both studies share one compiled driven-base program
    "moments": {"frequencies": [30.0, 42.0], "tilts": [-0.3, -0.15, 0.15, 0.3], "duration": 0.4, "discard": 0.2},
    "damping": {"rates": [-2.0, -1.0, 1.0, 2.0], "speeds": [-1.0, 1.0], "duration": 0.4, "discard": 0.2},
    "physical": {"parameters": ["lift_scale"], "duration": 0.2, "discard": 0.1, "max_steps": 8},
    "validation": {"duration": 1.0, "step_start": 0.5, "tail": 0.3, "window": 0.5},
}

# Per-wing physical parameters the "physical" study can fit, with their units.
PHYSICAL_PARAMETERS = tuple(PHYSICAL_UNITS)


def _merge(base: dict, over: Mapping, where: str) -> dict:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if key not in base:
            raise ConfigError(f"{where}{key}: unknown setting; allowed: {sorted(base)}")
        if isinstance(base[key], dict) and key not in ("start", "calibration"):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}{key}: expected a table of settings, got {value!r}")
            out[key] = _merge(base[key], value, f"{where}{key}.")
        else:
            out[key] = copy.deepcopy(value)
    return out


def default_config(quick: bool = False) -> dict[str, Any]:
    """The full configuration (``quick``: sized for a 2-core CPU in minutes)."""
    cfg = copy.deepcopy(DEFAULT_CONFIG)
    return _merge(cfg, QUICK_OVERRIDES, "") if quick else cfg


def load_config(path: str | Path | None = None, *, quick: bool = False) -> dict[str, Any]:
    """Defaults overlaid with a TOML or JSON file, then validated.

    A study's file may hold only its own section (e.g. ``[lift]``).
    Raises :class:`ConfigError` for an unreadable file, an unknown key or a
    bad value (the message names the setting).
    """
    return _overlay_file(default_config(quick), path, validate_config)


def _overlay_file(cfg: dict[str, Any], path: str | Path | None, check: Callable = lambda c: c) -> dict[str, Any]:
    """``check`` of ``cfg`` overlaid with the TOML or JSON file ``path``
    (None: of ``cfg``); an error of the file or the overlay names the file."""
    if path is None:
        return check(cfg)
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config: no such file {str(path)!r}")
    try:  # a regular file within the input limit; JSON strictly (no repeated keys, NaN or Infinity)
        user = read_settings(path, what="config")
    except ConfigError as exc:
        raise ConfigError(f"config {exc}") from None
    try:
        return check(_merge(cfg, user, ""))
    except ConfigError as exc:
        raise ConfigError(f"config {path}: {exc}") from None


#: Most optimizer steps a fit may be given (more is a typo: it would run for days).
MAX_FIT_STEPS = 1_000_000
#: Start values of the physical parameters (SI; their nominals span 5e-6 to 1):
#: beyond these the log-space fit starts in a numerically singular place.
PHYSICAL_START_RANGE = (1e-9, 1e3)


def _check_list(name: str, value, *, positive=False, nonzero=False, lo=None, hi=None, min_len=1,
                distinct=False) -> None:
    arr = as_float_array(name, value, (None,))
    if arr.size < min_len:
        raise ConfigError(f"{name}: need at least {min_len} value(s), got {arr.size}")
    if distinct and np.unique(arr).size < arr.size:
        raise ConfigError(f"{name}: a value is given twice, got {arr.tolist()}")
    if positive:
        check_positive(name, arr)
    if nonzero and np.any(arr == 0):
        raise ConfigError(f"{name}: values must be non-zero, got {arr.tolist()}")
    if lo is not None or hi is not None:
        check_range(name, arr, lo, hi)


def _check_names(name: str, value, allowed, *, distinct: bool = False) -> None:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{name}: expected a non-empty list from {list(allowed)}, got {value!r}")
    for v in value:
        check_choice(name, v, allowed)
    if distinct and len(set(value)) < len(value):
        raise ConfigError(f"{name}: a study is given twice, got {value!r}")


def _check_fit(section: str, s: Mapping) -> None:
    """The run window and the fit settings of a fitted study's section."""
    check_range(f"{section}.duration", s["duration"], 0.01, 10.0)
    check_range(f"{section}.discard", s["discard"], 0.0, None)
    if not s["discard"] < s["duration"]:
        raise ConfigError(f"{section}.discard: must be shorter than duration ({s['duration']}), got {s['discard']}")
    check_choice(f"{section}.optimizer", s["optimizer"], OPTIMIZERS)
    check_positive(f"{section}.learning_rate", s["learning_rate"])
    check_int(f"{section}.max_steps", s["max_steps"], 1, MAX_FIT_STEPS)
    if "start_factor" in s:
        check_range(f"{section}.start_factor", s["start_factor"], 0.1, 10.0)


_FREQUENCIES = dict(positive=True, lo=1.0, hi=200.0, distinct=True)
#: Lists of numbers: setting -> options of :func:`_check_list`.
_LISTS = {
    "lift.frequencies": dict(_FREQUENCIES, min_len=2), "moments.frequencies": _FREQUENCIES,
    "moments.tilts": dict(lo=-0.6, hi=0.6, nonzero=True, min_len=2), "damping.rates": dict(nonzero=True, lo=-50.0, hi=50.0),
    "damping.speeds": dict(nonzero=True, lo=-10.0, hi=10.0, min_len=0), "physical.frequencies": _FREQUENCIES,
}
#: Numbers: setting -> (low, high); a name: that setting of the same section.
_RANGES = {
    "damping.frequency": (0.0, 200.0), "validation.duration": (0.05, 20.0), "validation.height": (0.0, 100.0),
    "validation.plate_step": (-0.3, 0.3), "validation.step_start": (0.0, "duration"),
    "validation.step_length": (0.0, "duration"), "validation.tail": (0.001, "duration"),
    "validation.window": (0.001, 20.0),  # the whole flight when longer
    "validation.max_attitude_rms_deg": (0.0, 90.0), "validation.max_position_rms": (0.0, 10.0),
}


def _check_tables(cfg: Mapping) -> None:
    """The settings of :data:`_LISTS` and :data:`_RANGES`, and the choices."""
    for name, options in _LISTS.items():
        section, key = name.split(".")
        _check_list(name, cfg[section][key], **options)
    for name, (lo, hi) in _RANGES.items():
        section, key = name.split(".")
        check_range(name, cfg[section][key], lo, cfg[section][hi] if isinstance(hi, str) else hi)
    _check_names("damping.axes", cfg["damping"]["axes"], ("x", "y", "z"))
    check_positive("damping.armature", cfg["damping"]["armature"])
    check_choice("validation.controller", cfg["validation"]["controller"], ("designed", "default"))
    check_choice("physical.line_search", cfg["physical"]["line_search"], LINE_SEARCHES)
    check_choice("physical.grad_mode", cfg["physical"]["grad_mode"], GRAD_MODES)


def _check_run(run: Mapping) -> None:
    """Check the [run] settings."""
    _check_names("run.studies", run["studies"], STUDIES, distinct=True)
    check_int("run.batch_size", run["batch_size"], 1, 1024)  # sweeps pad to whole chunks: 1e9 would allocate 1e9 worlds
    for key in ("float64", "plots"):
        if not isinstance(run[key], bool):
            raise ConfigError(f"run.{key}: must be true or false, got {run[key]!r}")


def _check_physical(s: Mapping) -> None:
    """Check the [physical] parameters, targets and start values."""
    _check_names("physical.parameters", s["parameters"], PHYSICAL_PARAMETERS)
    targets = s["targets"]
    if isinstance(targets, str):
        check_choice("physical.targets", targets, ("seed",))
        missing = [f for f in s["frequencies"] if float(f) not in fl.SEED_SWEEP]
        if missing:
            raise ConfigError(
                f"physical.frequencies: the seed table has {sorted(fl.SEED_SWEEP)} Hz only, got {missing}; "
                "give physical.targets as a list of F_z [N] or a table of true parameter values"
            )
    elif isinstance(targets, Mapping):
        for k, v in targets.items():
            check_choice("physical.targets", k, PHYSICAL_PARAMETERS)
            check_positive(f"physical.targets.{k}", v)
    else:
        _check_list("physical.targets", targets, positive=True)
        if len(targets) != len(s["frequencies"]):
            raise ConfigError(
                f"physical.targets: expected one F_z per frequency ({len(s['frequencies'])}), got {len(targets)}"
            )
    if not isinstance(s["start"], Mapping):
        raise ConfigError(f"physical.start: expected a table name -> value, got {s['start']!r}")
    for k, v in s["start"].items():
        check_choice("physical.start", k, PHYSICAL_PARAMETERS)
        check_range(f"physical.start.{k}", v, *PHYSICAL_START_RANGE)


def validate_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Check every setting; returns ``cfg`` unchanged or raises :class:`ConfigError`."""
    _check_run(cfg["run"])
    _check_tables(cfg)
    for section in ("lift", "moments", "damping", "physical"):
        _check_fit(section, cfg[section])
    _check_physical(cfg["physical"])
    s = cfg["validation"]
    if not float(s["step_start"]) + float(s["step_length"]) < float(s["duration"]):
        raise ConfigError(
            f"validation.step_start: the plate step ({s['step_start']} s + step_length {s['step_length']} s) must end "
            f"before the flight does (duration {s['duration']} s), got step_start {s['step_start']}")
    check_fidelity_settings(cfg["fidelity"])
    check_plate_motion_settings(cfg["plate_motion"])
    check_calibration(cfg.get("calibration", {}))
    return cfg


# ---------------------------------------------------------------------------
# From a section's settings to a fit
# ---------------------------------------------------------------------------


def optimizer_for(s: Mapping) -> optax.GradientTransformation:
    """The optimizer a study section asks for (``optimizer``, ``learning_rate``,
    cosine decay over ``max_steps``, ``line_search`` where given)."""
    return make_optimizer(
        s["optimizer"], learning_rate=s["learning_rate"], decay_steps=s["max_steps"], line_search=s.get("line_search", "zoom")
    )


def convergence_for(s: Mapping) -> Convergence:
    """Stopping rules of a study section: ``max_steps`` and tight tolerances."""
    return Convergence(max_steps=int(s["max_steps"]), grad_tol=1e-10, rtol=1e-13, patience=5)


def progress_callback(bar) -> Callable[[int, float], None] | None:
    """A :func:`flapjax.identify.fit.fit` progress hook that shows the step
    and loss on a tqdm ``bar`` (None: no hook)."""
    if bar is None:
        return None

    def cb(k, loss):
        bar.set_postfix(step=k, loss=f"{loss:.3e}", refresh=False)
        bar.update(0)

    return cb


def fit_averaged(
    predict: Callable,
    data: Measurements,
    start: Mapping[str, Any],
    trainable: list[str],
    s: Mapping,
    *,
    bar=None,
    signed=(),
) -> FitResult:
    """Fit the ``trainable`` entries of ``start`` (log space, except the
    ``signed`` ones) to ``data`` by least squares, with the optimizer and
    stopping rules of section ``s``."""
    t, n = split(start, trainable, signed=signed)
    return fit(
        least_squares(predict), t, n, data, optimizer=optimizer_for(s), convergence=convergence_for(s),
        progress=progress_callback(bar),
    )


def fit_uncertainty(predict: Callable, data: Measurements, res: FitResult, *, rows=None) -> dict[str, Any]:
    """Gauss-Newton standard deviations [SI] of a fit's trainable values
    (:func:`flapjax.identify.losses.gauss_newton_uncertainty`, residual
    variance from the fit); ``rows``: indices into the flattened residuals
    that are measurements (the rest, e.g. masked zeros, are left out)."""
    nominal = split(res.params, [])[1]
    keep = None if rows is None else np.asarray(rows)

    def residual_fn(t):
        r = residuals(predict, combine(t, nominal), data)
        return r if keep is None else r[keep]

    unc = gauss_newton_uncertainty(residual_fn, res.trainable)
    return {k: np.asarray(v) for k, v in unc.std.items()}
