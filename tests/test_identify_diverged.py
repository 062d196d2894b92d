"""Identification ignores worlds that diverged, and says how many."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import identify as idf
from flapjax.identify import flapper as studies

K_F = 1.65e-4
FREQS = np.array([15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0])


def _data(bad_row=None):
    fz = K_F * FREQS**2 * (1 + 0.001 * np.sin(FREQS))  # slightly noisy measurements
    healthy = np.ones_like(FREQS, dtype=bool)
    if bad_row is not None:
        fz[bad_row] = np.nan
        healthy[bad_row] = False
    valid = idf.valid_rows(fz, healthy)
    return idf.Measurements(inputs=jnp.asarray(FREQS), targets=jnp.asarray(fz),
                            scale=jnp.sqrt(jnp.mean(jnp.asarray(fz[valid]) ** 2)), valid=jnp.asarray(valid)), fz


def test_a_diverged_world_is_ignored_and_counted():
    cfg = studies.validate_config(studies.default_config(quick=True))["lift"]
    clean, fz = _data()
    hurt, _ = _data(bad_row=3)
    assert clean.n_ignored == 0 and hurt.n_ignored == 1
    reference = idf.slope_through_origin(np.delete(FREQS, 3) ** 2, np.delete(fz, 3))
    fit = studies.fit_averaged(studies.predict_lift, hurt, {"k_f": 1.3 * K_F}, ["k_f"], cfg)
    assert float(fit.params["k_f"]) == pytest.approx(reference, rel=1e-6)
    loss = idf.least_squares(studies.predict_lift)
    t, n = idf.split({"k_f": K_F}, ["k_f"])
    value, grad = jax.value_and_grad(lambda t: loss(idf.combine(t, n), hurt))(t)
    assert np.isfinite(float(value))
    assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grad))


def test_valid_rows_needs_health_and_finite_values():
    targets = np.array([[1.0, 2.0], [np.inf, 0.0], [3.0, 4.0]])
    np.testing.assert_array_equal(idf.valid_rows(targets), [True, False, True])
    np.testing.assert_array_equal(idf.valid_rows(targets, healthy=[False, True, True]), [False, False, True])
