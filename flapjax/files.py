"""Result files: JSON that never ends up half written, and output folders
held by one run. Plain Python and NumPy, used by every package that writes
results (identification, evaluation, benchmarks).

:func:`to_jsonable` / :func:`to_arrays` map pytrees of arrays to JSON values
and back; :func:`write_json` writes atomically under a lock (an interrupted
run or a concurrent writer never leaves half a file); :func:`read_json`
names the file it cannot parse; :func:`lock_output_dir` checks an output
folder and holds it for one run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import math
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

import jax.numpy as jnp
import numpy as np

from flapjax.safe_io import atomic_write, output_folder, read_text
from flapjax.validation import ConfigError, loads_json


def to_jsonable(x: Any) -> Any:
    """A pytree of arrays, numbers, strings and dicts as plain JSON values
    (arrays as nested lists, non-finite numbers as null)."""
    if isinstance(x, Mapping):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return to_jsonable(dataclasses.asdict(x))
    if isinstance(x, (bool, str, type(None))):
        return x
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    arr = np.asarray(x)
    if arr.dtype == bool:
        return arr.tolist()
    if np.issubdtype(arr.dtype, np.number):
        arr = arr.astype(float)
        if arr.ndim == 0:
            v = float(arr)
            return v if math.isfinite(v) else None
        return [to_jsonable(v) for v in arr]
    return str(x)


def to_arrays(x: Any) -> Any:
    """JSON numbers and number lists back to arrays; strings and dicts as they are."""
    if isinstance(x, Mapping):
        return {k: to_arrays(v) for k, v in x.items()}
    if isinstance(x, bool) or isinstance(x, str) or x is None:
        return x
    if isinstance(x, (int, float)):
        return jnp.asarray(float(x))
    if isinstance(x, list):
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError):
            return [to_arrays(v) for v in x]
        return jnp.asarray(arr)
    return x


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``'s folder (blocking) while
    replacing ``path``, so concurrent writers take turns (and no lock file is
    left beside the results)."""
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _nonfinite_as_null(x: Any) -> Any:
    """``x`` with every NaN or infinite float replaced by None (JSON has no
    NaN: written as ``NaN`` it would be a file that no strict reader,
    :func:`read_json` included, reads back)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {k: _nonfinite_as_null(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_nonfinite_as_null(v) for v in x]
    return x


def write_json(path: str | Path, obj: Any, *, indent: int = 1) -> None:
    """Write ``obj`` as JSON (a NaN or infinite float as ``null``, as
    :func:`to_jsonable` writes it): a uniquely named temporary file in the same
    folder, flushed to disk, then renamed over ``path`` under a lock
    (:func:`flapjax.safe_io.atomic_write`: a symbolic link or a special file
    at ``path`` is refused, an ``OSError`` names ``path``); the file gets
    the permissions any new file gets (0666 less the umask).

    Readers see either the old or the new file, never a part of one, and
    concurrent writers (threads or processes) never share a temporary file.
    """
    path = Path(path)
    text = json.dumps(_nonfinite_as_null(obj), indent=indent, allow_nan=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create the folder ({exc.strerror or exc})", str(path)) from None
    with _file_lock(path), atomic_write(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())


class OutputLock:
    """An output folder held by one run (:func:`lock_output_dir`); release it
    with :meth:`release` or by using it as a context manager."""

    def __init__(self, path: Path, fd: int):
        self.path, self._fd = path, fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "OutputLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock_output_dir(path: str | Path, *, name: str = "out") -> OutputLock:
    """Check that ``path`` is (or can be created as) a writable folder and
    take it for this run, before anything is simulated.

    Raises :class:`ConfigError` naming ``name`` when ``path`` is empty text
    (that would be the current folder), is a file, is not writable, or
    another run holds it (two runs into one folder would redo each other's
    work and overwrite each other's results), or its lock file is a link.
    """
    out = output_folder(path, name=name)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{name}: {str(out)!r} is a file, expected a folder for the results")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot create the folder {str(out)!r} ({exc.strerror})") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"{name}: the folder {str(out)!r} is not writable")
    try:
        fd = os.open(out / ".flapjax.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)  # never a link's target
    except OSError as exc:
        raise ConfigError(f"{name}: cannot write into {str(out)!r} ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            raise ConfigError(f"{name}: another flapjax run is writing into {str(out)!r}; wait for it to finish "
                              "or choose another folder") from None
        raise
    return OutputLock(out, fd)


def read_json(path: str | Path) -> Any:
    """Parsed JSON, read through :func:`flapjax.safe_io.read_text` (a regular
    file within the input limit); :class:`ConfigError` when the file is not
    valid JSON or an object repeats a key (:func:`flapjax.validation.loads_json`)."""
    return loads_json(read_text(path, what="JSON file"), where=str(path))
