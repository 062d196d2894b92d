"""flapjax.cache: where the persistent compilation cache lives, how to clear it, and the CPU compile flag."""

import os

import jax

from flapjax import cache


def test_cache_folder_from_env_var_user_cache_dir_or_off(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "c"))
    assert cache.default_cache_dir() == tmp_path / "c"
    for off in ("", "0", "off"):
        monkeypatch.setenv(cache.ENV_VAR, off)
        assert cache.default_cache_dir() is None
        assert cache.enable_compilation_cache() is None
    monkeypatch.delenv(cache.ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_cache_dir() == tmp_path / "xdg" / "flapjax" / "jax"


def test_enable_points_jax_at_the_folder_and_clear_removes_it(tmp_path):
    before = jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs
    try:
        folder = cache.enable_compilation_cache(tmp_path / "jc")
        assert folder.is_dir() and jax.config.jax_compilation_cache_dir == str(folder)
    finally:  # the suite's own cache (conftest) again
        jax.config.update("jax_compilation_cache_dir", before[0])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])
    (folder / "entry").write_text("x")
    assert cache.clear_compilation_cache(folder) == folder and not folder.exists()
    assert cache.main(["bogus"]) == 2


def test_fast_cpu_flags_are_added_unless_the_user_chose(monkeypatch):
    from flapjax.cache import FAST_CPU_FLAGS, prefer_fast_cpu_compile

    emitters, ynn = FAST_CPU_FLAGS
    assert emitters == "--xla_cpu_use_fusion_emitters=false" and ynn == "--xla_cpu_experimental_ynn_fusion_type="
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    assert prefer_fast_cpu_compile() is True
    assert os.environ["XLA_FLAGS"] == f"--xla_force_host_platform_device_count=2 {emitters} {ynn}"
    assert prefer_fast_cpu_compile() is False  # once is enough
    # An option the user set is kept; the other one is still added.
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert prefer_fast_cpu_compile() is True and os.environ["XLA_FLAGS"] == f"--xla_cpu_use_fusion_emitters=true {ynn}"
    monkeypatch.delenv("XLA_FLAGS")
    assert prefer_fast_cpu_compile() is True and os.environ["XLA_FLAGS"] == f"{emitters} {ynn}"


def test_fast_cpu_flags_are_accepted_by_this_xla():
    """XLA aborts the process on a flag it does not know: start a backend
    with both flags in a child process."""
    import subprocess
    import sys

    from flapjax.cache import FAST_CPU_FLAGS

    env = dict(os.environ, XLA_FLAGS=" ".join(FAST_CPU_FLAGS), JAX_PLATFORMS="cpu")
    code = "import jax, jax.numpy as jnp\nprint(float(jnp.sum(jnp.arange(4.0) ** 2)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "14.0", out.stderr[-2000:]


def test_importing_flapjax_leaves_the_jax_backend_unstarted():
    """XLA reads XLA_FLAGS (and the CLI's compile flag) when JAX starts its
    backend: importing flapjax must not start it (no arrays built at import,
    e.g. as default arguments), and defaults then follow the x64 setting the
    user picks after importing."""
    import subprocess
    import sys

    modules = ("flapjax", "flapjax.cli", "flapjax.aero", "flapjax.rotor", "flapjax.control", "flapjax.sim",
               "flapjax.sim.flapper", "flapjax.sim.multirotor", "flapjax.tasks", "flapjax.identify",
               "flapjax.identify.flapper", "flapjax.identify.multirotor", "flapjax.evaluate", "flapjax.render",
               "flapjax.demo", "flapjax.scene", "flapjax.noise", "flapjax.rng", "flapjax.files", "flapjax.math")
    code = (f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)\n"
            "from jax._src import xla_bridge\nprint(xla_bridge.backends_are_initialized())\n"
            "import jax\njax.config.update('jax_enable_x64', True)\nfrom flapjax import aero\n"
            "print(aero.AeroOptions().coefficients.normal_coefficients.dtype, aero.Dickinson1999().cop.cop_coefficients.dtype)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-2:] == ["False", "float64 float64"]


def test_subpackages_load_on_first_use():
    """``import flapjax`` loads neither MuJoCo nor the tasks, yet
    ``flapjax.tasks.make`` and ``flapjax.sim.flapper`` work right after it."""
    import subprocess
    import sys

    code = ("import sys, flapjax\nprint('mujoco' in sys.modules, 'flapjax.tasks' in sys.modules)\n"
            "print(callable(flapjax.tasks.make), callable(flapjax.sim.flapper.make_robot), 'mujoco' in sys.modules)\n"
            "try:\n    flapjax.taks\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines() == ["False False", "True True True", "module 'flapjax' has no attribute 'taks'"]
