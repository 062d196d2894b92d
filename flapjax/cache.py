"""Compile-time settings of flapjax's commands: JAX's persistent
compilation cache and XLA's CPU options for flapjax's small kernels.

A compiled XLA program is written to disk the first time and read back on
later runs, so a second ``flapjax identify`` or ``flapjax evaluate`` skips
most compilation. The folder is, in order:

1. the ``path`` argument of :func:`enable_compilation_cache`;
2. the environment variable ``FLAPJAX_CACHE_DIR`` (an empty value, ``0`` or
   ``off`` disables the cache);
3. ``$XDG_CACHE_HOME/flapjax/jax`` (``~/.cache/flapjax/jax`` by default).

Clear it with ``python -m flapjax.cache clear`` (or ``rm -rf`` the folder
that ``python -m flapjax.cache`` prints). Entries are keyed by the program,
the JAX version and the device, so a stale entry is never used for a
different program; deleting the folder only costs recompilation.

:func:`prefer_fast_cpu_compile` adds :data:`FAST_CPU_FLAGS` to
``XLA_FLAGS``, each unless ``XLA_FLAGS`` already chooses it:

- XLA's classic CPU emitters compile flapjax's programs in about two thirds
  of the time and run them as fast (a cold ``flapjax identify --data
  identification/data/flight_log.csv``: 24 s -> 19 s on a 2-core CPU, the
  same numbers);
- no reductions handed to the YNNPACK library, whose per-call cost dwarfs
  arrays of a few numbers per world: the MJX X-quad step ran about 1.3x
  faster without (1024 worlds, same process, A/B), and the per-wing
  flapper 2.5x (:data:`flapjax.sim.tree.CPU_COMPILER_OPTIONS`, which its
  programs also pass per program).

:func:`flapjax.devices.setup` (what the commands and the benchmarks call
first) calls it; in your own scripts call that before JAX starts.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ENV_VAR = "FLAPJAX_CACHE_DIR"
_OFF = ("", "0", "off", "false", "no")


def default_cache_dir() -> Path | None:
    """The cache folder chosen by ``FLAPJAX_CACHE_DIR`` or the user's cache
    dir; ``None`` when the variable disables the cache."""
    env = os.environ.get(ENV_VAR)
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "flapjax" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None, *, min_compile_time_s: float = 0.5) -> Path | None:
    """Point JAX's persistent compilation cache at ``path`` (default
    :func:`default_cache_dir`) and return the folder, or ``None`` if the
    cache is disabled. Programs that compiled faster than
    ``min_compile_time_s`` are not stored. Call once, before the first
    compilation; calling again with the same folder is harmless."""
    folder = Path(path).expanduser() if path is not None else default_cache_dir()
    if folder is None:
        return None
    import jax

    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_s))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder


#: XLA flags of :func:`prefer_fast_cpu_compile` (CPU only: GPU and TPU
#: compilers ignore them): the classic emitters, no YNNPACK fusions.
FAST_CPU_FLAGS = ("--xla_cpu_use_fusion_emitters=false", "--xla_cpu_experimental_ynn_fusion_type=")


def prefer_fast_cpu_compile() -> bool:
    """Add each of :data:`FAST_CPU_FLAGS` to ``XLA_FLAGS`` unless they
    already set that option; returns whether any was added. XLA reads the
    variable when JAX starts its backend (the first computation), so call it
    before that; later it has no effect."""
    flags = os.environ.get("XLA_FLAGS", "")
    missing = [f for f in FAST_CPU_FLAGS if f.split("=", 1)[0] not in flags]
    if missing:
        os.environ["XLA_FLAGS"] = " ".join([flags, *missing]).strip()
    return bool(missing)


def clear_compilation_cache(path: str | os.PathLike | None = None) -> Path | None:
    """Delete the cache folder (default :func:`default_cache_dir`); returns it."""
    folder = Path(path).expanduser() if path is not None else default_cache_dir()
    if folder is not None and folder.exists():
        shutil.rmtree(folder)
    return folder


def main(argv=None) -> int:
    """``python -m flapjax.cache [clear]``: print (or clear) the cache folder."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "clear":
        print(f"cleared {clear_compilation_cache()}")
    elif argv:
        print("usage: python -m flapjax.cache [clear]", file=sys.stderr)
        return 2
    else:
        print(default_cache_dir())
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
