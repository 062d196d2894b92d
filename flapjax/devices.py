"""Use every CPU core: one JAX host device per core.

XLA:CPU runs one compiled program on one core (it does not split a batch of
worlds over threads). JAX can present the host as several devices, one per
core, with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``; the world
axis of a batched rollout is then split over them
(:mod:`flapjax.sim.sharding` does it by default), and each core steps its
own slice of worlds. On a 2-core CPU this ran the rigid X-quad benchmark at
about 1.8x the one-device rate.

The flag only takes effect if it is set before JAX starts its backend (the
first computation or ``jax.devices()`` call), so the ``flapjax`` command and
``python -m benchmarks.run`` call :func:`setup` first (:func:`use_all_cores`
and XLA's CPU options for flapjax's kernels). In a script::

    import flapjax.devices
    print(flapjax.devices.setup())         # before any JAX computation
    import jax
    ...

``FLAPJAX_CORES=N`` overrides the count (``FLAPJAX_CORES=1``: one device,
the JAX default). The setting affects only the CPU platform; on a GPU the
GPU devices are used as before. Importing this module does not import JAX.
"""

from __future__ import annotations

import os
import re
import sys

from flapjax.validation import ConfigError

#: Environment variable that overrides the device count (1 = opt out).
ENV_VAR = "FLAPJAX_CORES"
FLAG = "--xla_force_host_platform_device_count"
_FLAG_RE = re.compile(r"--xla_force_host_platform_device_count=\S*")


def core_count() -> int:
    """Cores this process may run on (its CPU affinity where the OS reports
    it, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def backend_started() -> bool:
    """Whether JAX has already created its devices (so XLA flags and the
    device count can no longer change). Never starts the backend itself."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - a JAX without the private module
        return False
    return bool(xla_bridge.backends_are_initialized())


def _requested(n: int | None) -> int:
    env = os.environ.get(ENV_VAR, "").strip()
    if n is None and env:
        try:
            n = int(env)
        except ValueError:
            raise ConfigError(f"{ENV_VAR}: must be a positive integer, got {env!r}") from None
        field = ENV_VAR
    else:
        field = "n"
    if n is None:
        # A count the user already put in XLA_FLAGS wins over the core count.
        return forced_device_count() or core_count()
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ConfigError(f"{field}: must be a positive integer number of CPU devices, got {n!r}")
    return int(n)


def forced_device_count() -> int | None:
    """The device count that ``XLA_FLAGS`` forces now (None: not set)."""
    m = _FLAG_RE.search(os.environ.get("XLA_FLAGS", ""))
    if m is None:
        return None
    try:
        return int(m.group(0).split("=", 1)[1])
    except ValueError:
        return None


def use_all_cores(n: int | None = None) -> int:
    """Make JAX's CPU backend present ``n`` devices (default: one per core,
    or ``FLAPJAX_CORES`` when set) by setting
    ``--xla_force_host_platform_device_count`` in ``XLA_FLAGS``, keeping the
    other flags there. Returns the device count that JAX will use.

    Call before JAX's first computation. Raises :class:`ConfigError` if the
    backend has already started with a different count (the flag would
    silently do nothing); calling again with the same count is harmless.
    """
    want = _requested(n)
    if backend_started():
        import jax

        have = jax.local_device_count("cpu") if _has_cpu(jax) else None
        if have == want and (want == 1 or forced_device_count() == want):
            return want
        raise ConfigError(
            f"n: JAX's backend has already started (with {have} CPU device(s)); call "
            f"flapjax.devices.use_all_cores() before the first JAX computation, or set "
            f"XLA_FLAGS={FLAG}={want} in the environment before starting Python")
    flags = _FLAG_RE.sub("", os.environ.get("XLA_FLAGS", "")).split()
    os.environ["XLA_FLAGS"] = " ".join(flags + [f"{FLAG}={want}"])
    return want


def _has_cpu(jax) -> bool:
    try:
        jax.devices("cpu")
    except RuntimeError:
        return False
    return True


def describe() -> str:
    """One line naming the devices JAX uses (starts the backend)."""
    import jax

    devs = jax.devices()
    kind = devs[0].platform
    if kind == "cpu":
        return (f"flapjax: {len(devs)} CPU device(s) on {core_count()} core(s) "
                f"({ENV_VAR}=1 for one device)")
    return f"flapjax: {len(devs)} {kind.upper()} device(s) ({devs[0].device_kind})"


def setup() -> str:
    """What to call first, before any JAX computation (the ``flapjax``
    command and ``python -m benchmarks.run`` do): XLA's CPU options for
    flapjax's small kernels (:func:`flapjax.cache.prefer_fast_cpu_compile`:
    faster compiles, and the MJX step about 1.3x faster) and
    :func:`use_all_cores`, unless JAX has already started (then the devices
    and flags it has are kept). Returns the one line that says what it
    chose. Does not start the backend; raises :class:`ConfigError` on a bad
    ``FLAPJAX_CORES``."""
    if backend_started():
        return describe()
    from flapjax.cache import prefer_fast_cpu_compile

    preset = forced_device_count()
    n = use_all_cores()
    prefer_fast_cpu_compile()
    if os.environ.get(ENV_VAR, "").strip():
        how = f"{ENV_VAR}={os.environ[ENV_VAR].strip()}"
    elif preset is not None:
        how = "from XLA_FLAGS"
    else:
        how = f"one per core; {ENV_VAR}=1 for one"
    return f"flapjax: JAX's CPU backend uses {n} device(s) ({how})"


__all__ = ["ENV_VAR", "backend_started", "core_count", "describe", "forced_device_count",
           "setup", "use_all_cores"]
