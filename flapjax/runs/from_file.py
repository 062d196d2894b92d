"""Identification from a measured data file (``flapjax identify --data
FILE``): the first of :data:`EXPERIMENTS` whose columns the file has is run
(docs/data_formats.md, "Which study reads a file"). An option the file's
experiment does not take is refused (``robot`` and ``quick`` are ignored
with a note); a file that matches none raises
:class:`~flapjax.data.tables.DataError` naming what the closest study
(:func:`closest_study`) or each study needs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from pathlib import Path
from typing import Callable, Mapping, Sequence

from flapjax import safe_io
from flapjax.data.tables import Column, DataError, DataNote, column_names, separator_hint, split_unit
from flapjax.identify.fit_report import FitReport
from flapjax.runs import waveform as waveform_run
from flapjax.data.flight_log import LOG_COLUMNS
from flapjax.runs.flight_log import run_flight_identification
from flapjax.runs.stand import run_stand_identification
from flapjax.data.stand_table import STAND_COLUMNS
from flapjax.identify.flapper.waveform import WAVEFORM_PARAMETERS
from flapjax.data.stand_record import WAVEFORM_COLUMNS
from flapjax.runs.hover import run_hover_identification
from flapjax.data.hover_log import hover_columns
from flapjax.validation import check_choice

__all__ = ["EXPERIMENTS", "Experiment", "closest_study", "identify_from_file", "pick_study"]


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One kind of measured-data file: how it is recognised, described and fitted.

    Attributes:
      what: the kind of file in messages ("stand table").
      columns: the columns its reader declares; needs: what else it needs.
      has: quantities (column names less the unit; ``"--robot"`` when a
        robot is given) a file of this kind holds, ``time`` only if listed.
      options: the options of :func:`identify_from_file` it takes: those
        not None go to ``run(path, *, out_dir, echo, **options)``, the study's driver.
      hints: option -> why this kind does without it, in its refusal.
    """

    what: str
    columns: tuple[Column, ...]
    needs: str
    has: frozenset[str]
    options: tuple[str, ...]
    run: Callable[..., FitReport]
    hints: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _run_waveform(path, *, fit: Sequence[str] | None = None, **options) -> FitReport:
    """The phase-resolved record's driver, ``fit`` checked by name and given as its ``parameters``."""
    for name in fit or ():
        check_choice("--fit", name, WAVEFORM_PARAMETERS)
    return waveform_run.run_waveform_identification(path, **options,
                                                    **({} if fit is None else {"parameters": tuple(fit)}))


#: Study -> its experiment; a file is the first whose ``has`` it meets.
EXPERIMENTS: dict[str, Experiment] = {
    "waveform": Experiment("phase-resolved stand record", WAVEFORM_COLUMNS, " (no time_s)",
                           frozenset({"frequency", "phase", "fz"}), ("fit",), _run_waveform,
                           {"physical": "whose study fits the physical parameters anyway"}),
    "stand": Experiment("stand table", STAND_COLUMNS, " (no time_s)", frozenset({"frequency", "fz"}), ("physical",),
                        run_stand_identification),
    "hover": Experiment("multirotor hover log", tuple(hover_columns(4)),
                        " (for 4 rotors) with --robot NAME|PROFILE.toml", frozenset({"time", "--robot"}),
                        ("robot", "quick", "progress"), run_hover_identification,
                        dict.fromkeys(("mass", "inertia"), "whose fit uses the robot profile's (--robot)")),
    "flight": Experiment("flapper flight log", LOG_COLUMNS, " (no --robot)", frozenset({"time", "frequency"}),
                         ("quick", "progress", "mass", "inertia", "command_delay"), run_flight_identification),
}

#: Options an experiment that does not take them ignores, with the note why ("" for none).
_IGNORED = {"robot": "flapping-wing robot", "quick": "its fit has no shorter form", "progress": ""}


def _describe(experiment: Experiment) -> str:
    """``required, ...{needs}; optional a, b`` from an experiment's columns."""
    required = ", ".join(c.name for c in experiment.columns if c.required)
    optional = ", ".join(c.name for c in experiment.columns if not c.required)
    return required + experiment.needs + (f"; optional {optional}" if optional else "")


def closest_study(names) -> tuple[str, list] | None:
    """The study a file's columns aim at, and the required columns
    (:class:`~flapjax.data.tables.Column`) of it the file lacks: the study
    whose declared columns the file holds most of (by quantity, whatever
    the unit suffix), less the required ones it lacks, when that count is
    above 0 and beats every other study's; None when no study stands out."""
    quantities = {split_unit(n)[0] for n in names}
    scores = []
    for study, experiment in EXPERIMENTS.items():
        held = sum(split_unit(c.name)[0] in quantities for c in experiment.columns)
        missing = [c for c in experiment.columns if c.required and split_unit(c.name)[0] not in quantities]
        scores.append((held - len(missing), study, missing))
    scores.sort(key=lambda s: s[0], reverse=True)
    (best, study, missing), runner_up = scores[0], scores[1][0]
    return (study, missing) if best > 0 and best > runner_up else None


def pick_study(names, robot: str | None, path: str | Path = "") -> str:
    """The key in :data:`EXPERIMENTS` of a file's study, from its column
    names (compared by quantity, whatever the unit suffix: the study's
    reader then converts the unit or refuses it) and whether a robot is given.

    Raises :class:`DataError` (naming the file and listing what each study
    needs) when none matches, saying so when a column name holds ';' or a
    tab (a table not separated by commas).
    """
    quantities = {split_unit(n)[0] for n in names}
    for study, experiment in EXPERIMENTS.items():
        timed = ("time" in experiment.has) == ("time" in quantities)
        if timed and experiment.has <= quantities | ({"--robot"} if robot else set()):
            return study
    separator = separator_hint(names)
    closest = closest_study(names)
    if closest is not None and closest[1] and closest[0] != "hover":
        experiment, missing = EXPERIMENTS[closest[0]], closest[1]
        named = (f"column {missing[0].name!r} ({missing[0].description})" if len(missing) == 1
                 else f"columns {[c.name for c in missing]}")
        raise DataError(f"{path}: missing required {named} of a {experiment.what}, the study its columns come "
                        f"closest to; the file has columns {list(names)}.{separator} A {experiment.what} needs "
                        f"{_describe(experiment)} (see docs/data_formats.md)")
    hint = " A log with time_s but no frequency_hz needs --robot (multirotor hover log)."
    needs = "".join(f"\n  - {e.what}: {_describe(e)}" for e in EXPERIMENTS.values())
    raise DataError(f"{path}: the columns {sorted(set(names))} match no identification study.{separator}"
                    f"{hint if 'time' in quantities else ''} "
                    f"Each study needs (see docs/data_formats.md):{needs}")


#: What an identification from a file printed, kept in its output folder.
SUMMARY_FILE = "summary.txt"


def identify_from_file(path: str | Path, *, robot: str | None = None, out_dir: str | Path = "out/identify",
                       quick: bool = False, progress: bool = True, echo: Callable[[str], None] = print,
                       physical: bool = False, mass: float | None = None, inertia=None,
                       command_delay: int | str | None = None, fit: Sequence[str] | None = None) -> FitReport:
    """Run the study the data file at ``path`` belongs to (module docstring)
    and return its :class:`~flapjax.identify.fit_report.FitReport` (its
    ``to_json()`` is what ``out_dir/results.json`` holds; what the run
    printed goes to ``out_dir/summary.txt`` too).

    Args:
      path: CSV or NPZ data file.
      robot: multirotor preset name or profile file (hover logs only).
      out_dir: output folder.
      quick: shorter fits (log studies).
      progress: progress bars (log studies).
      echo: where messages go.
      physical: stand tables only: also fit the per-wing physical
        parameters through the fixed-base rollout (slow).
      mass, inertia: flapper flight logs only: the mass [kg] and inertia
        [kg m^2] of the robot that flew (default the nominal robot's; see
        :func:`flapjax.sim.flapper.averaged_body.body`).
      command_delay: flapper flight logs only: samples by which the logged
        commands lag, or ``"auto"`` (default 0; see
        :func:`flapjax.runs.flight_log.run_flight_identification`).
      fit: phase-resolved stand records only: the per-wing values to fit
        (names of :data:`flapjax.identify.flapper.waveform.WAVEFORM_PARAMETERS`;
        default ``lift_scale``, ``hinge_stiffness``, ``wing_inertia_scale``).
    """
    summary = safe_io.check_output_file(safe_io.output_folder(out_dir) / SUMMARY_FILE)  # before any fit
    printed: list[str] = []

    def echo_and_keep(text: str) -> None:
        printed.append(text)
        echo(text)

    with _data_notes(echo_and_keep):
        results = _run_study(path, out_dir=out_dir, echo=echo_and_keep, robot=robot, quick=quick, progress=progress,
                             physical=physical, mass=mass, inertia=inertia, command_delay=command_delay, fit=fit)
    safe_io.write_text(summary, "\n".join(printed) + "\n")
    echo(f"summary (the lines above): {summary}")
    return results


@contextlib.contextmanager
def _data_notes(echo: Callable[[str], None]):
    """What a reader says about a file (columns a study does not read, units
    converted: :class:`~flapjax.data.tables.DataNote`) goes through
    ``echo`` as it is found (every time); other warnings go where they would."""
    with warnings.catch_warnings():
        show = warnings.showwarning

        def note(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, DataNote):
                echo(f"note: {message}")
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = note
        warnings.simplefilter("always", DataNote)
        yield


def _run_study(path, *, out_dir, echo, **options) -> FitReport:
    """Run the experiment of the file at ``path`` with the ``options`` it
    takes; refuse one it does not take (given: neither None nor False),
    naming the kinds of file it applies to, unless it is ignored with a note."""
    experiment = EXPERIMENTS[pick_study(column_names(path), options["robot"], path)]
    given = [n for n, v in options.items() if v is not None and v is not False and n not in experiment.options]
    for name in (n for n in given if n not in _IGNORED):
        owner = next(e.what for e in EXPERIMENTS.values() if name in e.options)
        hint = experiment.hints.get(name)
        raise DataError(f"{path}: --{name.replace('_', '-')} applies to {owner}s only (this file is a "
                        f"{experiment.what}{', ' + hint if hint else ''})")
    for name in (n for n in given if _IGNORED[n]):
        value = f" {options[name]}" if isinstance(options[name], str) else ""
        echo(f"note: --{name}{value} is ignored for a {experiment.what} ({_IGNORED[name]})")
    return experiment.run(path, out_dir=out_dir, echo=echo,
                          **{n: v for n, v in options.items() if n in experiment.options and v is not None})
