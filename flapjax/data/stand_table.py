"""The thrust-stand table: its columns (:data:`STAND_COLUMNS`, documented
in ``docs/data_formats.md``), the checked :class:`StandData` and reading it
from a file or from arrays."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flapjax.aero.cycle_averaged import PLATE_LIMIT
from flapjax.data.tables import (
    ChannelTable,
    Column,
    DataError,
    check_arrays,
    check_values,
    read_table_with_lines,
)


#: The optional plate-angle columns of the stand formats (0 where absent).
PLATE_COLUMNS = (
    Column("pitch_plate_rad", False, "plate angle delta_p (pitch_joint) [rad]", bounds=(-PLATE_LIMIT, PLATE_LIMIT)),
    Column("roll_plate_rad", False, "plate angle delta_r (roll_joint) [rad]", bounds=(-PLATE_LIMIT, PLATE_LIMIT)),
)

STAND_COLUMNS = (
    Column("frequency_hz", True, "flapping frequency [Hz]", positive=True, bounds=(0.0, 500.0)),
    Column("fz_n", True, "cycle-mean vertical force [N]"),
    *PLATE_COLUMNS,
    Column("fx_n", False, "cycle-mean force along body x [N]"),
    Column("fy_n", False, "cycle-mean force along body y [N]"),
    Column("mx_nm", False, "cycle-mean moment about body x at the centre of mass [N m]"),
    Column("my_nm", False, "cycle-mean moment about body y at the centre of mass [N m]"),
)

#: Measured channels in the order of the columns of
#: :func:`~flapjax.identify.flapper.stand_prediction.predict_stand`.
CHANNELS = ("fz_n", "fx_n", "fy_n", "mx_nm", "my_nm")

#: Axis labels of the channels in plots.
CHANNEL_LABELS = {"fz_n": "F_z [N]", "fx_n": "F_x [N]", "fy_n": "F_y [N]", "mx_nm": "M_x [N m]", "my_nm": "M_y [N m]"}

#: Unit of each channel (and of its sensor offset ``fz_offset``, ...).
CHANNEL_UNITS = {**{ch: "N m" if ch.startswith("m") else "N" for ch in CHANNELS},
                 **{ch[:2] + "_offset": "N m" if ch.startswith("m") else "N" for ch in CHANNELS}}


@dataclass(frozen=True)
class StandData(ChannelTable):
    """A checked stand table.

    Attributes:
      frequency: (n,) [Hz].
      plate: (n, 2) plate angles (delta_p, delta_r) [rad] (0 where the file
        has no plate column).
      channels: measured channel name -> (n,) cycle means [N or N m]
        (``fz_n`` always; the others when the file holds them).
      source: where the table came from.
    """

    frequency: np.ndarray
    plate: np.ndarray
    channels: dict[str, np.ndarray]
    source: str = ""

    CHANNEL_ORDER = CHANNELS

    def rows(self, index) -> StandData:
        """The table restricted to ``index`` (bool mask or integer rows)."""
        return StandData(self.frequency[index], self.plate[index],
                         {k: v[index] for k, v in self.channels.items()}, self.source)


def stand_data(frequency, fz, *, pitch_plate=None, roll_plate=None, source: str = "", **channels) -> StandData:
    """A :class:`StandData` from arrays (same checks as a file: finite,
    positive frequencies, plate angles within :data:`PLATE_LIMIT`, equal
    lengths); ``channels`` are ``fx_n``, ``fy_n``, ``mx_nm``, ``my_nm``."""
    where = source or "stand data"
    f, cols, plates = as_arrays(where, frequency, fz, pitch_plate, roll_plate, channels)
    check_arrays(where, [("frequency_hz", f), ("pitch_plate_rad", plates[0]), ("roll_plate_rad", plates[1]),
                         *cols.items()])
    declared = {c.name: c for c in STAND_COLUMNS}
    for name, values in (("frequency_hz", f), ("pitch_plate_rad", plates[0]), ("roll_plate_rad", plates[1])):
        check_values(where, declared[name], values)
    return StandData(f, np.stack(plates, axis=1), cols, source)


def as_arrays(where: str, frequency, fz, pitch_plate, roll_plate, channels: dict):
    """``(frequency (n,) [Hz], channels, [pitch_plate (n,), roll_plate (n,)]
    [rad])`` as float arrays: ``channels`` name -> (n,), ``fz_n`` first, the
    ones given as None left out; a plate angle given as None is 0.
    :class:`DataError` naming ``where`` for a channel not in :data:`CHANNELS`."""
    unknown = sorted(set(channels) - set(CHANNELS))
    if unknown:
        raise DataError(f"{where}: unknown channel(s) {unknown}; known: {list(CHANNELS)}")
    f = np.asarray(frequency, dtype=float).reshape(-1)
    cols = {"fz_n": np.asarray(fz, dtype=float).reshape(-1)}
    cols.update({k: np.asarray(v, dtype=float).reshape(-1) for k, v in channels.items() if v is not None})
    plates = [np.zeros(f.shape[0]) if a is None else np.asarray(a, dtype=float).reshape(-1)
              for a in (pitch_plate, roll_plate)]
    return f, cols, plates


def check_distinct_rows(where: str, table: dict[str, np.ndarray], lines: list[int] | None = None) -> None:
    """Refuse two data rows with exactly the same values in every column of
    ``table`` (name -> (n,) values, SI units): a condition pasted twice,
    whose copy would pass a held-out row into the fit and shrink the
    standard deviations. ``lines``: the 1-based file line of each row (CSV).
    Raises :class:`DataError` naming ``where`` and both 1-based rows."""
    seen: dict[tuple[float, ...], int] = {}
    for i, row in enumerate(zip(*table.values())):
        key = tuple(float(v) for v in row)
        if key in seen:
            j = seen[key]
            at = f" (lines {lines[j]} and {lines[i]})" if lines is not None else ""
            raise DataError(f"{where}: rows {j + 1} and {i + 1}{at} are identical in columns {list(table)} (a "
                            "condition pasted twice?); repeated measurements differ in their noise: drop the copy")
        seen[key] = i


def load_stand_table(path: str | Path) -> StandData:
    """Read and check a stand table (CSV or NPZ; columns :data:`STAND_COLUMNS`;
    no two data rows identical, :func:`check_distinct_rows`)."""
    t, lines = read_table_with_lines(path, STAND_COLUMNS)
    check_distinct_rows(str(path), t, lines)
    extra = {k: t[k] for k in CHANNELS[1:] if k in t}
    return stand_data(t["frequency_hz"], t["fz_n"], pitch_plate=t.get("pitch_plate_rad"),
                      roll_plate=t.get("roll_plate_rad"), source=str(path), **extra)
