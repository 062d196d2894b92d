"""flapjax.cache: where the persistent compilation cache lives and how to clear it."""

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
