"""The simulated studies of ``flapjax identify``, one entry each: what a
study needs from the others and how it is run (:mod:`flapjax.runs.flapper_studies` orders them by
STUDIES, resumes and writes them). A study's ``up`` (the run's ``_Upstream``)
holds ``cfg``, ``description`` (a described robot or None), ``nominal_avg``,
``get(name)`` (a study done by this run or saved in the same folder before),
``driven_robot`` and ``avg`` (the averaged model the ``model`` studies run on)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from flapjax.identify.flapper.channel_validation import study_channel_validation
from flapjax.identify.flapper.damping import damping_frequency, study_damping
from flapjax.identify.flapper.fidelity import study_fidelity
from flapjax.identify.flapper.lift import study_lift
from flapjax.identify.flapper.moments import study_moments
from flapjax.identify.flapper.physical import study_physical
from flapjax.identify.flapper.plate_motion import study_plate_motion
from flapjax.identify.flapper.robot_config import hover_frequency
from flapjax.identify.flapper.validation import study_validation


@dataclass(frozen=True)
class Study:
    """One simulated study.

    Attributes:
      depends_on: the studies whose results it reads, each earlier in STUDIES.
      run: ``(up, settings, bar) -> StudyResult``; ``settings`` as below.
      settings: ``up -> dict``: its settings that come from the other studies
        or sections, part of its saved config (a change recomputes it); None: none.
      model: it runs on the averaged model its ``depends_on`` identified
        (``up.avg``, saved in its settings as ``identified``).
    """

    depends_on: tuple[str, ...]
    run: Callable[[Any, dict, Any], Any]
    settings: Callable[[Any], dict] | None = None
    model: bool = False


def _frequency(up) -> dict[str, float]:
    """The damping runs' flapping frequency [Hz]: the configured one, else
    the hover frequency of the lift study's k_f (saved, or the nominal one)."""
    cfg, lift = up.cfg, up.get("lift")
    k_f = float(lift.values["k_f"]) if lift is not None else None
    if k_f is None and float(cfg["damping"]["frequency"]) == 0:
        k_f = float(up.nominal_avg.lift_coefficient)
    return {"frequency": damping_frequency(cfg, k_f) if up.description is None or float(
        cfg["damping"]["frequency"]) > 0 else hover_frequency(up.description, k_f)}


def _plate_motion(up, settings: dict, bar):
    damping = up.get("damping")  # its D_w uncertainty, when there is one
    rate_damping_std = None if damping is None else damping.std.get("D_w")
    return study_plate_motion(up.cfg, up.avg, bar=bar, rate_damping_std=rate_damping_std)


def _validation(up, settings: dict, bar):
    if up.description is not None:  # a described robot: flights through its channels
        return study_channel_validation(up.cfg, up.avg, up.description, bar=bar)
    return study_validation(up.cfg, up.avg, bar=bar)


_MODEL = ("lift", "moments", "damping", "physical")

#: Every simulated study by name, in the order of STUDIES.
STUDY_RUNS: dict[str, Study] = {
    "lift": Study((), lambda up, s, bar: study_lift(up.cfg, bar=bar, description=up.description)),
    "moments": Study((), lambda up, s, bar: study_moments(up.cfg, bar=bar, robot=up.driven_robot,
                                                          description=up.description),
                     # the moments run on the driven base, held at rest
                     settings=lambda up: {"armature": up.cfg["damping"]["armature"]}),
    "damping": Study(("lift",), lambda up, s, bar: study_damping(
        up.cfg, frequency=s["frequency"], bar=bar, robot=up.driven_robot, description=up.description),
        settings=_frequency),
    "physical": Study((), lambda up, s, bar: study_physical(up.cfg, bar=bar)),
    "plate_motion": Study(_MODEL, _plate_motion, model=True),
    "validation": Study(_MODEL + ("plate_motion",), _validation, model=True),
    "fidelity": Study(_MODEL + ("plate_motion",), lambda up, s, bar: study_fidelity(up.cfg, up.avg, bar=bar),
                      model=True),
}
