"""Test configuration: the physics tests run in float64."""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# Compile time is most of the suite's wall time. On CPU, XLA's classic
# emitters compile MJX steps and their gradients in two thirds of the time
# and run them as fast (the flapper tests: 152 s -> 102 s). `make test` also
# turns LLVM optimization off through FLAPJAX_TEST_XLA_FLAGS: its short
# programs compile in half the time again, while the long rollouts of the
# slow tests would run several times slower. The physics is the same; the
# tests' tolerances hold either way. Set before JAX starts its backend
# (workers and notebook kernels inherit it); XLA_FLAGS given by the caller
# are kept and come first. FLAPJAX_TEST_XLA_FLAGS replaces these flags
# (empty: XLA's defaults).
_TEST_XLA_FLAGS = os.environ.get("FLAPJAX_TEST_XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false").strip()
if _TEST_XLA_FLAGS and _TEST_XLA_FLAGS not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_TEST_XLA_FLAGS}".strip()

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


# Test files by measured wall time, heaviest first. `make test` hands whole
# files to its two workers in collection order (--no-loadscope-reorder), so
# starting with the long files lets both workers finish together; files not
# listed keep their usual order after these.
HEAVY_FIRST = (
    "tests/test_sim_flapper.py",
    "tests/test_tasks.py",
    "tests/test_evaluate.py",
    "notebooks/06_identify_from_data.ipynb",
    "notebooks/03_identification.ipynb",
    "tests/test_sim_multirotor.py",
    "notebooks/04_near_structures.ipynb",
    "tests/test_tasks_rl.py",
    "tests/test_sim_rigid_multirotor.py",
    "tests/test_identify.py",
    "tests/test_aero_quasi_steady.py",
    "tests/test_divergence.py",
    "tests/test_flapper_periodic_start.py",
    "notebooks/05_reinforcement_learning.ipynb",
    "tests/test_sim_rigid_flapper.py",
    "notebooks/07_identify_from_a_flight_log.ipynb",
    "tests/test_reliability_health.py",
    "tests/test_sharding.py",
    "tests/test_sim_tree.py",
    "tests/test_sweep_compile.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
