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
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flapjax.identify.raw_files import DataError, csv_lines, is_npz, load_npz

__all__ = ["UNIT_FACTORS", "ChannelTable", "Column", "ConvertedUnitsWarning", "DataError", "DataNote",
           "UnusedColumnsWarning", "check_arrays", "check_values", "column_names", "read_table", "separator_hint",
           "split_unit", "write_sample", "write_table"]

#: Exact factors from a unit suffix a file may use to the SI suffix a study
#: reads, ``(given, expected) -> factor``: the column ``x_mm`` is read as
#: ``x_m = 1e-3 * x_mm``. ``g`` is standard gravity (9.80665 m/s^2) for an
#: acceleration and gram-force for a force; ``mn`` is the millinewton.
UNIT_FACTORS: dict[tuple[str, str], float] = {
    ("mm", "m"): 1e-3,
    ("cm", "m"): 1e-2,
    ("deg", "rad"): math.pi / 180.0,
    ("ms", "s"): 1e-3,
    ("us", "s"): 1e-6,
    ("rpm", "hz"): 1.0 / 60.0,
    ("mn", "n"): 1e-3,
    ("g", "n"): 9.80665e-3,
    ("mnm", "nm"): 1e-3,
    ("nmm", "nm"): 1e-3,
    ("unm", "nm"): 1e-6,
    ("mmps", "mps"): 1e-3,
    ("g", "mps2"): 9.80665,
}


class DataNote(UserWarning):
    """Something about a data file its reader did and the user should see
    (``flapjax identify`` prints these as ``note:`` lines)."""


class UnusedColumnsWarning(DataNote):
    """A data file holds columns the study does not read (they take no part
    in the fit); the message names the file, those columns and the ones read."""


class ConvertedUnitsWarning(DataNote):
    """A data file gives a quantity in another unit of :data:`UNIT_FACTORS`
    (``x_mm``); it was converted to the unit the study reads. The message
    names the file, the columns and the factors."""


@dataclass(frozen=True)
class Column:
    """A column a study reads: ``name`` with its unit suffix (``fz_n``),
    whether the file must hold it, what it means (for messages and docs),
    and the values it allows, in the unit of ``name`` (after conversion):
    ``positive`` (> 0), ``bounds`` (``(lo, hi)``, both included) and, but
    for time, :data:`MAGNITUDE_LIMIT`."""

    name: str
    required: bool = True
    description: str = ""
    bounds: tuple[float, float] | None = None
    positive: bool = False


#: The largest magnitude of a measured value in its SI unit (time excepted):
#: far beyond any small robot, small enough that squares stay finite.
MAGNITUDE_LIMIT = 1e9


def _outside(col: Column, values: np.ndarray) -> tuple[int, str] | None:
    """The 0-based index of the first of ``values`` (in the unit of
    ``col.name``) outside the column's range and why, or None."""
    bad = np.zeros(values.shape, dtype=bool)
    if not col.name.startswith("time"):  # a clock may count from any epoch
        huge = np.abs(values) > MAGNITUDE_LIMIT
        if huge.any():
            i = int(np.flatnonzero(huge)[0])
            return i, (f"magnitude {float(values[i]):.6g} above {MAGNITUDE_LIMIT:g} in SI units: a unit slip or "
                       "a corrupted cell")
    if col.positive:
        bad |= ~(values > 0)
    if col.bounds is not None:
        bad |= ~((values >= col.bounds[0]) & (values <= col.bounds[1]))
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    v = float(values[i])
    if col.positive and not v > 0:
        return i, f"must be > 0, got {v:.6g}"
    return i, f"value {v:.6g} outside [{col.bounds[0]:g}, {col.bounds[1]:g}]"


def check_values(where: str, col: Column, values) -> None:
    """Check values given as an array against ``col``'s range, as
    :func:`read_table` checks a file's; raises :class:`DataError` naming
    ``where``, the column and the 1-based row of the first value outside."""
    out = _outside(col, np.asarray(values, dtype=np.float64).reshape(-1))
    if out is not None:
        raise DataError(f"{where}: column {col.name!r}, row {out[0] + 1}: {out[1]}")


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


def split_unit(name: str) -> tuple[str, str]:
    """``'frequency_hz'`` -> ``('frequency', 'hz')``; a name without an
    underscore has no unit suffix (``('name', '')``)."""
    if "_" not in name:
        return name, ""
    quantity, unit = name.rsplit("_", 1)
    return quantity, unit


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
        _check_header(p, names)
        return names
    rows = csv_lines(p)
    if not rows:
        raise DataError(f"{p}: empty file (no header row naming the columns)")
    _check_header(p, rows[0][1], rows[0][0])
    return rows[0][1]


def _check_header(path: Path, header: Sequence[str], header_line: int | None = None) -> None:
    """Every column name non-empty, once, and lowercase (``quantity_unit``:
    a unit's case would otherwise be ambiguous, mN against MN)."""
    where = f" (header, line {header_line})" if header_line is not None else ""
    if header_line is not None and len(header) == 1 and separator_hint(header):
        raise DataError(f"{path}: the header (line {header_line}) is one column "
                        f"{header[0]!r}.{separator_hint(header)}")
    seen: set[str] = set()
    for i, name in enumerate(header, start=1):
        if name == "":
            raise DataError(f"{path}: the header{where} has an empty column name (column {i})")
        if name in seen:
            raise DataError(f"{path}: column {name!r} appears twice in the header{where}")
        if name != name.lower():
            raise DataError(f"{path}: column {name!r}{where}: column names are lowercase quantity_unit, the unit "
                            f"too (its case would be ambiguous: mN, MN); write {name.lower()!r}")
        seen.add(name)


def separator_hint(names: Sequence[str]) -> str:
    """`` The file seems to be separated by ';' ...`` when a column name holds
    ';' or a tab (a table written with another separator), else ``''``."""
    for sep, word in ((";", "';'"), ("\t", "tabs")):
        if any(sep in name for name in names):
            return (f" The file seems to be separated by {word}; flapjax reads comma-separated values (',' between "
                    "cells, '.' as the decimal point): save the table as CSV with commas.")
    return ""


def _check_columns(path: Path, header: Sequence[str], columns: Sequence[Column],
                   header_line: int | None = None) -> dict[str, tuple[str, float]]:
    """Check the header against the declared columns; returns, for every
    declared column the file holds, ``name -> (file column, factor)`` (factor
    1 unless the file gives the quantity in a unit of :data:`UNIT_FACTORS`)."""
    where = f" (header, line {header_line})" if header_line is not None else ""
    _check_header(path, header, header_line)
    by_quantity: dict[str, list[str]] = {}
    for name in header:
        by_quantity.setdefault(split_unit(name)[0], []).append(name)
    sources: dict[str, tuple[str, float]] = {}
    for col in columns:
        quantity, unit = split_unit(col.name)
        given = by_quantity.get(quantity, [])
        what = f" ({col.description})" if col.description else ""
        if len(given) > 1:
            raise DataError(f"{path}: column {col.name!r}{what}{where}: the file gives it {len(given)} times, as "
                            f"{given}; keep one")
        if not given:
            if col.required:
                raise DataError(f"{path}: missing required column {col.name!r}{what}{where}; the file has "
                                f"columns {list(header)}")
            continue
        src, src_unit = given[0], split_unit(given[0])[1]
        if src == col.name:
            sources[col.name] = (src, 1.0)
            continue
        if src_unit and (src_unit, unit) in UNIT_FACTORS:
            sources[col.name] = (src, UNIT_FACTORS[(src_unit, unit)])
            continue
        known = [g for g, e in UNIT_FACTORS if e == unit]
        also = f" (converted on reading: {known})" if known else ""
        if not src_unit:
            raise DataError(f"{path}: column {col.name!r}{what}{where}: the file's column {src!r} has no unit suffix "
                            f"(names are quantity_unit); name it {col.name!r} with the values in {unit!r}{also}")
        raise DataError(f"{path}: column {col.name!r}{what}{where}: given in {src_unit!r}, expected "
                        f"{unit!r}{also} (the file has {src!r}); convert the values to "
                        f"{unit!r} and name the column {col.name!r}")
    converted = [f"{src} -> {name} (x {factor:.9g})" for name, (src, factor) in sources.items() if src != name]
    if converted:
        warnings.warn(ConvertedUnitsWarning(f"{path}: converted {', '.join(converted)}"), stacklevel=5)
    read = {src for src, _ in sources.values()}
    unused = [name for name in header if name not in read]
    if unused:
        warnings.warn(UnusedColumnsWarning(
            f"{path}: column(s) {unused} are not read by this study and take no part in the fit (it reads "
            f"{[c.name for c in columns]}; see docs/data_formats.md)"), stacklevel=5)
    return sources


#: A plain decimal number, what a CSV cell must hold: ASCII digits with an
#: optional sign, decimal point and exponent (``-1.5e-3``, ``.5``, ``1e5``);
#: not what else Python's ``float`` takes (``1_000``, ``infinity``, other
#: scripts' digits).
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _cell_value(text: str) -> tuple[float, str | None]:
    """The number in a CSV cell and None, or ``(nan, why it is refused)``."""
    if text == "":
        return math.nan, "empty cell (a missing value)"
    try:
        v = float(text)
    except ValueError:
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
    sources = _check_columns(path, header, columns, rows[0][0])
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
        bad = _outside(declared[name], values)
        if bad is not None:
            i, why = bad
            as_read = f" (read as {name!r})" if src != name else ""
            raise _cell_error(path, src, i + 1, lines[i], body[i][1][j], why + as_read)
        out[name] = values
    return out, lines


def _read_npz(path: Path, columns: Sequence[Column]) -> dict[str, np.ndarray]:
    data = load_npz(path)
    if not data:
        raise DataError(f"{path}: empty file (the .npz archive holds no columns)")
    header = list(data)
    sources = _check_columns(path, header, columns)
    out: dict[str, np.ndarray] = {}
    n_rows: tuple[str, int] | None = None
    declared = {c.name: c for c in columns}
    for name, (src, factor) in sources.items():
        col = Column(src)  # messages name the file's column
        arr = np.asarray(data[src])
        if arr.ndim != 1:
            raise DataError(f"{path}: column {col.name!r}: expected a 1-D array (one value per row), "
                            f"got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) or np.iscomplexobj(arr):
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
        outside = _outside(declared[name], arr)
        if outside is not None:
            i, why = outside
            as_read = f" (read as {name!r})" if src != name else ""
            raise _cell_error(path, src, i + 1, None, str(data[src][i]), why + as_read)
        out[name] = arr
    return out


def read_table(path: str | Path, columns: Sequence[Column], *,
               time_column: str | None = None) -> dict[str, np.ndarray]:
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
        ``{name: float64 array of shape (N,)}`` for every declared column the
        file holds, N >= 1 rows (file order).

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
    return table


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
    Path(path).write_text("\n".join(lines) + "\n")


def write_sample(path: str | Path, columns: dict[str, np.ndarray], hidden: dict, comment: str = "") -> Path:
    """Write a generated sample: the table (:func:`write_table`) and beside
    it ``<stem>.hidden.json`` with the values the fit must not read (the
    hidden parameters, drawn offsets, noise levels, seed). Returns the
    sidecar's path."""
    import json

    path = Path(path)
    write_table(path, columns, comment)
    sidecar = path.with_name(path.stem + ".hidden.json")
    sidecar.write_text(json.dumps(hidden, indent=1) + "\n")
    return sidecar
