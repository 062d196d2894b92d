"""Test configuration: the physics tests run in float64."""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import pathlib  # noqa: E402

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
# Identical programs compiled by several test files (and both test workers)
# are compiled once per run: a persistent cache inside the checkout.
jax.config.update("jax_compilation_cache_dir", str(pathlib.Path(__file__).resolve().parent.parent / ".jax_cache"))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
