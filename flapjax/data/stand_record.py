"""The phase-resolved stand record: a force sensor's reading under the
fixed robot averaged in bins of the stroke phase (its columns
:data:`WAVEFORM_COLUMNS`, documented in ``docs/data_formats.md``), the
checked :class:`StandWaveform` and reading it from a file or from arrays.

One row per (condition, phase bin): a condition is a frequency and a pair of
plate angles held while the sensor records; ``phase_rad`` is the centre of
the bin of the stroke drive's phase ``theta`` (the commanded stroke of the
left wing is ``A sin(theta)``), in [0, 2 pi).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flapjax.data.tables import (
    ChannelTable,
    Column,
    DataError,
    check_arrays,
    check_values,
    read_table_with_lines,
)
from flapjax.data.stand_table import CHANNELS, PLATE_COLUMNS, as_arrays

WAVEFORM_COLUMNS = (
    Column("frequency_hz", True, "flapping frequency [Hz]"),
    Column("phase_rad", True, "stroke drive phase at the bin centre, in [0, 2 pi) [rad]"),
    Column("fz_n", True, "phase-averaged vertical force [N]"),
    *PLATE_COLUMNS,
    Column("fx_n", False, "phase-averaged force along body x [N]"),
    Column("fy_n", False, "phase-averaged force along body y [N]"),
    Column("mx_nm", False, "phase-averaged moment about body x at the centre of mass at rest [N m]"),
    Column("my_nm", False, "phase-averaged moment about body y at the centre of mass at rest [N m]"),
)

#: Measured channels (``fz_n`` always; the others when the record holds
#: them): the stand table's.
WAVEFORM_CHANNELS = CHANNELS

#: Fewest phase bins a condition may have (fewer cannot show a waveform).
MIN_BINS = 4


@dataclass(frozen=True)
class StandWaveform(ChannelTable):
    """A checked phase-resolved stand record.

    Attributes:
      frequency: (n,) [Hz].
      phase: (n,) bin centres of the stroke drive phase, in [0, 2 pi) [rad].
      plate: (n, 2) plate angles (delta_p, delta_r) [rad] (0 where the file
        has no plate column).
      channels: channel name -> (n,) phase-averaged force [N] or moment
        [N m] (``fz_n`` always; ``fx_n``, ``fy_n``, ``mx_nm``, ``my_nm`` when
        the file holds them).
      condition: (n,) index of each row's condition (see :attr:`conditions`).
      source: where the record came from.
    """

    frequency: np.ndarray
    phase: np.ndarray
    plate: np.ndarray
    channels: dict[str, np.ndarray]
    condition: np.ndarray
    source: str = ""

    CHANNEL_ORDER = WAVEFORM_CHANNELS

    @property
    def n_conditions(self) -> int:
        return int(self.condition.max()) + 1

    def conditions(self) -> tuple[np.ndarray, np.ndarray]:
        """``(frequency (m,) [Hz], plate (m, 2) [rad])`` of the m conditions,
        in the order they first appear in the record."""
        first = np.array([np.nonzero(self.condition == c)[0][0] for c in range(self.n_conditions)])
        return self.frequency[first], self.plate[first]



def _condition_index(frequency: np.ndarray, plate: np.ndarray) -> np.ndarray:
    """(n,) index of each row's (frequency, plate) condition, by first appearance."""
    keys: dict[tuple[float, float, float], int] = {}
    out = np.empty(frequency.shape[0], dtype=np.int64)
    for i, key in enumerate(zip(frequency.tolist(), plate[:, 0].tolist(), plate[:, 1].tolist())):
        out[i] = keys.setdefault(key, len(keys))
    return out


def _row(where: str, column: str, i: int, lines: Sequence[int] | None) -> str:
    """``WHERE: column 'C', row R (line L)`` for the 0-based row ``i`` (the
    file line when ``lines``, each row's 1-based line, is given)."""
    line = f" (line {lines[i]})" if lines is not None else ""
    return f"{where}: column {column!r}, row {i + 1}{line}"


def stand_waveform(frequency, phase, fz, *, pitch_plate=None, roll_plate=None, source: str = "",
                   lines: Sequence[int] | None = None, **channels) -> StandWaveform:
    """A :class:`StandWaveform` from arrays, with the checks a file gets:
    equal lengths, finite values, positive frequencies, phases in
    [0, 2 pi), no phase twice within a condition, at least :data:`MIN_BINS`
    bins per condition. ``channels``: ``fx_n``, ``fy_n``, ``mx_nm``, ``my_nm``.
    Messages name ``source``, the column and the 1-based row, and the file
    line of the row when ``lines`` (each row's 1-based line in a CSV file)
    is given."""
    where = source or "stand waveform"
    f, cols, plates = as_arrays(where, frequency, fz, pitch_plate, roll_plate, channels)
    theta = np.asarray(phase, dtype=float).reshape(-1)
    check_arrays(where, [("frequency_hz", f), ("phase_rad", theta), ("pitch_plate_rad", plates[0]),
                         ("roll_plate_rad", plates[1]), *cols.items()])
    declared = {c.name: c for c in WAVEFORM_COLUMNS}
    for name, values in (("pitch_plate_rad", plates[0]), ("roll_plate_rad", plates[1])):
        check_values(where, declared[name], values)
    bad = np.nonzero(f <= 0)[0]
    if bad.size:
        raise DataError(f"{_row(where, 'frequency_hz', bad[0], lines)}: frequency must be > 0 Hz, got "
                        f"{float(f[bad[0]])!r}")
    bad = np.nonzero((theta < 0) | (theta >= 2 * math.pi))[0]
    if bad.size:
        raise DataError(f"{_row(where, 'phase_rad', bad[0], lines)}: the stroke phase must lie in [0, 2 pi), "
                        f"got {float(theta[bad[0]])!r} (wrap it: phase mod 2 pi)")
    plate = np.stack(plates, axis=1)
    cond = _condition_index(f, plate)
    for c in range(int(cond.max()) + 1):
        rows = np.nonzero(cond == c)[0]
        label = f"frequency {f[rows[0]]:g} Hz, plates ({plate[rows[0], 0]:g}, {plate[rows[0], 1]:g}) rad"
        if rows.size < MIN_BINS:
            raise DataError(f"{_row(where, 'phase_rad', rows[0], lines)}: the condition of this row ({label}) "
                            f"has {rows.size} phase bin(s); at least {MIN_BINS} are needed")
        order = np.argsort(theta[rows], kind="stable")
        same = np.nonzero(np.diff(theta[rows][order]) <= 1e-9)[0]
        if same.size:
            r = rows[order[same[0] + 1]]
            raise DataError(f"{_row(where, 'phase_rad', r, lines)}: phase {float(theta[r])!r} appears twice in "
                            f"the condition {label}")
    return StandWaveform(f, theta, plate, cols, cond, source)


def load_stand_waveform(path: str | Path) -> StandWaveform:
    """Read and check a phase-resolved stand record (CSV or NPZ; columns
    :data:`WAVEFORM_COLUMNS`); messages name the file, the column, the
    1-based row and, for CSV, the file line."""
    t, lines = read_table_with_lines(path, WAVEFORM_COLUMNS)
    extra = {k: t[k] for k in WAVEFORM_CHANNELS[1:] if k in t}
    return stand_waveform(t["frequency_hz"], t["phase_rad"], t["fz_n"], pitch_plate=t.get("pitch_plate_rad"),
                          roll_plate=t.get("roll_plate_rad"), source=str(path), lines=lines, **extra)
