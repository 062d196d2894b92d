"""Runs that write a folder: the drivers of ``flapjax identify`` (docs/cli.md).

:mod:`flapjax.identify` computes and returns typed results; this unit runs
it and writes what a run leaves behind: ``results.json``
(:mod:`.outputs`), the printed summary and the PNG plots. It is the only
unit besides the entry points that draws.

- :func:`run_identification` (:mod:`.flapper_studies`): the simulated
  studies of a flapping-wing robot in order, each saved as it completes
  and resumed when its settings did not change (:mod:`.study_files`); the
  plots and summary table: :mod:`.flapper_plots`.
- :func:`identify_from_file` (:mod:`.from_file`): the experiment whose
  columns a measured data file has, run by its driver: a stand table
  (:mod:`.stand`), a phase-resolved stand record (:mod:`.waveform`), a
  flapper flight log (:mod:`.flight_log`) or a multirotor hover log
  (:mod:`.hover`).

::

    from flapjax.identify import flapper as F
    from flapjax.runs import identify_from_file, run_identification

    result = run_identification(F.load_config("identification/lift.toml", quick=True), out_dir="out/identify")
    report = identify_from_file("identification/data/stand_sample.csv", out_dir="out/stand")
"""

from flapjax.runs.flapper_studies import run_identification
from flapjax.runs.flight_log import run_flight_identification
from flapjax.runs.from_file import identify_from_file
from flapjax.runs.hover import run_hover_identification
from flapjax.runs.stand import run_stand_identification
from flapjax.runs.waveform import run_waveform_identification

__all__ = ["identify_from_file", "run_flight_identification", "run_hover_identification", "run_identification",
           "run_stand_identification", "run_waveform_identification"]
