"""Measured data tables: CSV or NPZ files checked before any fit.

A table holds one row per measured sample (a stand condition or a log
instant) and one column per quantity. Every column name carries its unit
as a suffix after the last underscore: ``frequency_hz``, ``fz_n``,
``mx_nm``, ``roll_plate_rad``, ``time_s``, ``x_m``.

- CSV: one header row with the column names, then one row of numbers per
  sample, comma separated. Lines whose first non-blank character is ``#``
  are comments and may appear anywhere; blank lines are skipped. Columns
  the study does not read are allowed; they are named in an
  :class:`UnusedColumnsWarning` (``flapjax identify`` prints it as a note).
- NPZ (``numpy.savez``): one 1-D array per column, keyed by the same names,
  all of the same length.
- Units: SI as the study reads them, or a unit of :data:`UNIT_FACTORS`
  (``x_mm``, ``roll_deg``, ``fz_g``, ``time_ms``, ...), converted on reading
  and said in a :class:`ConvertedUnitsWarning`.

:func:`read_table` checks a file against the columns a study declares
(:class:`Column`) and returns float64 arrays. Every problem raises
:class:`DataError` (a :class:`~flapjax.validation.ConfigError`) whose
message names the file, the column and the 1-based data row (with the file
line for CSV): an unreadable file, an empty table, a one-column header
holding ';' or a tab (a table separated by those, not by commas), a column
name with capitals, a missing required column (and "given in 'kg', expected 'n'" when
the same quantity comes with a unit suffix that is not converted), a
quantity given twice, a cell that is not a plain decimal number, a NaN or
inf cell, a value outside the column's range (:attr:`Column.bounds`), a row
with too few or too many cells, and a time column that is not strictly
increasing.

The column contract (names, units, ranges, header checks) is
:mod:`flapjax.data.columns`; its names are re-exported here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from flapjax import safe_io
from flapjax.data.columns import (
    UNIT_FACTORS,
    Column,
    ConvertedUnitsWarning,
    DataNote,
    UnusedColumnsWarning,
    check_columns,
    check_header,
    check_values,
    first_outside,
    separator_hint,
    split_unit,
    unit_hint,
)
from flapjax.data.raw_files import DataError, csv_lines, is_npz, load_npz

__all__ = ["UNIT_FACTORS", "ChannelTable", "Column", "ConvertedUnitsWarning", "DataError",
           "DataNote", "UnusedColumnsWarning", "check_arrays", "check_values", "column_names", "read_table",
           "read_table_with_lines", "separator_hint", "split_unit", "write_sample", "write_table"]


class ChannelTable:
    """What the checked measured tables share: ``frequency`` (n,) and
    ``channels`` (name -> (n,) values), measured channels listed in the
    class's :attr:`CHANNEL_ORDER`."""

    CHANNEL_ORDER: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.frequency.shape[0])

    @property
    def channel_names(self) -> tuple[str, ...]:
        return tuple(c for c in self.CHANNEL_ORDER if c in self.channels)

    def targets(self) -> np.ndarray:
        """(n, C) measured channels in :attr:`channel_names` order."""
        return np.stack([self.channels[c] for c in self.channel_names], axis=1)


def column_names(path: str | Path) -> list[str]:
    """The column names of a data file (the CSV header or the NPZ keys), in
    file order; used to pick the study a file belongs to.

    Raises :class:`DataError` on an unreadable or empty file.
    """
    p = Path(path)
    if is_npz(p):
        names = list(load_npz(p))
        if not names:
            raise DataError(f"{p}: empty file (the .npz archive holds no columns)")
        check_header(p, names)
        return names
    rows = csv_lines(p)
    if not rows:
        raise DataError(f"{p}: empty file (no header row naming the columns)")
    check_header(p, rows[0][1], rows[0][0])
    return rows[0][1]


#: A plain decimal number, what a CSV cell must hold: ASCII digits with an
#: optional sign, decimal point and exponent (``-1.5e-3``, ``.5``, ``1e5``);
#: not what else Python's ``float`` takes (``1_000``, ``infinity``, other
#: scripts' digits).
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")

#: A decimal number written with a decimal comma (``0,037``, ``-1,5e-3``),
#: as some locales save tables: a quoted cell of a comma-separated file.
_DECIMAL_COMMA = re.compile(r"[+-]?[0-9]*,[0-9]+([eE][+-]?[0-9]+)?")


def _cell_value(text: str) -> tuple[float, str | None]:
    """The number in a CSV cell and None, or ``(nan, why it is refused)``."""
    if text == "":
        return math.nan, "empty cell (a missing value)"
    try:
        v = float(text)
    except ValueError:
        if _DECIMAL_COMMA.fullmatch(text):
            return math.nan, "not a number (a decimal comma? write '.' as the decimal point)"
        return math.nan, "not a number"
    if not math.isfinite(v):
        return math.nan, "NaN or inf; drop or repair the row"
    if not _DECIMAL.fullmatch(text):
        return math.nan, ("not a plain decimal number (ASCII digits with an optional sign, '.' and exponent, as "
                          "in -1.5e-3; no '_' or other separators)")
    return v, None


def _cell_error(path: Path, name: str, row: int, line: int | None, text: str, why: str) -> DataError:
    where = f"row {row}" + (f" (line {line})" if line is not None else "")
    return DataError(f"{path}: column {name!r}, {where}: {why} ({text!r})")


def _range_note(col: Column, src: str, value: float) -> str:
    """What follows the reason a value is outside ``col``'s range: the
    column it was read as when the file's ``src`` was converted, else a
    guess at the unit it was written in (:func:`unit_hint`)."""
    if src != col.name:
        return f" (read as {col.name!r})"
    return unit_hint(col, float(value))


def _check_time(path: Path, name: str, t: np.ndarray, lines: Sequence[int] | None) -> None:
    bad = np.nonzero(np.diff(t) <= 0)[0]
    if bad.size:
        i = int(bad[0]) + 1  # 0-based index of the offending row
        where = f"row {i + 1}" + (f" (line {lines[i]})" if lines is not None else "")
        raise DataError(f"{path}: column {name!r}, {where}: time {float(t[i]):.9g} is not greater than the previous "
                        f"row's {float(t[i - 1]):.9g}; the time column must be strictly increasing")


def _read_csv(path: Path, columns: Sequence[Column]) -> tuple[dict[str, np.ndarray], list[int]]:
    rows = csv_lines(path)
    if not rows:
        raise DataError(f"{path}: empty file (no header row naming the columns)")
    header = rows[0][1]
    sources = check_columns(path, header, columns, rows[0][0])
    body = rows[1:]
    if not body:
        raise DataError(f"{path}: empty table: row 1 missing (the header names {header} but no data row follows)")
    for r, (line, cells) in enumerate(body, start=1):
        if len(cells) != len(header):
            if len(cells) < len(header):
                col = header[len(cells)]
                detail = f"column {col!r} and {len(header) - len(cells) - 1} more missing" \
                    if len(header) - len(cells) > 1 else f"column {col!r} missing"
            else:
                detail = f"{len(cells) - len(header)} cell(s) beyond the last column {header[-1]!r}"
            raise DataError(f"{path}: row {r} (line {line}) has {len(cells)} cells, the header names "
                            f"{len(header)} columns ({detail})")
    out: dict[str, np.ndarray] = {}
    lines = [line for line, _ in body]
    declared = {c.name: c for c in columns}
    for name, (src, factor) in sources.items():
        j = header.index(src)
        values = np.empty(len(body), dtype=np.float64)
        for r, (line, cells) in enumerate(body, start=1):
            values[r - 1], why = _cell_value(cells[j])
            if why:
                raise _cell_error(path, src, r, line, cells[j], why)
        values = values * factor if factor != 1.0 else values
        bad = first_outside(declared[name], values)
        if bad is not None:
            i, why = bad
            note = _range_note(declared[name], src, values[i])
            raise _cell_error(path, src, i + 1, lines[i], body[i][1][j], why + note)
        out[name] = values
    return out, lines


def _read_npz(path: Path, columns: Sequence[Column]) -> dict[str, np.ndarray]:
    data = load_npz(path)
    if not data:
        raise DataError(f"{path}: empty file (the .npz archive holds no columns)")
    header = list(data)
    sources = check_columns(path, header, columns)
    out: dict[str, np.ndarray] = {}
    n_rows: tuple[str, int] | None = None
    declared = {c.name: c for c in columns}
    for name, (src, factor) in sources.items():
        col = Column(src)  # messages name the file's column
        arr = np.asarray(data[src])
        if arr.ndim != 1:
            raise DataError(f"{path}: column {col.name!r}: expected a 1-D array (one value per row), "
                            f"got shape {arr.shape}")
        if arr.dtype == bool:
            raise DataError(f"{path}: column {col.name!r}: holds true/false values (a boolean array), not numbers")
        if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
            raise DataError(f"{path}: column {col.name!r}, row 1: not a number (array of dtype {arr.dtype})")
        if n_rows is None:
            n_rows = (col.name, arr.shape[0])
        elif arr.shape[0] != n_rows[1]:
            raise DataError(f"{path}: column {col.name!r} has {arr.shape[0]} rows, column {n_rows[0]!r} has "
                            f"{n_rows[1]} (ragged table; row {min(arr.shape[0], n_rows[1]) + 1} is missing)")
        if arr.shape[0] == 0:
            raise DataError(f"{path}: empty table: column {col.name!r}, row 1 missing (no data rows)")
        arr = arr.astype(np.float64)
        bad = np.nonzero(~np.isfinite(arr))[0]
        if bad.size:
            r = int(bad[0]) + 1
            raise _cell_error(path, col.name, r, None, str(arr[r - 1]), "NaN or inf; drop or repair the row")
        arr = arr * factor if factor != 1.0 else arr
        bad = first_outside(declared[name], arr)
        if bad is not None:
            i, why = bad
            note = _range_note(declared[name], src, arr[i])
            raise _cell_error(path, src, i + 1, None, str(data[src][i]), why + note)
        out[name] = arr
    return out


def read_table(path: str | Path, columns: Sequence[Column], *,
               time_column: str | None = None) -> dict[str, np.ndarray]:
    """The checked columns of the table at ``path``
    (:func:`read_table_with_lines`, without the lines)."""
    return read_table_with_lines(path, columns, time_column=time_column)[0]


def read_table_with_lines(path: str | Path, columns: Sequence[Column], *,
                          time_column: str | None = None) -> tuple[dict[str, np.ndarray], list[int] | None]:
    """Read and check a data table.

    Args:
        path: a ``.csv`` file (any other suffix is read as CSV) or a ``.npz`` archive.
        columns: the columns the study reads; required ones must be present,
            optional ones are returned only when the file holds them. A column
            holding the same quantity in a unit of :data:`UNIT_FACTORS`
            (``x_mm`` for ``x_m``) is converted (a :class:`ConvertedUnitsWarning`
            says so); in any other unit (``fz_kg`` for ``fz_n``) it is an error.
            Values outside a column's :attr:`Column.bounds` (or not > 0
            where :attr:`Column.positive`), after conversion, are errors.
        time_column: name of a column that must be strictly increasing
            (``time_s``); it is added as a required column when not declared.

    Returns:
        ``({name: float64 array of shape (N,)}, lines)``: every declared
        column the file holds, N >= 1 rows (file order), and each row's
        1-based file line (None for NPZ), for later checks to name.

    Raises:
        DataError: naming the file, the column and the 1-based data row.
    """
    p = Path(path)
    cols = list(columns)
    if time_column is not None and time_column not in {c.name for c in cols}:
        cols.append(Column(time_column, True, "time"))
    names = [c.name for c in cols]
    if len(set(names)) != len(names):
        raise ValueError(f"columns: duplicate names in {names}")
    if is_npz(p):
        table, lines = _read_npz(p, cols), None
    else:
        table, lines = _read_csv(p, cols)
    if time_column is not None:
        _check_time(p, time_column, table[time_column], lines)
    return table, lines


def check_arrays(where: str, named: Sequence[tuple[str, np.ndarray]]) -> int:
    """Check columns given as arrays the way a file's are: every array as
    long as the first, all finite, at least one row. ``named``: ``(column
    name, 1-D array)`` pairs, the first the reference. Returns the row
    count; raises :class:`DataError` naming ``where``, the column and the
    1-based row."""
    first, ref = named[0]
    n = ref.shape[0]
    for name, arr in named:
        if arr.shape[0] != n:
            raise DataError(f"{where}: column {name!r} has {arr.shape[0]} rows, column {first!r} has {n}")
        bad = np.nonzero(~np.isfinite(arr))[0]
        if bad.size:
            raise DataError(f"{where}: column {name!r}, row {bad[0] + 1}: NaN or inf")
    if n == 0:
        raise DataError(f"{where}: empty table: column {first!r}, row 1 missing")
    return n


def write_table(path: str | Path, columns: dict[str, np.ndarray], comment: str = "") -> None:
    """Write ``columns`` (name -> (N,) values, file order) as a CSV table
    that :func:`read_table` reads: ``comment`` as ``#`` lines, the header,
    one row per sample; angles and frequencies (``_rad``, ``_hz``) with 8
    significant digits, other values in exponent form with 9."""
    names = list(columns)
    lines = [f"# {line}" for line in comment.splitlines()]
    lines.append(",".join(names))
    for i in range(len(columns[names[0]])):
        lines.append(",".join(f"{columns[k][i]:.8g}" if k.endswith(("_hz", "_rad")) else f"{columns[k][i]:.8e}"
                              for k in names))
    safe_io.write_text(path, "\n".join(lines) + "\n")


def write_sample(path: str | Path, columns: dict[str, np.ndarray], hidden: dict, comment: str = "") -> Path:
    """Write a generated sample: the table (:func:`write_table`) and beside
    it ``<stem>.hidden.json`` with the values the fit must not read (the
    hidden parameters, drawn offsets, noise levels, seed). Returns the
    sidecar's path."""
    import json

    path = Path(path)
    write_table(path, columns, comment)
    sidecar = path.with_name(path.stem + ".hidden.json")
    safe_io.write_text(sidecar, json.dumps(hidden, indent=1) + "\n")
    return sidecar
