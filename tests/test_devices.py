"""One JAX CPU device per core (flapjax.devices): the flag lands in XLA_FLAGS
before JAX starts, the ``flapjax`` command sets it, and a call after JAX has
started fails loudly instead of silently doing nothing."""

import os
import subprocess
import sys
import textwrap

import pytest

from flapjax import devices
from flapjax.validation import ConfigError


def test_error_when_backend_already_started():
    import jax

    jax.devices()  # this session's backend runs with one CPU device
    assert devices.backend_started()
    before = os.environ.get("XLA_FLAGS")
    with pytest.raises(ConfigError, match="already started.*use_all_cores"):
        devices.use_all_cores(len(jax.devices()) + 2)
    assert os.environ.get("XLA_FLAGS") == before  # nothing half-set
    if len(jax.devices()) == 1:  # asking for what JAX already has is harmless
        assert devices.use_all_cores(1) == 1


def test_flag_merged_into_existing_flags(monkeypatch):
    monkeypatch.setattr(devices, "backend_started", lambda: False)
    monkeypatch.delenv(devices.ENV_VAR, raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_force_host_platform_device_count=7")
    assert devices.use_all_cores(3) == 3
    assert os.environ["XLA_FLAGS"].split() == ["--xla_cpu_use_fusion_emitters=false",
                                               "--xla_force_host_platform_device_count=3"]
    # No argument, no FLAPJAX_CORES: a count already in XLA_FLAGS is kept ...
    assert devices.use_all_cores() == 3
    # ... and without one, one device per core.
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false")
    assert devices.use_all_cores() == devices.core_count()
    assert f"--xla_force_host_platform_device_count={devices.core_count()}" in os.environ["XLA_FLAGS"]


def test_env_var_opts_out_and_bad_values_are_named(monkeypatch):
    monkeypatch.setattr(devices, "backend_started", lambda: False)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setenv(devices.ENV_VAR, "1")
    assert devices.use_all_cores() == 1
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=1"
    monkeypatch.setenv(devices.ENV_VAR, "two")
    with pytest.raises(ConfigError, match="FLAPJAX_CORES"):
        devices.use_all_cores()
    with pytest.raises(ConfigError, match="n: must be a positive integer"):
        devices.use_all_cores(0)


CLI_SCRIPT = textwrap.dedent(
    """
    import os
    from flapjax import devices
    from flapjax.cli import app
    assert not devices.backend_started(), "importing the command started JAX"
    try:
        app(["identify", "--help"], standalone_mode=False)
    finally:
        import jax
        print("jax devices", len(jax.devices()))
        print("XLA_FLAGS", os.environ["XLA_FLAGS"])
    """
)


def test_command_uses_the_requested_devices():
    # The flapjax command sets the count before JAX starts (nothing it imports
    # starts the backend), says so on stderr, and JAX then has that many devices.
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAX_PLATFORMS="cpu", FLAPJAX_CORES="3", FLAPJAX_CACHE_DIR="off")
    proc = subprocess.run([sys.executable, "-c", CLI_SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "JAX's CPU backend uses 3 device(s) (FLAPJAX_CORES=3)" in proc.stderr
    assert "jax devices 3" in proc.stdout
    # ... and XLA's CPU options for small kernels (flapjax.cache.FAST_CPU_FLAGS).
    from flapjax.cache import FAST_CPU_FLAGS

    flags = next(line for line in proc.stdout.splitlines() if line.startswith("XLA_FLAGS")).split()[1:]
    assert set(FAST_CPU_FLAGS) <= set(flags)
