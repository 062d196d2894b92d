"""Planform integrals (seed section 3) by Gauss-Legendre against closed forms."""

import numpy as np
import pytest

from flapjax import ConfigError, aero


def test_rectangular_wing_integrals():
    g = aero.WingGeometry.rectangular(0.07, 0.02)
    np.testing.assert_allclose(g.r, [1, 1 / 2, 1 / 3, 1 / 4], rtol=0, atol=0)
    np.testing.assert_allclose(g.z_cp, [1, 1 / 2, 1 / 3], rtol=0, atol=0)
    assert float(g.z_rd) == 1.0
    assert float(g.span_cop) == pytest.approx(0.0525, abs=1e-15)


def test_planform_of_a_rectangle_matches_the_rectangular_constructor():
    g = aero.WingGeometry.from_planform([[0, 0], [0.07, 0], [0.07, 0.02], [0, 0.02]])
    ref = aero.WingGeometry.rectangular(0.07, 0.02)
    for name in ["span", "mean_chord", "r", "z_cp", "z_rd"]:
        np.testing.assert_allclose(getattr(g, name), getattr(ref, name), rtol=1e-13)


@pytest.mark.parametrize("clockwise", [False, True])
def test_triangle_planform_has_analytic_integrals(clockwise):
    # c(r) = c0 (1 - r/R): c_hat = 2 (1 - x), so r_kk = 2/((k+1)(k+2)),
    # z_cp,k = 8 k!/(k+3)!, z_rd = 16/5.
    R, c0 = 0.05, 0.03
    poly = np.array([[0, 0], [R, 0], [0, c0]])
    if clockwise:
        poly = poly[::-1]
    g = aero.WingGeometry.from_planform(poly)
    assert float(g.span) == pytest.approx(R, rel=1e-14)
    assert float(g.mean_chord) == pytest.approx(c0 / 2, rel=1e-13)
    np.testing.assert_allclose(g.r, [1, 1 / 3, 1 / 6, 1 / 10], rtol=1e-12)
    np.testing.assert_allclose(g.z_cp, [4 / 3, 1 / 3, 2 / 15], rtol=1e-12)
    assert float(g.z_rd) == pytest.approx(16 / 5, rel=1e-12)
    assert float(g.span_cop) == pytest.approx(R * 0.6, rel=1e-12)


def test_insect_like_planform_matches_dense_sampling():
    """A non-convex 12-vertex outline: Gauss-Legendre against a 2M-point midpoint rule."""
    t = np.linspace(0, np.pi, 7)[1:-1]
    r_le = 0.06 * (1 - np.cos(t)) / 2
    upper = np.stack([r_le, 0.012 + 0.006 * np.sin(t)], axis=1)
    lower = np.stack([r_le[::-1], -0.004 - 0.003 * np.sin(2 * t[::-1]) ** 2], axis=1)
    poly = np.concatenate([[[0.0, 0.0]], upper, [[0.06, 0.004]], lower])
    g = aero.WingGeometry.from_planform(poly)
    n = 2_000_000
    r = (np.arange(n) + 0.5) * (0.06 / n)
    y_hi = np.interp(r, np.r_[0, upper[:, 0], 0.06], np.r_[0, upper[:, 1], 0.004])
    y_lo = np.interp(r, np.r_[0, lower[::-1, 0], 0.06], np.r_[0, lower[::-1, 1], 0.004])
    c = y_hi - y_lo
    R = 0.06
    cbar = c.mean()
    x, ch = r / R, c / cbar
    assert float(g.mean_chord) == pytest.approx(cbar, rel=1e-9)
    np.testing.assert_allclose(g.r, [np.mean(ch * x**k) for k in range(4)], rtol=1e-8)
    np.testing.assert_allclose(g.z_cp, [np.mean(ch**2 * x**k) for k in range(3)], rtol=1e-8)
    assert float(g.z_rd) == pytest.approx(np.mean(ch**4), rel=1e-8)


@pytest.mark.parametrize(
    "polygon, message",
    [
        ([[0, 0], [0.07, 0.02], [0.07, 0], [0, 0.02]], "not simple"),  # bow tie
        ([[0, 0], [0.03, 0], [0.07, 0]], "degenerate"),  # collinear
        ([[0, 0], [0.07, 0]], "at least 3"),
        ([[0, 0], [0.07, np.nan], [0, 0.02]], "finite"),
        ([[-0.01, 0], [0.07, 0], [0, 0.02]], "r must be >= 0"),
        ([0.0, 0.07, 0.02], "shape"),
        ([[0, 0], [0, 0], [0.07, 0], [0, 0.02]], "repeated"),
        ([["a", "b"], ["c", "d"], ["e", "f"]], "numbers"),
    ],
)
def test_bad_planforms_are_rejected_with_the_argument_named(polygon, message):
    with pytest.raises(ConfigError, match="polygon") as info:
        aero.WingGeometry.from_planform(polygon)
    assert message in str(info.value)


@pytest.mark.parametrize("span, chord, field", [(-0.07, 0.02, "span"), (0.07, 0.0, "chord"), (np.inf, 0.02, "span")])
def test_bad_rectangles_name_the_field(span, chord, field):
    with pytest.raises(ConfigError, match=field):
        aero.WingGeometry.rectangular(span, chord)
