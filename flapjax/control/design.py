"""Hover gains designed on the linear hover model.

The linear model (docs/physics.md, Hover controller) is the cycle-averaged
robot linearized at hover, one block per horizontal axis ``i`` (x: pitch,
y: roll), state ``s_i = [position, velocity, tilt, tilt rate]`` in the
heading frame (tilt: of the body z axis toward +x / +y), input ``u_i`` the
thrust tilt the plate makes toward +x / +y (``u_x = -delta_r``,
``u_y = -delta_p``):

    p'     = v
    v'     = g theta + g u - (k_v / m) v
    theta' = w
    w'     = (k_c u - D w + c v) / I

with ``k_c`` the control moment per rad of plate at the hover frequency,
``D`` the rate damping, ``I`` the inertia about the centre of mass and
``c`` the speed-to-moment coupling in tilt coordinates: ``c_x = M_u`` and
``c_y = -L_v`` (drag acting above the centre of mass). With the per-wing
model's coupling this model has an unstable oscillatory mode; the gains come
from an LQR on it: ``u_i = -K_i (s_i - s_i*)``. :func:`gains_from_feedback`
writes ``K_i = [k_p, k_v, k_theta, k_w]`` in the controller's cascade form
(:class:`flapjax.control.hover.HoverGains`, per-axis gains):

    attitude_p = k_theta, attitude_d = k_w,
    position_p = g k_p / k_theta, position_d = g k_v / k_theta

which is the same law while the commanded tilt stays inside its limit.

:func:`flapjax.sim.flapper.refine_gains` (it runs the simulator, so it lives
there) is the differentiable showcase: it improves those gains by gradient
through per-wing free-flight rollouts with optax.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg

from flapjax.control.estimate import DEFAULT_HARMONICS
from flapjax.control.hover import HoverGains
from flapjax.validation import ConfigError, check_positive

AXES = ("x", "y")


@dataclass(frozen=True)
class LinearHoverModel:
    """Parameters of the linear hover model; pairs are (x axis, y axis).

    Attributes:
      mass: m [kg].
      gravity: g [m/s^2].
      inertia: (I_yy, I_xx), inertia about the centre of mass of the axis
        that tilts the body toward +x, +y [kg m^2].
      control_gain: (k_pitch, k_roll) lambda_f at the hover frequency, the
        moment per rad of plate [N m/rad].
      rate_damping: (D_y, D_x) [N m s/rad], signed (< 0: anti-damped axis).
      coupling: (M_u, -L_v), tilt moment per m/s of horizontal speed
        [N m s/m] (tilt coordinates; negative when the drag acts above the
        centre of mass).
      horizontal_damping: (k_v, k_v) [N s/m].
      plate_lag: time constant of the plate servo, the first-order model the
        robustness check adds [s] (0: ideal).
      estimate_lag: low-frequency delay of the cycle-averaged estimate [s]
        (:func:`notch_delay`; 0: ideal).
      thrust_gain: (t_x, t_y) thrust tilt toward +x, +y per unit input
        [rad per input unit]: 1 for the plate robot, whose input is the
        plate's thrust tilt; a robot steered by other channels tilts its
        thrust by its thrust tilt T (:func:`channel_axes`).
      channels: (j_x, j_y) the control channel each axis' input drives and
        ``channel_signs`` (s_x, s_y): ``u_i = s_i c[j_i]`` for the channel
        vector c; the plate robot's ``u_x = -delta_r``, ``u_y = -delta_p``
        are (1, 0), (-1, -1).
    """

    mass: float = 0.03
    gravity: float = 9.81
    inertia: tuple[float, float] = (4.14e-6, 4.99e-6)
    control_gain: tuple[float, float] = (5.48e-4, 5.53e-4)
    rate_damping: tuple[float, float] = (1.70e-5, 4.86e-5)
    coupling: tuple[float, float] = (-1.97e-4, -1.96e-4)
    horizontal_damping: tuple[float, float] = (0.0187, 0.0187)
    plate_lag: float = 0.002
    estimate_lag: float = 0.0
    thrust_gain: tuple[float, float] = (1.0, 1.0)
    channels: tuple[int, int] = (1, 0)
    channel_signs: tuple[float, float] = (-1.0, -1.0)

    def __post_init__(self):
        check_positive("LinearHoverModel.mass", self.mass)
        check_positive("LinearHoverModel.gravity", self.gravity)
        for name in ("inertia", "control_gain", "rate_damping", "horizontal_damping", "coupling", "thrust_gain",
                     "channel_signs"):
            v = np.asarray(getattr(self, name), dtype=float)
            if v.shape != (2,) or not np.all(np.isfinite(v)):
                raise ConfigError(f"LinearHoverModel.{name}: expected 2 finite numbers (x, y), got {getattr(self, name)!r}")
        for name in ("inertia", "control_gain"):
            check_positive(f"LinearHoverModel.{name}", np.asarray(getattr(self, name)))
        # rate_damping may be negative (an anti-damped axis); LQR stabilizes that open loop too
        check_positive("LinearHoverModel.horizontal_damping", np.asarray(self.horizontal_damping), allow_zero=True)
        check_positive("LinearHoverModel.plate_lag", self.plate_lag, allow_zero=True)
        check_positive("LinearHoverModel.estimate_lag", self.estimate_lag, allow_zero=True)
        if len(set(self.channels)) != 2 or not all(isinstance(j, int) and j >= 0 for j in self.channels):
            raise ConfigError(f"LinearHoverModel.channels: expected two different channel indices, got {self.channels!r}")

    @classmethod
    def per_wing(cls, **changes) -> LinearHoverModel:
        """The per-wing robot at its hover frequency (42.2 Hz): inertia of
        the MJCF about the centre of mass; control moments (about the moving
        centre of mass), rate damping, horizontal damping and the
        speed-to-moment coupling identified by flapjax identify --quick on
        the stiff-plate robot (k_pitch = 5.48e-4, k_roll = 5.53e-4 N m/rad;
        D_x = 4.86e-5, D_y = 1.70e-5 N m s/rad; k_v = 0.0187 N s/m;
        M_u = -1.97e-4, L_v = +1.96e-4 N m per m/s)."""
        return dataclasses.replace(cls(), **changes)

    @classmethod
    def from_averaged(cls, params, *, inertia=(4.14e-6, 4.99e-6), coupling=None, frequency=None,
                      **changes) -> LinearHoverModel:
        """From :class:`flapjax.aero.cycle_averaged.CycleAveragedParams`
        (control moments scaled to ``frequency``, default the hover
        frequency; ``coupling`` default the model's own speed-to-moment
        coupling ``(M_u, -L_v)``). With a ``control_matrix`` each axis is
        driven by the channel :func:`channel_axes` picks."""
        if coupling is None:
            coupling = (float(params.pitch_speed_coupling), -float(params.roll_speed_coupling))
        f = float(params.hover_frequency if frequency is None else frequency)
        lam = (f / float(params.reference_frequency)) ** 2
        d = np.asarray(params.rate_damping, dtype=float)
        kv = float(params.horizontal_damping)
        if params.control_matrix is None:  # the plate robot
            control = dict(control_gain=(lam * float(params.pitch_gain), lam * float(params.roll_gain)))
        else:
            control = channel_axes(params.control_matrix, params.thrust_tilt, lam)._asdict()
        return cls(mass=float(params.mass), gravity=float(params.gravity), inertia=tuple(inertia),
                   rate_damping=(float(d[1]), float(d[0])), coupling=tuple(coupling), horizontal_damping=(kv, kv),
                   **{**control, **changes})


class ChannelAxes(NamedTuple):
    """The channel that drives each axis and its gains: the
    :class:`LinearHoverModel` fields of the same names, pairs (x axis, y axis).

    Attributes:
      control_gain: (k_x, k_y) moment per unit of the driving channel [N m per unit].
      thrust_gain: (t_x, t_y) thrust tilt per unit of the driving channel [rad per unit].
      channels: (j_x, j_y) the channel index driving each axis.
      channel_signs: (s_x, s_y) +-1, the sign that makes each control gain positive.
    """

    control_gain: tuple[float, float]
    thrust_gain: tuple[float, float]
    channels: tuple[int, int]
    channel_signs: tuple[float, float]


def channel_axes(matrix, tilt, lam: float) -> ChannelAxes:
    """The channel that drives each axis and its gains, from a control
    matrix B (3, nc) [N m per unit at f_ref] and thrust tilt T (2, nc) or
    None, at ``lambda_f = lam``: the x axis (tilt toward +x, a +y moment) by
    the channel with the largest |B_yj|, the y axis (tilt toward +y, a -x
    moment) by the largest |B_xj|; the sign makes each control gain
    positive."""
    b = np.asarray(matrix, dtype=float)
    t = np.zeros((2, b.shape[1])) if tilt is None else np.asarray(tilt, dtype=float)
    toward = (b[1], -b[0])  # moment that tilts the body toward +x, +y per unit of each channel
    j = (int(np.argmax(np.abs(toward[0]))), int(np.argmax(np.abs(toward[1]))))
    if j[0] == j[1]:
        raise ConfigError(f"control_matrix: one channel ({j[0]}) drives both the pitch and the roll moment most; "
                          "the hover model needs one channel per axis")
    signs = tuple(float(np.sign(toward[i][j[i]])) for i in (0, 1))
    if 0.0 in signs:
        raise ConfigError("control_matrix: no channel makes a pitch or roll moment")
    return ChannelAxes(control_gain=tuple(lam * signs[i] * toward[i][j[i]] for i in (0, 1)),
                       thrust_gain=tuple(-signs[i] * t[i, j[i]] for i in (0, 1)), channels=j, channel_signs=signs)


def model_from_linearization(a: np.ndarray, b: np.ndarray, *, inertia=(4.14e-6, 4.99e-6), mass: float = 0.03,
                             **changes) -> LinearHoverModel:
    """:class:`LinearHoverModel` from the averaged model's linearization
    (:func:`flapjax.aero.cycle_averaged.linearize_hover`: state ``(x, y, vx,
    vy, roll, pitch, p, q)``, input ``(delta_p, delta_r)``).

    The x axis is ``(x, vx, pitch, q)`` with ``u_x = -delta_r``; the y axis
    is ``(y, vy, -roll, -p)`` with ``u_y = -delta_p`` (tilt toward +y is a
    negative roll). The linearization gives moments per inertia; ``inertia``
    (I_yy, I_xx) [kg m^2] and ``mass`` [kg] scale them back to the model's
    fields (the closed loop does not depend on that choice)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != (8, 8) or b.shape != (8, 2):
        raise ConfigError(f"(a, b): expected shapes (8, 8) and (8, 2), got {a.shape} and {b.shape}")
    axes = (([0, 2, 5, 7], np.ones(4), 1), ([1, 3, 4, 6], np.array([1.0, 1.0, -1.0, -1.0]), 0))
    mats = []
    for idx, sign, col in axes:
        ai = sign[:, None] * a[np.ix_(idx, idx)] * sign[None, :]
        bi = -sign * b[idx, col]
        mats.append((ai, bi))
    g = tuple(float(ai[1, 2]) for ai, _ in mats)
    if abs(g[0] - g[1]) > 1e-9 * max(abs(g[0]), 1.0):
        raise ConfigError(f"(a, b): the two axes disagree on g: {g}")
    inertia = tuple(float(v) for v in inertia)
    return LinearHoverModel(
        mass=mass, gravity=g[0], inertia=inertia,
        control_gain=tuple(float(bi[3]) * i for (_, bi), i in zip(mats, inertia)),
        rate_damping=tuple(-float(ai[3, 3]) * i for (ai, _), i in zip(mats, inertia)),
        coupling=tuple(float(ai[3, 1]) * i for (ai, _), i in zip(mats, inertia)),
        horizontal_damping=tuple(-float(ai[1, 1]) * mass for ai, _ in mats),
        **changes,
    )


def notch_delay(frequency: float, *, harmonics=DEFAULT_HARMONICS, quality: float = 1.0) -> float:
    """Low-frequency group delay of the notch bank, ``sum_h 1 / (Q 2 pi h f)`` [s]."""
    return float(sum(1.0 / (quality * 2.0 * np.pi * h * frequency) for h in harmonics))


def axis_matrices(model: LinearHoverModel, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """(A (4, 4), B (4, 1)) of one axis (0: x, 1: y), state
    ``[position, velocity, tilt, tilt rate]``, input the plate's thrust tilt."""
    if axis not in (0, 1):
        raise ConfigError(f"axis: must be 0 (x) or 1 (y), got {axis!r}")
    m, g = model.mass, model.gravity
    inertia, k = model.inertia[axis], model.control_gain[axis]
    d, c, kv = model.rate_damping[axis], model.coupling[axis], model.horizontal_damping[axis]
    a = np.array([[0.0, 1.0, 0.0, 0.0], [0.0, -kv / m, g, 0.0], [0.0, 0.0, 0.0, 1.0], [0.0, c / inertia, 0.0, -d / inertia]])
    b = np.array([[0.0], [g * model.thrust_gain[axis]], [0.0], [k / inertia]])
    return a, b


def linear_hover_model(model: LinearHoverModel) -> tuple[np.ndarray, np.ndarray]:
    """(A (8, 8), B (8, 2)): both axes, state ``[x, v_x, theta_x, w_x, y,
    v_y, theta_y, w_y]`` and input ``[u_x, u_y]``."""
    a = np.zeros((8, 8))
    b = np.zeros((8, 2))
    for i in (0, 1):
        ai, bi = axis_matrices(model, i)
        a[4 * i : 4 * i + 4, 4 * i : 4 * i + 4] = ai
        b[4 * i : 4 * i + 4, i] = bi[:, 0]
    return a, b


def lqr(a: np.ndarray, b: np.ndarray, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Continuous LQR gain ``K = R^-1 B^T P`` with ``P`` the stabilizing
    solution of ``A^T P + P A - P B R^-1 B^T P + Q = 0``."""
    p = scipy.linalg.solve_continuous_are(a, b, q, r)
    return np.linalg.solve(r, b.T @ p)


@dataclass(frozen=True)
class LqrWeights:
    """LQR weights as largest acceptable excursions (Bryson's rule):
    ``Q = diag(1 / s_max^2)``, ``R = 1 / u_max^2``.

    Attributes:
      position: [m]. velocity: [m/s]. tilt: [rad]. rate: [rad/s].
      plate: plate angle [rad].
    """

    position: float = 0.02
    velocity: float = 0.1
    tilt: float = 0.05
    rate: float = 1.5
    plate: float = 0.05


def design_feedback(model: LinearHoverModel, weights: LqrWeights = LqrWeights()) -> np.ndarray:
    """(2, 4) LQR state feedback ``K`` per axis on the lag-free model."""
    q = np.diag([1 / weights.position**2, 1 / weights.velocity**2, 1 / weights.tilt**2, 1 / weights.rate**2])
    r = np.array([[1 / weights.plate**2]])
    return np.stack([lqr(*axis_matrices(model, i), q, r)[0] for i in (0, 1)])


def gains_from_feedback(k: np.ndarray, gravity: float, base: HoverGains | None = None, **changes) -> HoverGains:
    """Per-axis :class:`HoverGains` of the state feedback ``k`` (2, 4); the
    altitude loop and limits from ``base`` (default :class:`HoverGains`)."""
    k = np.asarray(k, dtype=float)
    if k.shape != (2, 4):
        raise ConfigError(f"k: expected shape (2, 4), got {k.shape}")
    if np.any(k[:, 2] <= 0):
        raise ConfigError(f"k: the tilt gain must be positive for the cascade form, got {k[:, 2].tolist()}")
    base = HoverGains() if base is None else base
    kw = dict(position_p=gravity * k[:, 0] / k[:, 2], position_d=gravity * k[:, 1] / k[:, 2],
              attitude_p=k[:, 2], attitude_d=k[:, 3])
    kw.update(changes)
    return _replace(base, **kw)


def _replace(gains: HoverGains, **kw) -> HoverGains:
    fields = {f.name: getattr(gains, f.name) for f in dataclasses.fields(gains)}
    fields.update(kw)
    return type(gains)(**fields)


def feedback_from_gains(gains: HoverGains, gravity: float) -> np.ndarray:
    """The (2, 4) state feedback of per-axis (or scalar) cascade gains."""
    ka = np.broadcast_to(np.asarray(gains.attitude_p, dtype=float), (2,))
    kw = np.broadcast_to(np.asarray(gains.attitude_d, dtype=float), (2,))
    kp = np.broadcast_to(np.asarray(gains.position_p, dtype=float), (2,))
    kd = np.broadcast_to(np.asarray(gains.position_d, dtype=float), (2,))
    return np.stack([kp * ka / gravity, kd * ka / gravity, ka, kw], axis=1)


def closed_loop(model: LinearHoverModel, k: np.ndarray, axis: int, *, lags: bool = True) -> np.ndarray:
    """Closed-loop matrix of one axis under ``u = -k[axis] s``; with
    ``lags`` the plate servo and the estimate add first-order lags
    (``model.plate_lag``, ``model.estimate_lag``) between them."""
    a, b = axis_matrices(model, axis)
    kk = np.asarray(k, dtype=float)[axis][None, :]
    taus = [t for t in ((model.plate_lag, model.estimate_lag) if lags else ()) if t > 0]
    if not taus:
        return a - b @ kk
    # Series of first-order lags: u_1' = (-k s - u_1) / tau_1, u_2' = (u_1 - u_2) / tau_2, ...; u = u_last.
    n = 4 + len(taus)
    acl = np.zeros((n, n))
    acl[:4, :4] = a
    acl[:4, n - 1] = b[:, 0]
    for j, tau in enumerate(taus):
        row = 4 + j
        acl[row, row] = -1.0 / tau
        if j == 0:
            acl[row, :4] = -kk[0] / tau
        else:
            acl[row, row - 1] = 1.0 / tau
    return acl


def closed_loop_eigenvalues(model: LinearHoverModel, k: np.ndarray, *, lags: bool = True) -> np.ndarray:
    """Eigenvalues of both axes' closed loops, concatenated [1/s]."""
    return np.concatenate([np.linalg.eigvals(closed_loop(model, k, i, lags=lags)) for i in (0, 1)])


def altitude_gains(hover_frequency: float, gravity: float, pole: float = 5.0) -> dict[str, float]:
    """PID altitude gains placing the three vertical poles at ``-pole``
    [rad/s]. Linearized, ``z'' = b df`` with ``b = 2 g / f_h`` [m/s^2 per
    Hz] (from ``m g = k_f f_h^2``), so ``s^3 + b K_d s^2 + b K_p s + b K_i =
    (s + pole)^3``. Returns ``altitude_p`` [Hz/m], ``altitude_i``
    [Hz/(m s)], ``altitude_d`` [Hz s/m]."""
    check_positive("hover_frequency", hover_frequency)
    check_positive("pole", pole)
    b = 2.0 * gravity / hover_frequency
    return {"altitude_d": 3.0 * pole / b, "altitude_p": 3.0 * pole**2 / b, "altitude_i": pole**3 / b}


def design_gains(model: LinearHoverModel | None = None, weights: LqrWeights = LqrWeights(), *,
                 coupling_scale: float = 0.5, hover_frequency: float = 42.2213, altitude_pole: float = 5.0,
                 base: HoverGains | None = None, **changes) -> HoverGains:
    """Gains of the per-wing robot: LQR on ``model`` (default
    :meth:`LinearHoverModel.per_wing`) with its speed-to-moment coupling
    scaled by ``coupling_scale``, in the controller's per-axis cascade form;
    the altitude poles at ``-altitude_pole`` (:func:`altitude_gains`); the
    cycle-averaged estimate switched on (``cycle_filter=True``). ``changes``
    override any field of the result.

    With the default half coupling both rate gains come out positive and the
    linear closed loop stays stable from no coupling to three times the
    identified one. On the stiff-plate robot's (smaller) coupling the full
    coupling design also keeps positive rate gains and flies as well, with a
    slightly larger cycle-mean tilt (benchmarks/flapper_hover.py). The
    altitude poles at -5 rad/s (not -4) let the integrator remove the
    per-wing lift's departure from ``k_f f_h^2`` and a 5 cm start offset
    within the 2 s flight."""
    model = LinearHoverModel.per_wing() if model is None else model
    check_positive("coupling_scale", coupling_scale, allow_zero=True)
    design_model = dataclasses.replace(model, coupling=tuple(coupling_scale * c for c in model.coupling))
    k = design_feedback(design_model, weights)
    changes = {"cycle_filter": True, **altitude_gains(hover_frequency, model.gravity, altitude_pole), **changes}
    return gains_from_feedback(k, model.gravity, base, **changes)
