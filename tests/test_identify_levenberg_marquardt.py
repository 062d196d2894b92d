"""The Levenberg-Marquardt solver shared by the log and stand-record fits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax.identify.levenberg_marquardt import LMResult, levenberg_marquardt


def test_linear_problem_reaches_the_least_squares_solution():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(30, 4))
    b = rng.normal(size=30)
    res = levenberg_marquardt(lambda x: A @ x - b, lambda x: A, np.zeros(4), max_iterations=50, cost_tol=1e-14)
    x_ls = np.linalg.lstsq(A, b, rcond=None)[0]
    np.testing.assert_allclose(res.x, x_ls, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res.residual, A @ x_ls - b, atol=1e-9)
    assert res.jacobian is A
    assert res.history[0] == pytest.approx(0.5 * b @ b)
    assert all(b_ < a_ for a_, b_ in zip(res.history, res.history[1:]))  # only decreasing steps are taken
    assert res.iterations == len(res.history) - 1


def test_rosenbrock_valley_with_autodiff_jacobian_keeps_the_array_type():
    def r(x):
        return jnp.stack([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])

    res = levenberg_marquardt(jax.jit(r), jax.jit(jax.jacfwd(r)), jnp.array([-1.2, 1.0]), max_iterations=200,
                              cost_tol=None, step_tol=1e-10)
    assert isinstance(res.x, jax.Array)
    np.testing.assert_allclose(np.asarray(res.x), [1.0, 1.0], atol=1e-7)
    assert isinstance(res, LMResult) and len(tuple(res)) == 6  # unpacks as (x, r, J, iterations, history, reason)


def test_exponential_fit_recovers_rate_and_amplitude():
    t = np.linspace(0.0, 2.0, 40)
    y = 3.0 * np.exp(-1.7 * t)

    def r(x):
        return x[0] * np.exp(-x[1] * t) - y

    def J(x):
        e = np.exp(-x[1] * t)
        return np.stack([e, -x[0] * t * e], axis=1)

    res = levenberg_marquardt(r, J, np.array([1.0, 0.2]), max_iterations=100, cost_tol=1e-16)
    np.testing.assert_allclose(res.x, [3.0, 1.7], rtol=1e-6)


def test_stopping_reasons():
    A = np.eye(2)
    # at the optimum no step lowers the cost
    res = levenberg_marquardt(lambda x: A @ x, lambda x: A, np.zeros(2), max_iterations=5)
    assert res.iterations == 0 and "no decrease" in res.reason
    # the iteration limit
    res = levenberg_marquardt(lambda x: np.array([x[0] ** 2 - 2.0]), lambda x: np.array([[2 * x[0]]]),
                              np.array([10.0]), max_iterations=2, cost_tol=None)
    assert res.iterations == 2 and res.reason == "max_iterations=2"
    # relative cost change
    def r(x):  # residuals that do not vanish at the optimum (about x = 1.41244)
        return np.array([x[0] ** 2 - 2.0, 0.1 * x[0]])

    def J(x):
        return np.array([[2 * x[0]], [0.1]])

    res = levenberg_marquardt(r, J, np.array([10.0]), max_iterations=100, cost_tol=1e-6)
    assert "relative cost change" in res.reason and res.x[0] == pytest.approx(1.41244, abs=1e-4)
    # steps below a fraction of the standard deviation
    res = levenberg_marquardt(r, J, np.array([10.0]), max_iterations=100, cost_tol=None, step_tol=1e-6)
    assert "Gauss-Newton step below" in res.reason and res.x[0] == pytest.approx(1.41244, abs=1e-4)


def test_non_finite_start_raises():
    with pytest.raises(FloatingPointError, match="start point"):
        levenberg_marquardt(lambda x: np.array([np.nan]), lambda x: np.ones((1, 1)), np.zeros(1), max_iterations=3)
    with pytest.raises(FloatingPointError, match="start point"):
        levenberg_marquardt(lambda x: x, lambda x: np.full((1, 1), np.inf), np.ones(1), max_iterations=3)


def test_callback_sees_every_accepted_step_and_its_cost():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(20, 3))
    b = rng.normal(size=20)
    seen = []
    res = levenberg_marquardt(lambda x: A @ x - b, lambda x: A, np.zeros(3), max_iterations=30,
                              callback=lambda it, cost: seen.append((it, cost)))
    assert [it for it, _ in seen] == list(range(1, res.iterations + 1))
    assert [c for _, c in seen] == res.history[1:]
