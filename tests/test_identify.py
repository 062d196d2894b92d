"""Identification machinery: round trips, gradients through rollouts, results JSON.

Round trips: data generated with known parameters (by the cycle-averaged
model, or by short MJX rollouts of the per-wing model), fitted from a start
30 % off in either direction, must recover every parameter within 1 %.
"""

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import identify as idf
from flapjax.identify import flapper as F
from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.validation import ConfigError

START = (0.7, 1.3)


def _fit(predict, data, truth, names, factor, optimizer="lbfgs", **conv):
    t, n = idf.split(truth, names)
    t = idf.scale_trainable(t, {k: factor for k in names})
    return idf.fit(
        idf.least_squares(predict), t, n, data,
        optimizer=idf.make_optimizer(optimizer, learning_rate=0.05, decay_steps=conv.get("max_steps", 200)),
        convergence=idf.Convergence(**{"max_steps": 200, **conv}),
    )


def _rel_err(res, truth, names):
    return {k: float(np.max(np.abs(np.asarray(res.params[k]) / np.asarray(truth[k]) - 1))) for k in names}


# --- trainable / nominal -----------------------------------------------------


def test_split_keeps_positive_constants_in_log_space_apart_from_nominal():
    t, n = idf.split({"k_f": 2e-4, "f_ref": 42.0, "bias": -1.0}, ["k_f", "bias"], signed=["bias"])
    assert set(t.log) == {"k_f"} and set(t.linear) == {"bias"} and set(n.values) == {"f_ref"}
    np.testing.assert_allclose(t.log["k_f"], np.log(2e-4), rtol=1e-12)
    p = idf.combine(idf.scale_trainable(t, {"k_f": 1.3, "bias": 2.0}), n)
    np.testing.assert_allclose([p["k_f"], p["bias"], p["f_ref"]], [2.6e-4, -2.0, 42.0], rtol=1e-12)
    # The nominal part gets no gradient: only trainable leaves are differentiated.
    g = jax.grad(lambda tt: idf.combine(tt, n)["k_f"] * n.values["f_ref"])(t)
    np.testing.assert_allclose(g.log["k_f"], 2e-4 * 42.0, rtol=1e-12)


@pytest.mark.parametrize(
    "values, names, match",
    [({"k_f": -1.0}, ["k_f"], "k_f: must be > 0"), ({"k_f": 1.0}, ["k_v"], "unknown parameter")],
)
def test_split_rejects_bad_parameters(values, names, match):
    with pytest.raises(ConfigError, match=match):
        idf.split(values, names)


def test_convergence_stops_at_max_steps_and_reports_it():
    f = jnp.linspace(20.0, 45.0, 6)
    data = idf.Measurements(inputs=f, targets=1.6e-4 * f**2, scale=jnp.asarray(0.2))
    res = _fit(F.predict_lift, data, {"k_f": 1.6e-4}, ["k_f"], 1.3, optimizer="adam", max_steps=3)
    assert res.steps == 3 and not res.converged and "max_steps" in res.reason
    assert _rel_err(res, {"k_f": 1.6e-4}, ["k_f"])["k_f"] > 0.05


# --- round trips on averaged-model data ------------------------------------------


@pytest.mark.parametrize("factor", START)
@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_round_trip_k_f(factor, optimizer):
    truth = {"k_f": 1.6509276711e-4}
    f = jnp.linspace(20.0, 45.0, 6)
    y = F.predict_lift(truth, f)
    data = idf.Measurements(inputs=f, targets=y, scale=jnp.sqrt(jnp.mean(y**2)))
    res = _fit(F.predict_lift, data, truth, ["k_f"], factor, optimizer=optimizer, max_steps=600)
    assert res.converged, res.reason
    assert _rel_err(res, truth, ["k_f"])["k_f"] < 1e-2
    assert _rel_err(res, truth, ["k_f"])["k_f"] < 1e-5  # and in fact far better
    np.testing.assert_allclose(res.params["k_f"], idf.slope_through_origin(f**2, y), rtol=1e-6)


def test_gradient_fit_equals_closed_form_least_squares_on_noisy_data():
    f = np.linspace(20.0, 45.0, 8)
    y = 1.65e-4 * f**2 * (1 + 0.02 * np.sin(3 * f))
    data = idf.Measurements(inputs=jnp.asarray(f), targets=jnp.asarray(y), scale=jnp.sqrt(jnp.mean(jnp.asarray(y) ** 2)))
    res = _fit(F.predict_lift, data, {"k_f": 1.65e-4}, ["k_f"], 1.3)
    k_ls = idf.slope_through_origin(f**2, y)
    assert abs(float(res.params["k_f"]) / k_ls - 1) < 1e-8
    assert 0.99 < idf.r_squared(y, k_ls * f**2) < 1.0


@pytest.mark.parametrize("factor", START)
def test_round_trip_control_moments(factor):
    truth = {"k_roll": 0.01055 / 20, "k_pitch": 0.01144 / 20, "f_ref": 42.0}
    f = jnp.repeat(jnp.array([30.0, 42.0]), 4)
    d = jnp.tile(jnp.array([-0.3, -0.1, 0.1, 0.3]), 2)
    plate = jnp.concatenate([jnp.stack([d, 0 * d], -1), jnp.stack([0 * d, d], -1)])
    inputs = (jnp.concatenate([f, f]), plate)
    y = F.predict_moments(truth, inputs)
    data = idf.Measurements(inputs=inputs, targets=y, scale=jnp.sqrt(jnp.mean(y**2)))
    res = _fit(F.predict_moments, data, truth, ["k_roll", "k_pitch"], factor)
    errs = _rel_err(res, truth, ["k_roll", "k_pitch"])
    assert max(errs.values()) < 1e-2, errs
    assert res.params["f_ref"] == 42.0  # nominal, untouched


@pytest.mark.parametrize("factor", START)
def test_round_trip_damping(factor):
    truth = {"D_w": jnp.array([2e-4, 2e-4, 1e-4]), "k_v": 0.06}
    drive = jnp.concatenate([jnp.eye(5) * r for r in (-2.0, -1.0, 1.0, 2.0)])
    y = F.predict_damping(truth, drive)
    scale = jnp.array([0.1, 0.1, 4e-4, 4e-4, 4e-4])
    data = idf.Measurements(inputs=drive, targets=y, scale=scale)
    res = _fit(F.predict_damping, data, truth, ["D_w", "k_v"], factor)
    errs = _rel_err(res, truth, ["D_w", "k_v"])
    assert max(errs.values()) < 1e-2, errs


@pytest.mark.parametrize("factor", START)
def test_round_trip_speed_to_moment_coupling(factor):
    # Synthetic averaged-model data with a known coupling: the gradient fit
    # (signed L_v, M_u) recovers it and equals the closed-form slopes.
    truth = {"D_w": jnp.array([3e-5, 2e-5, 2e-4]), "k_v": 0.045, "L_v": 8.4e-4, "M_u": -4.7e-4}
    drive = jnp.concatenate([jnp.eye(5) * r for r in (-1.0, -0.5, 0.5, 1.0)])
    y = F.predict_damping(truth, drive)
    # roll moment from v_y and pitch moment from v_x, with the drag above the CoM
    np.testing.assert_allclose(y[drive[:, 1] == 1.0][0], [0.0, -0.045, 8.4e-4, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(y[drive[:, 0] == 1.0][0], [-0.045, 0.0, 0.0, -4.7e-4, 0.0], atol=1e-15)
    slopes = F.coupling_slopes(drive[:, :2], y[:, 2:4])
    np.testing.assert_allclose([slopes["L_v"], slopes["M_u"]], [8.4e-4, -4.7e-4], rtol=1e-12)
    data = idf.Measurements(inputs=drive, targets=y, scale=jnp.array([0.05, 0.05, 4e-4, 4e-4, 4e-4]))
    names = ["D_w", "k_v", "L_v", "M_u"]
    t, n = idf.split(truth, names, signed=["L_v", "M_u"])
    t = idf.scale_trainable(t, {k: factor for k in names})
    res = idf.fit(idf.least_squares(F.predict_damping), t, n, data, optimizer=idf.make_optimizer("lbfgs"),
                  convergence=idf.Convergence(max_steps=300))
    errs = _rel_err(res, truth, names)
    assert max(errs.values()) < 1e-4, errs


def test_uncertainty_from_curvature_matches_linear_regression():
    rng = np.random.default_rng(0)
    f = np.linspace(20.0, 45.0, 12)
    y = 1.65e-4 * f**2 + rng.normal(0, 2e-3, f.size)
    data = idf.Measurements(inputs=jnp.asarray(f), targets=jnp.asarray(y), scale=jnp.asarray(1.0))
    res = _fit(F.predict_lift, data, {"k_f": 1.65e-4}, ["k_f"], 1.0)
    unc = idf.gauss_newton_uncertainty(
        lambda t: idf.residuals(F.predict_lift, idf.combine(t, idf.Nominal({})), data), res.trainable
    )
    x = f**2
    k = idf.slope_through_origin(x, y)
    s2 = np.sum((y - k * x) ** 2) / (f.size - 1)
    np.testing.assert_allclose(unc.std["k_f"], np.sqrt(s2 / np.sum(x**2)), rtol=1e-6)


def test_uncertainty_of_mixed_log_and_signed_parameters_matches_ordinary_least_squares():
    # y = a x + b x^2 + c with a positive (trained in log space) and b, c
    # signed: at the least-squares optimum the reported standard deviations
    # and correlations are those of sigma^2 (X^T X)^-1, sigma^2 = SSR / (n - 3).
    rng = np.random.default_rng(3)
    x = np.linspace(-1.0, 2.0, 25)
    y = 0.8 * x - 0.3 * x**2 + 0.1 + rng.normal(0.0, 0.05, x.size)
    design = np.stack([x, x**2, np.ones_like(x)], axis=1)
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    ssr = float(np.sum((y - design @ beta) ** 2))
    cov = ssr / (x.size - 3) * np.linalg.inv(design.T @ design)
    t, n = idf.split({"a": beta[0], "b": beta[1], "c": beta[2]}, ["a", "b", "c"], signed=["b", "c"])

    def residual_fn(tr):
        p = idf.combine(tr, n)
        return (p["a"] * x + p["b"] * x**2 + p["c"] - y) / 0.5  # any residual scale gives the same answer

    unc = idf.gauss_newton_uncertainty(residual_fn, t)
    np.testing.assert_allclose([unc.std[k] for k in "abc"], np.sqrt(np.diag(cov)), rtol=1e-9)
    np.testing.assert_allclose(unc.relative_std["a"], np.sqrt(cov[0, 0]) / beta[0], rtol=1e-9)
    np.testing.assert_allclose(unc.relative_std["b"], np.sqrt(cov[1, 1]) / abs(beta[1]), rtol=1e-9)
    corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    flat_order = list(t.log) + list(t.linear)  # the trainable's flattening: log space first
    assert flat_order == ["a", "b", "c"]
    np.testing.assert_allclose(unc.correlation, corr, atol=1e-9)
    np.testing.assert_allclose(unc.sigma, np.sqrt(ssr / (x.size - 3)) / 0.5, rtol=1e-9)
    jac = np.stack([beta[0] * x, x**2, np.ones_like(x)], axis=1) / 0.5  # d r / d(log a, b, c)
    np.testing.assert_allclose(unc.hessian, jac.T @ jac / x.size, rtol=1e-9)


def test_correlation_is_labelled_in_the_flattened_order_and_reordered_by_name():
    # Dicts built out of alphabetical order: JAX flattens sorted keys, so the
    # matrix rows follow Trainable.names, not the insertion order.
    from jax.flatten_util import ravel_pytree

    from flapjax.identify.losses import flat_names

    t = idf.Trainable(log={"z_gain": jnp.log(jnp.array([2.0, 3.0])), "a_gain": jnp.log(jnp.array(4.0))},
                      linear={"offset": jnp.array(0.5), "bias": jnp.array(-1.0)})
    assert t.names == ("a_gain", "z_gain", "bias", "offset")
    assert flat_names(t) == ["a_gain", "z_gain[0]", "z_gain[1]", "bias", "offset"]
    weights = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
    x = jnp.linspace(0.0, 1.0, 40)

    def residual_fn(tr):  # each entry of the flattened vector gets its own regressor
        flat = ravel_pytree(tr)[0]
        return jnp.sin(jnp.outer(x, weights) + 0.3) @ flat + jnp.cos(7 * x)

    unc = idf.gauss_newton_uncertainty(residual_fn, t)
    assert unc.names == flat_names(t)
    full = unc.correlation
    sub = idf.correlation_among(unc, ["offset", "a_gain"])
    np.testing.assert_allclose(sub, [[1.0, full[4, 0]], [full[0, 4], 1.0]], rtol=1e-12)
    with pytest.raises(ConfigError, match="names: \\['z_gain'\\] are not among"):
        idf.correlation_among(unc, ["z_gain"])


# --- through rollouts of the per-wing model -------------------------------------


@pytest.fixture(scope="module")
def lift_rollout():
    # Whole cycles at 40 and 50 Hz after a 0.02 s transient: short, still the full bridge.
    return F.LiftRollout.make([40.0, 50.0], duration=0.06, discard=0.02)


def test_gradient_through_rollout_matches_finite_differences(lift_rollout):
    nominal = F.nominal_physical(lift_rollout.robot)
    names = ["hinge_stiffness", "lift_scale"]
    x0 = {k: nominal[k] for k in names}

    def fz(v):
        return lift_rollout({**nominal, **{k: v[i] for i, k in enumerate(names)}})

    v0 = jnp.array([x0[k] for k in names])
    # Forward mode is what the physical study differentiates with (reverse mode
    # through the MJX robot's rollout is checked in tests/test_sim_flapper.py).
    jac_fwd = np.asarray(eqx.filter_jit(jax.jacfwd(fz))(v0))
    assert np.all(np.isfinite(jac_fwd)) and np.all(np.abs(jac_fwd) > 0)
    f_eval = eqx.filter_jit(fz)
    fd = []
    for i in range(2):
        h = 1e-4 * float(v0[i])
        e = jnp.zeros(2).at[i].set(h)
        fd.append((np.asarray(f_eval(v0 + e)) - np.asarray(f_eval(v0 - e))) / (2 * h))
    fd = np.stack(fd, axis=-1)
    np.testing.assert_allclose(jac_fwd, fd, rtol=2e-4, atol=1e-9 * np.max(np.abs(fd)))


@pytest.mark.parametrize("factor", START)
def test_round_trip_physical_parameters_through_rollout(lift_rollout, factor):
    # Lift scale: well determined by two short runs (the hinge stiffness is
    # not, from 0.06 s at two frequencies: the physical study reports that
    # through its curvature-based uncertainty instead).
    nominal = F.nominal_physical(lift_rollout.robot)
    names = ["lift_scale"]
    truth = {**nominal, "lift_scale": 0.9}
    targets = F.eval_lift(lift_rollout, truth)
    data = idf.Measurements(inputs=lift_rollout, targets=targets, scale=targets)
    t, n = idf.split(truth, names)
    t = idf.scale_trainable(t, {k: factor for k in names})
    opt = idf.make_optimizer("lbfgs", line_search="none")
    res = idf.fit(
        F.physical_loss, t, n, data, optimizer=opt,
        step_fn=_physical_step(opt), convergence=idf.Convergence(max_steps=15, grad_tol=1e-9, rtol=1e-12, patience=2),
    )
    errs = _rel_err(res, truth, names)
    assert max(errs.values()) < 1e-2, (errs, res.reason)


_STEPS = {}


def _physical_step(opt):
    # One compiled step shared by both starts.
    if "step" not in _STEPS:
        _STEPS["step"] = idf.make_fit_step(F.physical_loss, opt, grad_mode="forward")
    return _STEPS["step"]


# --- results -> JSON -> cycle-averaged model -------------------------------------------


def test_results_round_trip_through_json_into_the_cycle_averaged_model(tmp_path):
    study = idf.StudyResult(
        name="lift", values={"k_f": jnp.asarray(1.7e-4)}, std={"k_f": jnp.asarray(1e-6)},
        metrics={"r2": 0.999, "source": "test"}, data={"frequency": jnp.arange(3.0)}, loss=jnp.array([1.0, 0.1]),
    )
    moments = idf.StudyResult(
        name="moments", values={"k_roll": jnp.asarray(6e-4), "k_pitch": jnp.asarray(7e-4), "D_w": jnp.array([1e-5, 2e-5, 3e-5])},
        std={}, metrics={}, data={}, loss=jnp.zeros(0),
    )
    res = F.IdentificationResult.from_studies({"lift": study, "moments": moments}, settings={"a": 1})
    res.save(tmp_path / "results.json")
    back = F.IdentificationResult.load(tmp_path / "results.json")
    assert jax.tree.structure(back.identified) == jax.tree.structure(res.identified)
    np.testing.assert_allclose(back.identified["D_w"], [1e-5, 2e-5, 3e-5])
    np.testing.assert_allclose(back.studies["lift"].loss, [1.0, 0.1])
    assert back.studies["lift"].metrics["source"] == "test"
    cap = back.to_cycle_averaged_params()
    assert isinstance(cap, CycleAveragedParams)
    np.testing.assert_allclose(
        [cap.lift_coefficient, cap.roll_gain, cap.pitch_gain, cap.horizontal_damping], [1.7e-4, 6e-4, 7e-4, 0.06]
    )
    raw = json.loads((tmp_path / "results.json").read_text())
    assert raw["identified"]["k_f"] == pytest.approx(1.7e-4) and raw["units"]["k_f"] == "N/Hz^2"
    # the head every identification from data writes: study, source, NAME / NAME_std, units
    assert list(raw)[:2] == ["study", "source"] and raw["study"] == "simulation"
    assert (raw["k_f"], raw["k_f_std"]) == (pytest.approx(1.7e-4), pytest.approx(1e-6))
    assert [raw[f"D_w_{a}"] for a in "xyz"] == pytest.approx([1e-5, 2e-5, 3e-5]) and raw["D_w_x_std"] is None
    assert raw["units"] == {"k_f": "N/Hz^2", "k_roll": "N m/rad", "k_pitch": "N m/rad", "D_w_x": "N m s/rad",
                            "D_w_y": "N m s/rad", "D_w_z": "N m s/rad"}
    with pytest.raises(ConfigError, match="cycle_averaged.json|results of a 'simulation'"):
        CycleAveragedParams.from_json(tmp_path / "results.json")
    assert CycleAveragedParams.from_dict(raw["cycle_averaged"]).roll_gain == pytest.approx(6e-4)
    assert raw["versions"]["jax"] == jax.__version__


def test_config_errors_name_the_setting(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[lift]\nfrequencies = [20.0, -30.0]\n")
    with pytest.raises(ConfigError, match="lift.frequencies"):
        F.load_config(bad)
    bad.write_text("[moments]\ntilts = [0.1]\nwobble = 3\n")
    with pytest.raises(ConfigError, match="moments.wobble: unknown setting"):
        F.load_config(bad)
    bad.write_text("[physical]\nfrequencies = [25.0]\n")
    with pytest.raises(ConfigError, match="seed table"):
        F.load_config(bad)
    cfg = F.load_config(None, quick=True)
    assert cfg["lift"]["frequencies"] != F.default_config()["lift"]["frequencies"]


# --- gradient mode -------------------------------------------------------------


def _two_parameter_problem():
    x = jnp.linspace(0.1, 2.0, 16)
    truth = {"a": jnp.asarray(1.7), "b": jnp.asarray([0.3, -0.2])}
    predict = lambda p, u: p["a"] * jnp.sin(u) ** 2 + p["b"][0] * u + p["b"][1] * u**3  # noqa: E731
    data = idf.Measurements(inputs=x, targets=predict(truth, x), scale=jnp.asarray(1.0))
    t, n = idf.split(truth, ("a", "b"), signed=("b",))
    return idf.least_squares(predict), idf.scale_trainable(t, {"a": 1.2, "b": 0.8}), n, data


@pytest.mark.parametrize("optimizer,line_search", [("adam", "zoom"), ("lbfgs", "backtracking"), ("lbfgs", "none")])
def test_forward_and_reverse_gradients_agree_and_auto_takes_forward_for_few_parameters(optimizer, line_search):
    assert jnp.zeros(()).dtype == jnp.float64  # conftest: float64
    loss, t, n, data = _two_parameter_problem()
    opt = idf.make_optimizer(optimizer, line_search=line_search)
    state = opt.init(t)
    out = {mode: idf.make_fit_step(loss, opt, grad_mode=mode)(t, state, n, data)
           for mode in ("forward", "reverse", "auto")}
    value_rev, grad = jax.value_and_grad(lambda tt: loss(idf.combine(tt, n), data))(t)
    for mode, (new, _, value, gnorm) in out.items():
        np.testing.assert_allclose(float(value), float(value_rev), rtol=1e-14, err_msg=mode)
        np.testing.assert_allclose(float(gnorm), float(optax_norm(grad)), rtol=1e-12, err_msg=mode)
        for leaf, ref in zip(jax.tree.leaves(new), jax.tree.leaves(out["reverse"][0])):
            np.testing.assert_allclose(np.asarray(leaf), np.asarray(ref), rtol=1e-12, atol=1e-15, err_msg=mode)
    fwd_grad = _fit_module()._forward_value_and_grad(lambda tt: loss(idf.combine(tt, n), data), t)[1]
    for a, b in zip(jax.tree.leaves(fwd_grad), jax.tree.leaves(grad)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-15)
    assert _fit_module().choose_grad_mode(3, state) == "forward"


def _fit_module():
    import importlib

    return importlib.import_module("flapjax.identify.fit")  # the package's ``fit`` is the function


def optax_norm(tree):
    return jnp.sqrt(sum(jnp.sum(x**2) for x in jax.tree.leaves(tree)))


def test_auto_grad_mode_takes_reverse_for_many_parameters_or_a_gradient_line_search():
    fit_mod = _fit_module()
    t = {"w": jnp.zeros(fit_mod.FORWARD_MAX_PARAMS + 1)}
    assert fit_mod.choose_grad_mode(fit_mod.FORWARD_MAX_PARAMS) == "forward"
    assert fit_mod.choose_grad_mode(fit_mod.FORWARD_MAX_PARAMS + 1) == "reverse"
    zoom = idf.make_optimizer("lbfgs", line_search="zoom").init(t)
    assert fit_mod.choose_grad_mode(2, zoom) == "reverse"
    backtracking = idf.make_optimizer("lbfgs", line_search="backtracking").init(t)
    assert fit_mod.choose_grad_mode(2, backtracking) == "forward"
    with pytest.raises(ConfigError, match="grad_mode"):
        idf.make_fit_step(lambda p, d: 0.0, idf.make_optimizer("adam"), grad_mode="sideways")
