"""Identification from a measured data file: the study is picked from the
file's columns (``flapjax identify --data FILE``).

- ``frequency_hz``, ``phase_rad`` and ``fz_n``, no ``time_s``: a
  phase-resolved stand record of the flapping-wing robot, fitted for its
  per-wing physical parameters
  (:func:`flapjax.identify.flapper.waveform_report.run_waveform_identification`);
- ``frequency_hz`` and ``fz_n``, no ``time_s``: a thrust-stand table of the
  flapping-wing robot (:func:`flapjax.identify.flapper.stand.run_stand_identification`);
- ``time_s`` and a ``robot`` (preset name or profile ``.toml``): a multirotor
  hover log (:func:`flapjax.identify.multirotor.run_hover_identification`);
- ``time_s`` and ``frequency_hz``, no ``robot``: a flight log of the
  flapping-wing robot (:func:`flapjax.identify.flapper.flight_log.run_flight_identification`).

A file that matches none of them raises :class:`~flapjax.identify.data.DataError`
naming the required columns it lacks of the study its columns come closest
to (:func:`closest_study`), or else listing the columns each study needs;
when a column name holds ';' or a tab, it says the file seems to be
separated by those and that flapjax reads comma-separated values.
The formats are described in
``docs/data_formats.md``.
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Callable, Sequence

from flapjax import safe_io
from flapjax.identify.data import DataError, DataNote, column_names, separator_hint, split_unit
from flapjax.identify.fit_report import FitReport
from flapjax.validation import check_choice

__all__ = ["closest_study", "identify_from_file", "pick_study"]


def _describe(columns, *, extra: str = "") -> str:
    """``required, ...{extra}; optional a, b`` from a study's column declarations."""
    required = ", ".join(c.name for c in columns if c.required)
    optional = ", ".join(c.name for c in columns if not c.required)
    return required + extra + (f"; optional {optional}" if optional else "")


def _studies() -> dict[str, tuple[str, tuple, str]]:
    """Study -> (what it reads, the columns its reader declares, what else it needs)."""
    from flapjax.identify.flapper.flight_format import LOG_COLUMNS
    from flapjax.identify.flapper.stand_format import STAND_COLUMNS
    from flapjax.identify.flapper.waveform_format import WAVEFORM_COLUMNS
    from flapjax.identify.multirotor.log import hover_columns

    return {
        "stand": ("stand table", STAND_COLUMNS, " (no time_s)"),
        "waveform": ("phase-resolved stand record", WAVEFORM_COLUMNS, " (no time_s)"),
        "hover": ("multirotor hover log", tuple(hover_columns(4)), " (for 4 rotors) with --robot NAME|PROFILE.toml"),
        "flight": ("flapper flight log", LOG_COLUMNS, " (no --robot)"),
    }


def _study_columns() -> dict[str, str]:
    """Study -> a description of the columns it needs (for error messages),
    from the columns each study's reader declares."""
    return {what: _describe(cols, extra=extra) for what, cols, extra in _studies().values()}


def closest_study(names) -> tuple[str, list] | None:
    """The study a file's columns aim at, and the required columns
    (:class:`~flapjax.identify.data.Column`) of it the file lacks: the study
    whose declared columns the file holds most of (by quantity, whatever
    the unit suffix), less the required ones it lacks, when that count is
    above 0 and beats every other study's; None when no study stands out."""
    quantities = {split_unit(n)[0] for n in names}
    scores = []
    for study, (_, cols, _) in _studies().items():
        held = sum(split_unit(c.name)[0] in quantities for c in cols)
        missing = [c for c in cols if c.required and split_unit(c.name)[0] not in quantities]
        scores.append((held - len(missing), study, missing))
    scores.sort(key=lambda s: s[0], reverse=True)
    (best, study, missing), runner_up = scores[0], scores[1][0]
    return (study, missing) if best > 0 and best > runner_up else None


def pick_study(names, robot: str | None, path: str | Path = "") -> str:
    """``"waveform"``, ``"stand"``, ``"hover"`` or ``"flight"`` from a file's column names
    (compared by quantity, whatever the unit suffix: the study's reader then
    converts the unit or refuses it).

    Raises :class:`DataError` (naming the file and listing what each study
    needs) when none matches, saying so when a column name holds ';' or a
    tab (a table not separated by commas).
    """
    cols = set(names)
    # by quantity, whatever the unit suffix: the study's loader then names a wrong unit
    quantities = {split_unit(n)[0] for n in cols}
    timed = "time" in quantities
    if not timed and {"frequency", "phase", "fz"} <= quantities:
        return "waveform"
    if not timed and {"frequency", "fz"} <= quantities:
        return "stand"
    if timed and robot:
        return "hover"
    if timed and "frequency" in quantities:
        return "flight"
    separator = separator_hint(names)
    closest = closest_study(cols)
    if closest is not None and closest[1] and closest[0] != "hover":
        what, declared, extra = _studies()[closest[0]]
        missing = closest[1]
        named = (f"column {missing[0].name!r} ({missing[0].description})" if len(missing) == 1
                 else f"columns {[c.name for c in missing]}")
        raise DataError(f"{path}: missing required {named} of a {what}, the study its columns come closest to; "
                        f"the file has columns {list(names)}.{separator} A {what} needs "
                        f"{_describe(declared, extra=extra)} (see docs/data_formats.md)")
    hint = ""
    if timed:
        hint = " A log with time_s but no frequency_hz needs --robot (multirotor hover log)."
    needs = "".join(f"\n  - {k}: {v}" for k, v in _study_columns().items())
    raise DataError(f"{path}: the columns {sorted(cols)} match no identification study.{separator}{hint} "
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
        :func:`flapjax.identify.flapper.flight_log.run_flight_identification`).
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
        results = _run_study(path, robot=robot, out_dir=out_dir, quick=quick, progress=progress,
                             echo=echo_and_keep, physical=physical, mass=mass, inertia=inertia,
                             command_delay=command_delay, fit=fit)
    safe_io.write_text(summary, "\n".join(printed) + "\n")
    echo(f"summary (the lines above): {summary}")
    return results


@contextlib.contextmanager
def _data_notes(echo: Callable[[str], None]):
    """What a reader says about a file (columns a study does not read, units
    converted: :class:`~flapjax.identify.data.DataNote`) goes through
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


def _run_study(path, *, robot, out_dir, quick, progress, echo, physical, mass, inertia, command_delay,
               fit) -> FitReport:
    study = pick_study(column_names(path), robot, path)
    what = {"hover": "multirotor hover log", "flight": "flapper flight log", "stand": "stand table",
            "waveform": "phase-resolved stand record"}[study]
    if physical and study != "stand":
        extra = ", whose study fits the physical parameters anyway" if study == "waveform" else ""
        raise DataError(f"{path}: --physical applies to stand tables of cycle means only (this file is a {what}{extra})")
    if (mass is not None or inertia is not None) and study != "flight":
        where = " (the robot profile's, --robot)" if study == "hover" else ""
        raise DataError(f"{path}: --mass and --inertia apply to flapper flight logs only (this file is a {what}, "
                        f"whose fit does not use them{where})")
    if command_delay is not None and study != "flight":
        raise DataError(f"{path}: --command-delay applies to flapper flight logs only (this file is a {what})")
    if fit is not None and study != "waveform":
        raise DataError(f"{path}: --fit applies to phase-resolved stand records only (this file is a {what})")
    if fit is not None:
        from flapjax.identify.flapper.waveform import WAVEFORM_PARAMETERS

        for name in fit:
            check_choice("--fit", name, WAVEFORM_PARAMETERS)
    if study == "waveform":
        from flapjax.identify.flapper.waveform_report import run_waveform_identification

        if robot:
            echo(f"note: --robot {robot} is ignored for a stand record (flapping-wing robot)")
        if quick:
            echo("note: --quick is ignored for a stand record (its fit has no shorter form)")
        return run_waveform_identification(path, out_dir=out_dir, echo=echo,
                                           **({} if fit is None else {"parameters": tuple(fit)}))
    if study == "stand":
        from flapjax.identify.flapper.stand import run_stand_identification

        if robot:
            echo(f"note: --robot {robot} is ignored for a stand table (flapping-wing robot)")
        if quick:
            echo("note: --quick is ignored for a stand table (its fit has no shorter form)")
        return run_stand_identification(path, out_dir=out_dir, echo=echo, physical=physical)
    if study == "hover":
        from flapjax.identify.multirotor import run_hover_identification

        return run_hover_identification(path, robot=robot, out_dir=out_dir, quick=quick, progress=progress, echo=echo)
    from flapjax.identify.flapper.flight_log import run_flight_identification

    return run_flight_identification(path, out_dir=out_dir, quick=quick, progress=progress, echo=echo, mass=mass,
                                     inertia=inertia, command_delay=0 if command_delay is None else command_delay)
