"""The column contract of a measured data table: names as
``quantity_unit`` (:func:`split_unit`), the units converted on reading
(:data:`UNIT_FACTORS`), the columns a study declares (:class:`Column`) with
their ranges (:func:`check_values`), and the header checks against them
(:func:`check_columns`). Reading the files is :mod:`flapjax.data.tables`'s."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from flapjax.data.raw_files import DataError

__all__ = ["MAGNITUDE_LIMIT", "UNIT_FACTORS", "Column", "ConvertedUnitsWarning", "DataNote", "UnusedColumnsWarning",
           "check_columns", "check_header", "check_values", "first_outside", "separator_hint", "split_unit",
           "unit_hint"]

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


def first_outside(col: Column, values: np.ndarray) -> tuple[int, str] | None:
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


def _inside(col: Column, value: float) -> bool:
    """Whether ``value`` (in the unit of ``col.name``) is within the
    column's range: :func:`first_outside` would accept it."""
    if not col.name.startswith("time") and abs(value) > MAGNITUDE_LIMIT:
        return False
    if col.positive and not value > 0:
        return False
    return col.bounds is None or col.bounds[0] <= value <= col.bounds[1]


def _far_outside(col: Column, value: float) -> bool:
    """Whether ``value`` is at least twice the largest magnitude of the
    column's bounds (no bounds: True), too far out for a small overshoot."""
    if col.bounds is None:
        return True
    return abs(value) >= 2.0 * max(abs(col.bounds[0]), abs(col.bounds[1]))


def unit_hint(col: Column, value: float) -> str:
    """A short guess at the unit a value outside ``col``'s range was
    written in, to append to the message, or ``''``: degrees in a ``_rad``
    column (the value above 2 pi in magnitude, or within range once
    converted), rpm or rad/s in a ``_hz`` column (within range once divided
    by 60 or by 2 pi). A value within range once scaled must lie at least
    twice as far out as the bounds (an overshoot of a few per cent is no
    unit slip)."""
    quantity, unit = split_unit(col.name)
    if abs(value) > MAGNITUDE_LIMIT or not _far_outside(col, value):
        return ""
    if unit == "rad" and (_inside(col, value * math.pi / 180.0) or abs(value) > 2.0 * math.pi):
        return f" (degrees? the column is in radians; name it {quantity}_deg to have it converted)"
    if unit == "hz":
        rpm, rad_s = _inside(col, value / 60.0), _inside(col, value / (2.0 * math.pi))
        if rpm and rad_s:
            return (f" (rpm or rad/s? the column is in Hz; name it {quantity}_rpm to have rpm converted, or divide "
                    "rad/s by 2 pi)")
        if rpm:
            return f" (rpm? the column is in Hz; name it {quantity}_rpm to have it converted)"
        if rad_s:
            return " (rad/s? the column is in Hz; divide by 2 pi)"
    return ""


def check_values(where: str, col: Column, values) -> None:
    """Check values given as an array against ``col``'s range, as
    :func:`read_table` checks a file's; raises :class:`DataError` naming
    ``where``, the column and the 1-based row of the first value outside."""
    out = first_outside(col, np.asarray(values, dtype=np.float64).reshape(-1))
    if out is not None:
        raise DataError(f"{where}: column {col.name!r}, row {out[0] + 1}: {out[1]}")


def split_unit(name: str) -> tuple[str, str]:
    """``'frequency_hz'`` -> ``('frequency', 'hz')``; a name without an
    underscore has no unit suffix (``('name', '')``)."""
    if "_" not in name:
        return name, ""
    quantity, unit = name.rsplit("_", 1)
    return quantity, unit


def check_header(path: Path, header: Sequence[str], header_line: int | None = None) -> None:
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


def check_columns(path: Path, header: Sequence[str], columns: Sequence[Column],
                   header_line: int | None = None) -> dict[str, tuple[str, float]]:
    """Check the header against the declared columns; returns, for every
    declared column the file holds, ``name -> (file column, factor)`` (factor
    1 unless the file gives the quantity in a unit of :data:`UNIT_FACTORS`)."""
    where = f" (header, line {header_line})" if header_line is not None else ""
    check_header(path, header, header_line)
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
