"""Measured-data files: what each format holds, how it is read and checked,
and how one is written (docs/data_formats.md is the user's description).

- :mod:`.raw_files`, :mod:`.columns`, :mod:`.tables`: bytes to a table of
  named columns in SI units (CSV with a unit per header, or NPZ), with the
  checks every format shares (units, ranges, time, separators, memory);
- :mod:`.sampling`: sample grids, dropouts and the white-noise level of a
  channel;
- :mod:`.stand_table`: a fixed-base stand table (cycle means per condition);
- :mod:`.stand_record`: a phase-resolved stand record (samples within the
  wingbeat);
- :mod:`.flight_log`: a flapping-wing robot's motion-capture flight log;
- :mod:`.hover_log` and :mod:`.hover_log_checks`: a multirotor's hover log
  near a ground or a wall, and the checks of its units and sampling.

Nothing here fits anything: :mod:`flapjax.identify` reads these files and
fits the models to them.
"""
