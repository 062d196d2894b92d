"""Test configuration: the physics tests run in float64."""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import pathlib  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
# Identical programs compiled by several test files (and both test workers)
# are compiled once per run: a persistent cache inside the checkout.
# FLAPJAX_CACHE_DIR points the CLI tests' own enable_compilation_cache()
# (flapjax/cache.py) at the same folder instead of the user's cache dir.
os.environ.setdefault("FLAPJAX_CACHE_DIR", str(pathlib.Path(__file__).resolve().parent.parent / ".jax_cache"))

from flapjax.cache import enable_compilation_cache  # noqa: E402

enable_compilation_cache(min_compile_time_s=1.0)
