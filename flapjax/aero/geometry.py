"""Wing planform integrals and the wing description (seed section 3).

The closed-form strip integrals of the quasi-steady model need only a handful of
dimensionless moments of the chord distribution ``c(r)``:

* ``r_kk = int_0^1 c_hat(r_hat) r_hat^k dr_hat``,  k = 0..3  (force, span CoP)
* ``z_cp,k = int_0^1 c_hat^2(r_hat) r_hat^k dr_hat``, k = 0..2  (pitching moment)
* ``z_rd = int_0^1 c_hat^4(r_hat) dr_hat``                 (rotational damping)

with ``r_hat = r / R`` and ``c_hat = c / c_bar``. A rectangular wing gives
``r = (1, 1/2, 1/3, 1/4)``, ``z_cp = (1, 1/2, 1/3)`` and ``z_rd = 1``.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.aero import wing_file
from flapjax.aero.options import AeroOptions
from flapjax.validation import ConfigError, as_float_array, check_finite, check_positive

# Points per sub-interval of the composite Gauss-Legendre rule. Between two
# consecutive vertex stations the chord of a polygon is linear, so every
# integrand above is a polynomial of degree <= 7: 8 points integrate it exactly.
_GAUSS_POINTS = 8


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


class WingGeometry(eqx.Module):
    """Planform integrals of one wing (seed section 3).

    Attributes:
      span: () wing length R [m], root (r = 0) to tip.
      mean_chord: () mean chord c_bar = area / R [m].
      r: (4,) chord-weighted radial moments r00, r11, r22, r33 [-].
      z_cp: (3,) chord^2-weighted radial moments z_cp0, z_cp1, z_cp2 [-].
      z_rd: () chord^4 moment of the rotational damping [-].
    """

    span: Float[Array, ""] = eqx.field(converter=_as_array)
    mean_chord: Float[Array, ""] = eqx.field(converter=_as_array)
    r: Float[Array, "4"] = eqx.field(converter=_as_array)
    z_cp: Float[Array, "3"] = eqx.field(converter=_as_array)
    z_rd: Float[Array, ""] = eqx.field(converter=_as_array)

    def __check_init__(self):
        check_positive("WingGeometry.span", self.span)
        check_positive("WingGeometry.mean_chord", self.mean_chord)
        if jnp.shape(self.r) != (4,):
            raise ConfigError(f"WingGeometry.r: expected shape (4,), got shape {jnp.shape(self.r)}")
        if jnp.shape(self.z_cp) != (3,):
            raise ConfigError(f"WingGeometry.z_cp: expected shape (3,), got shape {jnp.shape(self.z_cp)}")
        check_positive("WingGeometry.r", self.r)
        check_positive("WingGeometry.z_cp", self.z_cp)
        check_positive("WingGeometry.z_rd", self.z_rd)

    @property
    def span_cop(self) -> Float[Array, ""]:
        """Fixed spanwise centre of pressure r_cp = R r33 / r22 [m] (seed 4.2)."""
        return self.span * self.r[3] / self.r[2]

    @classmethod
    def rectangular(cls, span: float, chord: float) -> "WingGeometry":
        """A rectangular wing of length ``span`` [m] and chord ``chord`` [m]."""
        as_float_array("span", span, ())
        as_float_array("chord", chord, ())
        check_positive("span", span)
        check_positive("chord", chord)
        return cls(
            span=span,
            mean_chord=chord,
            r=np.array([1.0, 1 / 2, 1 / 3, 1 / 4]),
            z_cp=np.array([1.0, 1 / 2, 1 / 3]),
            z_rd=1.0,
        )

    @classmethod
    def from_planform(cls, polygon) -> "WingGeometry":
        """Integrals of a wing outline by composite Gauss-Legendre quadrature.

        Args:
          polygon: (N, 2) outline vertices ``(r, y)`` [m], in order (either
            sense), N >= 3. ``r`` is spanwise from the root (r = 0) to the tip
            (r = R, the largest ``r``); ``y`` is chordwise with the leading edge
            at the larger ``y``. The local chord ``c(r)`` is the total length of
            the outline's cross-section at ``r``.

        The chord of a polygon is piecewise linear in ``r`` with kinks at the
        vertex stations; the rule integrates each piece exactly.

        Raises:
          ConfigError: wrong shape, non-finite vertices, negative ``r``, a
            self-intersecting (non-simple) or degenerate (zero-area) outline.
        """
        poly = _validate_polygon(polygon)
        span = float(poly[:, 0].max())
        stations = np.unique(poly[:, 0])
        nodes, weights = np.polynomial.legendre.leggauss(_GAUSS_POINTS)
        r_pts, w_pts = [], []
        for a, b in zip(stations[:-1], stations[1:]):
            r_pts.append(0.5 * (b - a) * nodes + 0.5 * (a + b))
            w_pts.append(0.5 * (b - a) * weights)
        r_q = np.concatenate(r_pts)
        w_q = np.concatenate(w_pts)
        chord = np.array([_section_length(poly, r) for r in r_q])
        area = float(np.sum(w_q * chord))
        mean_chord = area / span
        r_hat = r_q / span
        c_hat = chord / mean_chord
        w_hat = w_q / span
        r = np.array([np.sum(w_hat * c_hat * r_hat**k) for k in range(4)])
        z_cp = np.array([np.sum(w_hat * c_hat**2 * r_hat**k) for k in range(3)])
        z_rd = float(np.sum(w_hat * c_hat**4))
        return cls(span=span, mean_chord=mean_chord, r=r, z_cp=z_cp, z_rd=z_rd)


def _section_length(poly: np.ndarray, r: float) -> float:
    """Total length of the outline's cross-section at station ``r`` [m]."""
    p0 = poly
    p1 = np.roll(poly, -1, axis=0)
    lo = np.minimum(p0[:, 0], p1[:, 0])
    hi = np.maximum(p0[:, 0], p1[:, 0])
    crosses = (lo <= r) & (r < hi)
    if not np.any(crosses):
        return 0.0
    a, b = p0[crosses], p1[crosses]
    t = (r - a[:, 0]) / (b[:, 0] - a[:, 0])
    ys = np.sort(a[:, 1] + t * (b[:, 1] - a[:, 1]))
    return float(np.sum(ys[1::2] - ys[0::2]))


def _segments_intersect(p1, p2, q1, q2) -> bool:
    def orient(a, b, c):
        return np.sign((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))

    def on_segment(a, b, c):
        return min(a[0], b[0]) <= c[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= c[1] <= max(a[1], b[1])

    o1, o2, o3, o4 = orient(p1, p2, q1), orient(p1, p2, q2), orient(q1, q2, p1), orient(q1, q2, p2)
    if o1 != o2 and o3 != o4:
        return True
    return bool(
        (o1 == 0 and on_segment(p1, p2, q1))
        or (o2 == 0 and on_segment(p1, p2, q2))
        or (o3 == 0 and on_segment(q1, q2, p1))
        or (o4 == 0 and on_segment(q1, q2, p2))
    )


def _validate_polygon(polygon) -> np.ndarray:
    poly = as_float_array("polygon", polygon, (None, 2))
    n = poly.shape[0]
    if n < 3:
        raise ConfigError(f"polygon: needs at least 3 vertices, got {n}")
    if np.any(poly[:, 0] < 0):
        raise ConfigError(f"polygon: spanwise coordinates r must be >= 0 (root at r = 0), got min r = {poly[:, 0].min():g}")
    if np.any(np.all(poly == np.roll(poly, -1, axis=0), axis=1)):
        raise ConfigError("polygon: has repeated consecutive vertices (degenerate edge)")
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or (i == 0 and j == n - 1):
                continue  # adjacent edges share a vertex
            if _segments_intersect(poly[i], poly[(i + 1) % n], poly[j], poly[(j + 1) % n]):
                raise ConfigError(f"polygon: is not simple: edge {i} crosses edge {j}")
    x, y = poly[:, 0], poly[:, 1]
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    scale = max(np.ptp(x), np.ptp(y), 1e-300) ** 2
    if area <= 1e-12 * scale:
        raise ConfigError(f"polygon: is degenerate (enclosed area {area:.3g} m^2); vertices must enclose a region")
    return poly


class Wing(eqx.Module):
    """One flapping wing and the air it moves in.

    Attributes:
      geometry: planform integrals (:class:`WingGeometry`).
      rho: () air density [kg/m^3].
      shoulder_half_width: () d0, lateral offset of the wing root from the body
        x-z plane [m].
      stroke_plane_offset: () ds, height of the wing root above the body
        origin along body z [m].
    """

    geometry: WingGeometry
    rho: Float[Array, ""] = eqx.field(converter=_as_array)
    shoulder_half_width: Float[Array, ""] = eqx.field(converter=_as_array)
    stroke_plane_offset: Float[Array, ""] = eqx.field(converter=_as_array)

    def __check_init__(self):
        check_positive("Wing.rho", self.rho)
        check_positive("Wing.shoulder_half_width", self.shoulder_half_width, allow_zero=True)
        check_finite("Wing.stroke_plane_offset", self.stroke_plane_offset)

    @classmethod
    def flapsim(cls) -> "Wing":
        """The seed's wing: rectangular 70 x 20 mm, rho 1.225 kg/m^3,
        d0 = 0.01395 m, ds = 0.0189913 m."""
        return cls(
            geometry=WingGeometry.rectangular(0.07, 0.02),
            rho=1.225,
            shoulder_half_width=0.01395,
            stroke_plane_offset=0.0189913,
        )

    @classmethod
    def from_flapsim_json(cls, path) -> "Wing":
        """The wing of a FlapSim-style wing file (``Wing.json``, SI units,
        every key checked; :mod:`flapjax.aero.wing_file`, docs/data_formats.md,
        Wing file). The file's ``options`` block too: :func:`read_wing_file`."""
        return read_wing_file(path)[0]

    def to_flapsim_json(self, path, options: AeroOptions | None = None) -> None:
        """Write this wing (and the scalars of ``options`` as the ``options``
        block) as a wing file that :meth:`from_flapsim_json` reads back to
        the same values."""
        g = self.geometry
        values = {"wing_length": g.span, "mean_chord": g.mean_chord, "air_density": self.rho,
                  "shoulder_half_width": self.shoulder_half_width, "stroke_plane_offset": self.stroke_plane_offset,
                  **dict(zip(wing_file.R_KEYS, np.asarray(g.r))), **dict(zip(wing_file.Z_KEYS, np.asarray(g.z_cp))),
                  "z_rd": g.z_rd}
        wing_file.write_values(path, values, options)


def read_wing_file(path) -> tuple[Wing, AeroOptions | None]:
    """``(wing, options)`` of the wing file at ``path``
    (:mod:`flapjax.aero.wing_file`); ``options`` is ``None`` when the file
    has no ``options`` block. :class:`ConfigError` naming the file and the field."""
    v, options = wing_file.read_values(path)
    geometry = WingGeometry(span=v["wing_length"], mean_chord=v["mean_chord"],
                            r=np.array([v[k] for k in wing_file.R_KEYS]),
                            z_cp=np.array([v[k] for k in wing_file.Z_KEYS]), z_rd=v["z_rd"])
    wing = Wing(geometry=geometry, rho=v["air_density"], shoulder_half_width=v["shoulder_half_width"],
                stroke_plane_offset=v["stroke_plane_offset"])
    return wing, options


def write_wing_file(path, wing: Wing, options: AeroOptions | None = None) -> None:
    """:meth:`Wing.to_flapsim_json` as a function."""
    wing.to_flapsim_json(path, options)
