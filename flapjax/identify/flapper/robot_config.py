"""Identification settings for the robot of a description file
(``flapjax identify --robot robot.toml``, docs/flapper_robots.md): the seed
robot's settings mapped onto its frequency range (:func:`robot_defaults`),
overlaid by a user's ``--config`` in the robot's own units; the studies of
:data:`ROBOT_STUDIES` run, the seed robot's others are left out with the
reason in :data:`SEED_ONLY`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import math

import numpy as np

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper.config import default_config, _overlay_file, validate_config
from flapjax.sim.flapper.channels import SEED_KINDS
from flapjax.sim.flapper.description import FlapperDescription
from flapjax.sim.flapper.driven import robot_weight
from flapjax.sim.flapper.robot import AVERAGED_PATH
from flapjax.validation import ConfigError

#: The seed robot's ``stroke.frequency_range`` [Hz] (examples/flappers/seed_robot/robot.toml),
#: the range the default study frequencies are written for.
SEED_FREQUENCY_RANGE = (15.0, 45.0)
#: Studies that identify the averaged model of any described robot.
ROBOT_STUDIES = ("lift", "moments", "damping", "validation")
#: The seed robot's studies, and why a described robot leaves them out.
SEED_ONLY = {
    "physical": "calibrates the per-wing model against the seed robot's FlapSim table",
    "plate_motion": "fits the plate joints' inertial reaction and stroke-plane damping (the seed's plates)",
    "fidelity": "steps the seed robot's plate joints",
}
#: Sections whose frequencies and windows follow the robot.
_SECTIONS = ("lift", "moments", "damping")


def _frequency(f: float, lo: float, hi: float) -> float:
    """``f`` [Hz] mapped from the seed's range onto ``[lo, hi]``."""
    s_lo, s_hi = SEED_FREQUENCY_RANGE
    return lo + (float(f) - s_lo) / (s_hi - s_lo) * (hi - lo)


def robot_defaults(cfg: Mapping[str, Any], description: FlapperDescription) -> dict[str, Any]:
    """``cfg`` (the seed's settings) with the lift, moments and damping
    frequencies mapped onto the robot's range and their windows scaled to
    the same number of wingbeats; ``[run] studies`` kept to
    :data:`ROBOT_STUDIES`. A damping frequency of 0 (the hover frequency)
    stays 0."""
    lo, hi = description.frequency_range
    ratio = (0.5 * (lo + hi)) / (0.5 * sum(SEED_FREQUENCY_RANGE))
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in cfg.items()}
    for name in _SECTIONS:
        s = out[name]
        if "frequencies" in s:
            s["frequencies"] = [round(_frequency(f, lo, hi), 6) for f in s["frequencies"]]
        if float(s.get("frequency", 0.0)) > 0:
            s["frequency"] = round(_frequency(s["frequency"], lo, hi), 6)
        s["duration"] = round(float(s["duration"]) / ratio, 9)
        s["discard"] = round(float(s["discard"]) / ratio, 9)
    out["run"] = {**out["run"], "studies": [s for s in out["run"]["studies"] if s in ROBOT_STUDIES]}
    return out


def check_robot_studies(studies, description: FlapperDescription) -> None:
    """:class:`ConfigError` naming a study the described robot cannot run."""
    for name in studies:
        if name in SEED_ONLY:
            raise ConfigError(f"run.studies: {name!r} is the seed robot's ({SEED_ONLY[name]}); a robot of a "
                              f"description file ({description.source}) runs {list(ROBOT_STUDIES)}")


def load_robot_config(path: str | Path | None, description: FlapperDescription, *, quick: bool = False,
                      studies=None) -> dict[str, Any]:
    """The settings of an identification of ``description``'s robot:
    :func:`robot_defaults` of the (quick) defaults, overlaid with the TOML
    or JSON file ``path`` (the robot's units), ``studies`` (``--study``)
    when given; validated, and every study one of :data:`ROBOT_STUDIES`."""
    cfg = _overlay_file(robot_defaults(default_config(quick), description), path)
    if studies:
        cfg["run"]["studies"] = list(studies)
    check_robot_studies(cfg["run"]["studies"], description)
    return validate_config(cfg)


def reference_frequency(description: FlapperDescription) -> float:
    """f_ref of the robot's lambda_f [Hz]: the middle of its ``stroke.frequency_range``."""
    lo, hi = description.frequency_range
    return 0.5 * (lo + hi)


def robot_nominal(description: FlapperDescription) -> CycleAveragedParams:
    """The averaged model a described robot's identification starts from
    and keeps where a study did not run: its mass and gravity, f_ref the
    middle of its range, k_f hovering it there, a zero control matrix and
    thrust tilt (3, nc), (2, nc), and the seed's damping. A robot with the
    seed's two joint channels (a plate robot) keeps the seed's file, gains
    and f_ref (the moments study fits k_roll, k_pitch at 42 Hz for it)."""
    mass, g = robot_weight(description)
    if tuple(description.names.channel_kinds) == SEED_KINDS:  # a plate robot: the seed's gains and f_ref
        seed = CycleAveragedParams.from_json(AVERAGED_PATH).to_dict()
        return CycleAveragedParams.from_dict({**seed, "mass": mass, "gravity": g})
    f_ref = reference_frequency(description)
    nc = len(description.names.channel_kinds)
    return CycleAveragedParams(lift_coefficient=mass * g / f_ref**2, mass=mass, gravity=g, reference_frequency=f_ref,
                               control_matrix=np.zeros((3, nc)), thrust_tilt=np.zeros((2, nc)))


def hover_frequency(description: FlapperDescription, k_f: float) -> float:
    """sqrt(m g / k_f) [Hz] of the described robot, within its frequency range."""
    mass, g = robot_weight(description)
    lo, hi = description.frequency_range
    return min(max(math.sqrt(mass * g / k_f), lo), hi)
