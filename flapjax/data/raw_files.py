"""Raw reading of measured-data files: the bytes of a CSV or NPZ file to
text lines or arrays, and :class:`DataError` for a file that cannot be
used. :mod:`flapjax.data.tables` checks what they hold."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from flapjax import safe_io
from flapjax.validation import ConfigError


class DataError(ConfigError):
    """A data file cannot be used; the message names the file, the column and the row."""


def is_npz(path: Path) -> bool:
    """Whether ``path`` names an .npz archive (by its suffix)."""
    return path.suffix.lower() == ".npz"


def _read_bytes(path: Path, size: int = -1) -> bytes:
    """The file's first ``size`` bytes (all by default), through the one
    reading gate (:func:`flapjax.safe_io.read_bytes`: a regular file within
    the input limit); :class:`DataError` when it cannot be read."""
    return safe_io.read_bytes(path, what="data file", size=size, error=DataError)


def open_text(path: Path) -> str:
    """The file's text (UTF-8, a byte-order mark dropped)."""
    raw = _read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: cannot read the data file as UTF-8 text (byte {exc.start}); "
                        "expected a CSV table or an .npz archive") from None


#: Peak bytes that parsing one CSV cell takes (the line, its cells as Python
#: strings, the row lists; measured with tracemalloc on a 10-column flight
#: log: 268 bytes per cell, 32 times the file's size).
PARSE_BYTES_PER_CELL = 270


def check_parse_memory(path: Path, text: str) -> None:
    """Refuse, before any line is parsed, a CSV text whose parsed rows would
    need more than :func:`flapjax.safe_io.table_memory_limit` (or half the
    free memory): :class:`DataError` naming the file, its rows and columns
    and the estimate (a 2e6-row log would take gigabytes as Python rows)."""
    n_lines = text.count("\n") + 1
    head = next((ln for ln in text[:65536].splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")
    n_cols = head.count(",") + 1
    need = n_lines * n_cols * PARSE_BYTES_PER_CELL
    limit = safe_io.table_memory_limit()
    free = safe_io.host_available_memory()
    if need > limit or (free is not None and need > 0.5 * free):
        raise DataError(f"{path}: {n_lines} lines of {n_cols} columns: parsing the CSV table needs about "
                        f"{safe_io.format_size(need)}, above the {safe_io.format_size(limit)} allowed for a table "
                        f"(4 x the input limit, set by {safe_io.LIMIT_ENV}) or half the free memory; decimate "
                        "the log or save its columns as an .npz archive (numpy.savez), read without parsing")


def csv_lines(path: Path) -> list[tuple[int, list[str]]]:
    """(1-based file line, cells) of every non-comment, non-blank line,
    after :func:`check_parse_memory`."""
    text = open_text(path)
    check_parse_memory(path, text)
    rows: list[tuple[int, list[str]]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            cells = next(csv.reader(io.StringIO(line), skipinitialspace=True))
        except csv.Error as exc:
            raise DataError(f"{path}: line {lineno}: cannot parse the CSV line ({exc})") from None
        rows.append((lineno, [c.strip() for c in cells]))
    return _without_trailing_empty_columns(rows)


def _without_trailing_empty_columns(rows: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    """``rows`` less the empty cells every row, the header included, ends
    with (a spreadsheet's trailing separators, ``a,b,``): no column is
    there. A trailing empty cell that not every row has stays, for the
    table checks to name."""
    if not rows:
        return rows
    k = min(_trailing_empty(cells) for _, cells in rows)
    return rows if k == 0 else [(line, cells[:-k]) for line, cells in rows]


def _trailing_empty(cells: list[str]) -> int:
    """How many empty cells ``cells`` ends with."""
    n = 0
    while n < len(cells) and cells[-1 - n] == "":
        n += 1
    return n


def _found(start: bytes) -> str:
    """What a file that is not a zip archive holds, from its first bytes."""
    if not start:
        return "an empty file"
    if start.startswith(b"\x93NUMPY"):
        return "a single .npy array (numpy.save); write the columns with numpy.savez(path, name=array, ...)"
    try:
        text = start.decode("utf-8-sig")
    except UnicodeDecodeError:
        return f"binary data beginning {start[:16]!r}"
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"text beginning {first[:40]!r}; a CSV table must be named .csv"


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an .npz archive, by name, after the archive's members
    are checked from their zip and ``.npy`` headers
    (:func:`flapjax.safe_io.load_npz`: nothing is decompressed beyond the
    input limit, object arrays are refused)."""
    start = _read_bytes(path, 64)
    if not start.startswith((b"PK\x03\x04", b"PK\x05\x06")):  # what numpy.load takes for a zip archive
        raise DataError(f"{path}: cannot read the data file as an .npz archive: it is not one (a zip archive, "
                        f"as numpy.savez writes); found {_found(start)}")
    return safe_io.load_npz(path, error=DataError)
