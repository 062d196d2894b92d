"""The one gate for files a user hands to flapjax, and the one way results
are written. Plain Python and NumPy.

Reading (:func:`check_input_file`, :func:`read_bytes`, :func:`read_text`,
:func:`load_npz`):

- only regular files are read: a folder, a FIFO (named pipe), a device
  (``/dev/zero``) or a socket is refused by name, from ``os.stat``, before
  anything is opened (a FIFO is never opened: reading one would wait
  forever);
- a file larger than :func:`input_limit` bytes (default 256 MiB; the
  environment variable ``FLAPJAX_MAX_INPUT_MB`` sets another) is refused
  before it is read, and no read returns more than the limit (a CSV
  table grows several times over once parsed: 256 MiB of text holds
  millions of rows, more than any fit here can take);
- an ``.npz`` archive is checked from its zip directory (the size of every
  member once decompressed) and from each member's ``.npy`` header (shape,
  dtype) before any member is decompressed: a small archive that would
  expand to gigabytes, an object array, or a header that claims more data
  than its member holds are refused.

Writing (:func:`output_folder`, :func:`check_output_file`,
:func:`atomic_write`, :func:`write_text`, :func:`save_figure`): the output
folder is never empty text (``--out ""`` would be the current folder); a
symbolic link, a folder or a special file already where a result goes is
refused (writing through a link would overwrite its target, outside the
output folder); a file is written to a temporary file in the same folder
and renamed over its name (never half a file), and an ``OSError`` (a full
disk, a file-size limit) names the file.

:func:`check_fit_memory` refuses, before any XLA work, a fit whose arrays
would not fit in :func:`available_memory`.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from flapjax.validation import ConfigError

__all__ = ["DEFAULT_INPUT_LIMIT_MB", "atomic_write", "available_memory", "check_fit_memory", "check_input_file",
           "check_output_file", "format_size", "host_available_memory", "input_limit", "load_npz", "output_folder",
           "read_bytes", "read_settings", "read_text", "save_figure", "table_memory_limit", "write_text"]

#: Largest input file read by default [MiB] (``FLAPJAX_MAX_INPUT_MB`` overrides).
DEFAULT_INPUT_LIMIT_MB = 256
LIMIT_ENV = "FLAPJAX_MAX_INPUT_MB"


def input_limit() -> int:
    """Largest input file, and largest decompressed ``.npz`` content, read
    [bytes]: ``FLAPJAX_MAX_INPUT_MB`` MiB when set, else
    :data:`DEFAULT_INPUT_LIMIT_MB`."""
    text = os.environ.get(LIMIT_ENV)
    if text is None or not text.strip():
        return DEFAULT_INPUT_LIMIT_MB * 2**20
    try:
        mb = float(text)
    except ValueError:
        mb = math.nan
    if not (math.isfinite(mb) and mb > 0):
        raise ConfigError(f"{LIMIT_ENV}: must be a positive number of MiB, got {text!r}")
    return int(mb * 2**20)


def table_memory_limit() -> int:
    """Largest memory a parsed input table may take [bytes]: 4 times
    :func:`input_limit` (1 GiB by default)."""
    return 4 * input_limit()


def format_size(n: float) -> str:
    """``n`` bytes in KiB, MiB or GiB (one decimal)."""
    return _size(n)


def _size(n: float) -> str:
    """``n`` bytes in KiB, MiB or GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 2**10:.1f} KiB"


def _kind(mode: int) -> str | None:
    """What a file that is not a regular file is, from its ``st_mode``."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_input_file(path: str | Path, *, what: str = "input file",
                     error: type[ConfigError] = ConfigError) -> os.stat_result:
    """``os.stat`` of ``path`` after checking, without opening it, that it
    exists, is a regular file and is no larger than :func:`input_limit`.
    Raises ``error`` naming the file and ``what`` it should be."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: cannot read the {what} (no such file)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    kind = _kind(st.st_mode)
    if kind is not None:
        raise error(f"{path}: cannot read the {what}: it is {kind}, expected a regular file")
    limit = input_limit()
    if st.st_size > limit:
        raise error(f"{path}: the {what} is {_size(st.st_size)}, above the input limit of {_size(limit)} "
                    f"(set {LIMIT_ENV} to read larger files)")
    return st


def read_bytes(path: str | Path, *, what: str = "input file", size: int = -1,
               error: type[ConfigError] = ConfigError) -> bytes:
    """The first ``size`` bytes of ``path`` (all by default), read only after
    :func:`check_input_file` and never more than :func:`input_limit`."""
    check_input_file(path, what=what, error=error)
    limit = input_limit()
    want = limit + 1 if size < 0 else min(size, limit + 1)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO swapped in after the check does not block
        with os.fdopen(fd, "rb") as fh:
            if _kind(os.fstat(fh.fileno()).st_mode) is not None:
                raise error(f"{path}: cannot read the {what}: it is no longer a regular file")
            data = fh.read(want)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise error(f"{path}: the {what} is larger than the input limit of {_size(limit)} "
                    f"(set {LIMIT_ENV} to read larger files)")
    return data


def read_text(path: str | Path, *, what: str = "input file", encoding: str = "utf-8",
              error: type[ConfigError] = ConfigError) -> str:
    """The text of ``path`` through :func:`read_bytes`; ``error`` naming the
    file and the byte when it is not ``encoding`` text."""
    raw = read_bytes(path, what=what, error=error)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(f"{path}: cannot read the {what}: not a text file (UTF-8 expected: {exc.reason} at byte "
                    f"{exc.start})") from None


def _npy_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from a member's ``.npy`` header (a few hundred bytes
    decompressed, not the member)."""
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    return tuple(int(s) for s in shape), np.dtype(dtype)


def _check_npz_members(path: Path, zf: zipfile.ZipFile, error: type[ConfigError]) -> None:
    """Refuse an archive whose members would decompress beyond the limit, or
    whose ``.npy`` headers claim objects or more data than the member holds."""
    limit = input_limit()
    infos = zf.infolist()
    total = sum(i.file_size for i in infos)
    if total > limit:
        big = max(infos, key=lambda i: i.file_size)
        raise error(f"{path}: the .npz archive would decompress to {_size(total)} (member {big.filename!r}: "
                    f"{_size(big.file_size)}), above the input limit of {_size(limit)} "
                    f"(set {LIMIT_ENV} to read larger files)")
    for info in infos:
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        try:
            shape, dtype = _npy_header(zf, info)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
            raise error(f"{path}: column {name!r}: not a NumPy array ({exc})") from None
        if dtype.hasobject:
            raise error(f"{path}: column {name!r}: holds Python objects (an object array), not numbers; "
                        "save it as a numeric array")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > info.file_size:
            raise error(f"{path}: column {name!r}: its header claims shape {shape} of {dtype} ({_size(nbytes)}) "
                        f"but the member holds {info.file_size} bytes")


def load_npz(path: str | Path, *, error: type[ConfigError] = ConfigError) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, by name, after
    :func:`check_input_file` and the member checks (module docstring)."""
    path = Path(path)
    check_input_file(path, what=".npz archive", error=error)
    try:
        with zipfile.ZipFile(path) as zf:
            _check_npz_members(path, zf, error)
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise error(f"{path}: cannot read the data file as an .npz archive ({exc})") from None


def available_memory() -> int | None:
    """Bytes free for a batch: the default device's free memory, or the
    host's available memory on CPU (None when unknown)."""
    try:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))
    except Exception:  # pragma: no cover - backends without memory stats
        pass
    return host_available_memory()


def host_available_memory() -> int | None:
    """Bytes of host memory available (``MemAvailable``), without starting
    JAX (None when unknown): what parsing a file may take."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


def check_fit_memory(where: str, what: str, need_bytes: float, *, fraction: float = 0.5) -> None:
    """Raise :class:`ConfigError` naming ``where`` when a fit's estimated
    ``need_bytes`` exceed ``fraction`` of :func:`available_memory` (before
    any XLA work); no check when the free memory is unknown."""
    free = available_memory()
    if free is None or need_bytes <= fraction * free:
        return
    raise ConfigError(f"{where}: {what} needs about {_size(need_bytes)}, more than {fraction:.0%} of the "
                      f"{_size(free)} free; fit fewer rows (a shorter or decimated file)")


def output_folder(out: str | Path, *, name: str = "--out") -> Path:
    """``out`` as a folder path; :class:`ConfigError` naming ``name`` when it
    is empty or only whitespace (that would be the current folder)."""
    if out is None or not str(out).strip():
        raise ConfigError(f"{name}: the output folder is empty text; give a folder name (e.g. out/run)")
    return Path(out)


def check_output_file(path: str | Path) -> Path:
    """``path`` after checking, without following links, that nothing but a
    regular file is there: a symbolic link (writing through it would change
    its target, outside the output folder), a folder or a special file is
    refused with :class:`ConfigError` naming it."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except NotADirectoryError:
        raise ConfigError(f"{path}: cannot write the result: {str(path.parent)!r} is not a folder") from None
    if stat.S_ISLNK(st.st_mode):
        raise ConfigError(f"{path}: is a symbolic link; flapjax does not write through links (remove it or "
                          "choose another output folder)")
    kind = _kind(st.st_mode)
    if kind is not None:
        raise ConfigError(f"{path}: cannot write the result: {kind} is there")
    return path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()


@contextlib.contextmanager
def atomic_write(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path in ``path``'s folder to write; when the block
    ends it is renamed over ``path`` (readers see the old file or the new
    one, never part of one). :func:`check_output_file` first; an
    ``OSError`` while writing is raised again naming ``path``."""
    path = check_output_file(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
        os.close(fd)
        os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide results from the plots beside them
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, check_output_file(path))  # a link made meanwhile is refused, not followed
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write the file ({exc.strerror or exc})", str(path)) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`atomic_write`."""
    with atomic_write(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def save_figure(fig, path: str | Path, *, dpi: int) -> Path:
    """``fig.savefig`` to ``path`` through :func:`atomic_write` (the format
    from ``path``'s suffix)."""
    path = Path(path)
    with atomic_write(path) as tmp:
        fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    return path


def read_settings(path: str | Path, *, what: str = "settings") -> dict[str, Any]:
    """The top-level table (setting name -> value) of a ``.toml`` or
    ``.json`` file (by suffix; any other suffix is read as TOML) through :func:`read_text`; JSON strictly
    (:func:`flapjax.validation.loads_json`: no repeated keys, no NaN or
    Infinity). :class:`ConfigError` naming the file when it cannot be read
    or parsed, or does not hold a table."""
    import tomllib

    from flapjax.validation import loads_json

    path = Path(path)
    text = read_text(path, what=f"{what} file")
    if path.suffix.lower() == ".json":
        data = loads_json(text, where=str(path))
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: cannot parse the {what} file ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of {what} keys at the top level, got {type(data).__name__}")
    return data
