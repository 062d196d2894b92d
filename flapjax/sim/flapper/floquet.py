"""Floquet analysis of the free per-wing robot about its hover orbit.

The flapping robot is a periodically forced system: the stroke servos follow
a schedule of period ``T = 1 / f``. Its open-loop stability about hover is
that of the cycle map ``P``: the state at a stroke phase mapped to the state
one period later (:func:`period_map`). A hover trim is a fixed point of
``P`` that also returns to its start position (:func:`trim_orbit`); the
Jacobian of ``P`` there is the monodromy matrix (:func:`monodromy`), whose
eigenvalues ``mu`` give the Floquet exponents ``log(mu) / T``
(:func:`floquet_exponents`), the growth rates [1/s] a cycle-averaged model's
eigenvalues should match. Formulas and measured numbers: docs/physics.md,
Floquet analysis of the per-wing hover.

The same functions take the free robot flying the cycle-averaged model
(an autonomous system: any ``n_steps``), whose exponents are then the
eigenvalues of its linearization, a check of the machinery.

The reduced state ``x`` (21,) excludes the base position (the dynamics do
not depend on it; the trim asks for zero displacement per period instead):

====  ==================================================================
0:3   attitude, rotation vector of ``R_WB`` (world axes; about level: roll,
      pitch, yaw) [rad]
3:9   joint angles: plate (pitch_joint, roll_joint), stroke (left, right),
      feathering (left, right) [rad]
9:12  base linear velocity, world frame [m/s]
12:15 base angular velocity, body frame [rad/s]
15:21 joint rates in the order of 3:9 [rad/s]
====  ==================================================================

``python -m flapjax.sim.flapper.floquet [dt [dt_start]]`` prints the trim
(Newton started from the periodic start, or from the trim at ``dt_start``:
the robot has more than one hover orbit), the exponents with their
dominant states, the finite-difference check and the open-loop drifts.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, FlapperState
from flapjax.sim.flapper.state import init_state
from flapjax.sim.flapper.step import step
from flapjax.validation import ConfigError, is_traced

STATE_NAMES = ("att_x", "att_y", "att_z", "pitch_joint", "roll_joint", "stroke_L", "stroke_R", "feather_L",
               "feather_R", "v_x", "v_y", "v_z", "w_x", "w_y", "w_z", "pitch_joint_dot", "roll_joint_dot",
               "stroke_L_dot", "stroke_R_dot", "feather_L_dot", "feather_R_dot")
#: State groups by which an eigenvector is classified: slices of the reduced state.
GROUPS = {"attitude": (0, 3), "plate": (3, 5), "stroke": (5, 7), "feathering": (7, 9), "velocity": (9, 12),
          "body rate": (12, 15), "plate rate": (15, 17), "stroke rate": (17, 19), "feathering rate": (19, 21)}
YAW = 2  # index of the attitude about world z: the yaw symmetry makes it neutral


class Trim(eqx.Module):
    """A hover trim: the fixed point of :func:`period_map` and its inputs.

    Attributes:
      x: (21,) reduced state at the start phase (module docstring).
      plate: (2,) constant plate command (pitch_joint, roll_joint) [rad].
      amplitude: () stroke amplitude A that makes the mean lift the weight [rad].
      residual: (k + 1,) RMS of the scaled residual (:func:`trim_residual`)
        at the start and after each of the k Gauss-Newton steps taken.
    """

    x: Float[Array, "21"]
    plate: Float[Array, "2"]
    amplitude: Float[Array, ""]
    residual: Float[Array, " n"]


def steps_per_period(robot: FlapperRobot, frequency: float) -> int:
    """Whole steps in one wingbeat at ``frequency`` [Hz], rounded: the period
    map needs ``f dt N`` to be an integer (use ``1 / (N dt)`` as frequency)."""
    return int(round(1.0 / (float(frequency) * robot.dt)))


def _check(robot: FlapperRobot, params: FlapperParams, n_steps: int) -> None:
    if robot.root != "free":
        raise ConfigError(f"robot: the Floquet analysis needs the free root (a body that moves), got "
                          f"root={robot.root!r}")
    if n_steps < 1:
        raise ConfigError(f"n_steps: must be at least 1, got {n_steps}")
    f = params.stroke.frequency
    if robot.aero_model == "wing" and not is_traced(f):
        cycles = float(f) * robot.dt * n_steps
        if abs(cycles - round(cycles)) > 1e-9 or round(cycles) < 1:
            raise ConfigError(f"n_steps: {n_steps} steps of {robot.dt:g} s hold {cycles:.6f} wingbeats at "
                              f"{float(f):g} Hz; a period map needs a whole number (frequency 1 / (N dt))")


def rotvec_to_quat(theta: Float[Array, "3"]) -> Float[Array, "4"]:
    """(4,) unit quaternion ``[w, x, y, z]`` of the rotation vector ``theta`` (3,) [rad]."""
    a2 = jnp.sum(theta * theta)
    small = a2 < 1e-12
    a = jnp.sqrt(jnp.where(small, 1.0, a2))
    half_sinc = jnp.where(small, 0.5 - a2 / 48.0, jnp.sin(0.5 * a) / a)  # sin(a/2)/a, series for AD at 0
    cos_half = jnp.where(small, 1.0 - a2 / 8.0, jnp.cos(0.5 * a))
    return jnp.concatenate([cos_half[None], half_sinc * theta])


def quat_to_rotvec(q: Float[Array, "4"]) -> Float[Array, "3"]:
    """(3,) rotation vector [rad] of the quaternion ``q = [w, x, y, z]`` (normalized here)."""
    q = q / jnp.linalg.norm(q)
    q = jnp.where(q[0] < 0, -q, q)
    n2 = jnp.sum(q[1:] ** 2)
    small = n2 < 1e-12
    n = jnp.sqrt(jnp.where(small, 1.0, n2))
    scale = jnp.where(small, 2.0 / q[0] * (1.0 - n2 / (3.0 * q[0] ** 2)), 2.0 * jnp.arctan2(n, q[0]) / n)
    return scale * q[1:]


def _joint_indices(robot: FlapperRobot) -> tuple[np.ndarray, np.ndarray]:
    q = np.array(robot.plate_q + robot.stroke_q + robot.pitch_q)
    v = np.array(robot.plate_v + robot.stroke_v + robot.pitch_v)
    return q, v


def reduced_state(robot: FlapperRobot, state: FlapperState) -> Float[Array, "21"]:
    """(21,) reduced state (module docstring) of a free per-wing robot's state."""
    qpos, qvel = state.data.qpos, state.data.qvel
    a, v = robot.free_q, robot.free_v
    jq, jv = _joint_indices(robot)
    return jnp.concatenate([quat_to_rotvec(qpos[a + 3:a + 7]), qpos[jq], qvel[v:v + 6], qvel[jv]])


def full_state(robot: FlapperRobot, params: FlapperParams, x: Float[Array, "21"], *, phase=0.0,
               position=(0.0, 0.0, 0.5)) -> FlapperState:
    """The :class:`FlapperState` at step 0 with stroke phase ``phase`` [cycles],
    base at ``position`` (3,) [m] and the reduced state ``x`` (21,)."""
    data = init_state(robot, params, periodic=False).data
    a, v = robot.free_q, robot.free_v
    jq, jv = _joint_indices(robot)
    x = jnp.asarray(x, dtype=data.qpos.dtype)
    qpos = (data.qpos.at[a:a + 3].set(jnp.asarray(position, dtype=x.dtype)).at[a + 3:a + 7].set(rotvec_to_quat(x[:3]))
            .at[jq].set(x[3:9]))
    qvel = data.qvel.at[v:v + 6].set(x[9:15]).at[jv].set(x[15:21])
    return FlapperState(data=data.replace(qpos=qpos, qvel=qvel), step=jnp.zeros((), jnp.int32),
                        phase_offset=jnp.asarray(phase, dtype=x.dtype), healthy=jnp.ones((), bool))


def flow(robot: FlapperRobot, params: FlapperParams, x: Float[Array, "21"], n_steps: int, *,
         phase=0.0) -> tuple[Float[Array, "21"], Float[Array, "3"]]:
    """Fly ``n_steps`` open loop from ``x`` (21,) at stroke phase ``phase``
    [cycles]; returns the reduced state (21,) at the end and the base
    displacement (3,) [m]."""
    _check(robot, params, n_steps)
    start = full_state(robot, params, x, phase=phase)

    def one(st, _):
        return step(robot, params, st)[0], None

    end, _ = jax.lax.scan(one, start, None, length=n_steps)
    a = robot.free_q
    return reduced_state(robot, end), end.data.qpos[a:a + 3] - start.data.qpos[a:a + 3]


def period_map(robot: FlapperRobot, params: FlapperParams, x: Float[Array, "21"], n_steps: int, *,
               phase=0.0) -> Float[Array, "21"]:
    """The cycle map ``P``: reduced state (21,) at phase ``phase`` [cycles]
    to the reduced state one period (``n_steps`` steps, ``f dt n_steps`` a
    whole number) later, open loop with the command in ``params``."""
    return flow(robot, params, x, n_steps, phase=phase)[0]


def monodromy(robot: FlapperRobot, params: FlapperParams, x: Float[Array, "21"], n_steps: int, *,
              phase=0.0) -> Float[Array, "21 21"]:
    """(21, 21) Jacobian ``dP/dx`` of :func:`period_map` at ``x`` (forward
    mode; the monodromy matrix when ``x`` is a trim). Units: those of the
    reduced state's entries (row over column)."""
    return jax.jacfwd(lambda y: period_map(robot, params, y, n_steps, phase=phase))(x)


def _unknowns_to(x_start, z):
    """Split the trim unknowns ``z`` (23,) = (x without yaw (20,), plate (2,), amplitude)."""
    x = jnp.concatenate([z[:YAW], x_start[YAW:YAW + 1], z[YAW:20]])
    return x, z[20:22], z[22]


def trim_residual(robot: FlapperRobot, params: FlapperParams, x_start: Float[Array, "21"], z: Float[Array, "23"],
                  n_steps: int, *, phase=0.0) -> Float[Array, "24"]:
    """Scaled trim residual (24,): ``P(x) - x`` with the rates and
    velocities times the period (an angle or a displacement over one
    wingbeat: rad, m), and the base displacement over the period [m].
    ``z`` (23,): the reduced state without yaw (which keeps ``x_start``'s),
    the plate command (2,) [rad] and the stroke amplitude [rad]."""
    x, plate, amplitude = _unknowns_to(x_start, z)
    p = eqx.tree_at(lambda q: (q.plate, q.stroke.amplitude), params, (plate, amplitude))
    x_end, disp = flow(robot, p, x, n_steps, phase=phase)
    weight = jnp.concatenate([jnp.ones(9), jnp.full(12, n_steps * robot.dt)]).astype(x.dtype)
    return jnp.concatenate([(x_end - x) * weight, disp])


def trim_orbit(robot: FlapperRobot, params: FlapperParams, x_start: Float[Array, "21"], n_steps: int, *,
               phase=0.0, n_iter: int = 8, tol: float = 1e-12) -> Trim:
    """Hover trim by damped Gauss-Newton on :func:`trim_residual`.

    Unknowns: the reduced state at phase ``phase`` [cycles] except yaw
    (neutral: held at ``x_start``'s), the constant plate command and the
    stroke amplitude (which sets the mean lift at the period's frequency
    ``f = 1 / (n_steps dt)``). Conditions: one period later the state
    returns (``P(x) = x``, 21) and the base has not moved (3). Each step
    solves the linearized residual with ``lstsq`` (forward-mode Jacobian,
    (24, 23)) and halves the step until the residual decreases (at most 6
    times). Stops after ``n_iter`` steps or once the RMS residual is below
    ``tol``. Starts from ``x_start`` (21,) and ``params``' plate and amplitude.
    """
    _check(robot, params, n_steps)
    x_start = jnp.asarray(x_start)
    res = jax.jit(lambda z: trim_residual(robot, params, x_start, z, n_steps, phase=phase))
    jac = jax.jit(jax.jacfwd(lambda z: trim_residual(robot, params, x_start, z, n_steps, phase=phase)))
    z = jnp.concatenate([x_start[:YAW], x_start[YAW + 1:], jnp.asarray(params.plate, x_start.dtype),
                         jnp.asarray(params.stroke.amplitude, x_start.dtype)[None]])
    r = res(z)
    history = [float(jnp.sqrt(jnp.mean(r**2)))]
    for _ in range(n_iter):
        if history[-1] < tol:
            break
        dz = jnp.linalg.lstsq(jac(z), -r)[0]
        for _ in range(7):
            r_new = res(z + dz)
            if float(jnp.sqrt(jnp.mean(r_new**2))) < history[-1]:
                break
            dz = 0.5 * dz
        z, r = z + dz, r_new
        history.append(float(jnp.sqrt(jnp.mean(r**2))))
    x, plate, amplitude = _unknowns_to(x_start, z)
    return Trim(x=x, plate=plate, amplitude=amplitude, residual=jnp.asarray(history))


def trim_params(params: FlapperParams, trim: Trim) -> FlapperParams:
    """``params`` with the trim's plate command and stroke amplitude."""
    return eqx.tree_at(lambda q: (q.plate, q.stroke.amplitude), params, (trim.plate, trim.amplitude))


def floquet_exponents(m: np.ndarray, period: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Floquet multipliers of the monodromy ``m`` (n, n) over ``period`` [s].

    Returns: multipliers ``mu`` (n,), exponents ``log(mu) / period`` (n,)
    [1/s] (real part: growth rate; imaginary part: frequency modulo
    ``2 pi / period``), sorted by decreasing real part, and the eigenvectors
    (n, n) as columns in the same order.
    """
    mu, vec = np.linalg.eig(np.asarray(m, dtype=float))
    lam = np.log(mu.astype(complex)) / float(period)
    order = np.argsort(-lam.real, kind="stable")
    return mu[order], lam[order], vec[:, order]


def group_shares(vec: np.ndarray, period: float) -> dict[str, float]:
    """Share of each state group (:data:`GROUPS`) in an eigenvector (21,);
    the shares sum to 1. To compare units, a rate counts as the angle it
    sweeps in one ``period`` [s] and a velocity as the distance it covers
    in one period in units of 1 cm (a conventional scale: 1 cm per
    wingbeat weighs as much as 1 rad)."""
    w = np.r_[np.ones(9), np.full(3, period / 0.01), np.full(9, period)]
    e = np.abs(np.asarray(vec) * w) ** 2
    total = e.sum()
    return {name: float(e[a:b].sum() / total) for name, (a, b) in GROUPS.items()}


#: Left-right mirror of the reduced state (y -> -y): sign per entry and the left/right swap.
_MIRROR_SIGN = np.array([-1, 1, -1, -1, 1, 1, 1, 1, 1, 1, -1, 1, -1, 1, -1, -1, 1, 1, 1, 1, 1], dtype=float)
_MIRROR_PERM = np.array([0, 1, 2, 3, 4, 6, 5, 8, 7, 9, 10, 11, 12, 13, 14, 15, 16, 18, 17, 20, 19])


def mirror_parity(vec: np.ndarray) -> float:
    """+1 for a mirror-symmetric (longitudinal: pitch, v_x, v_z, wings
    alike) eigenvector (21,), -1 for an antisymmetric (lateral: roll, yaw,
    v_y, wings opposite) one; in between for a mixed one."""
    v = np.asarray(vec)
    mirrored = _MIRROR_SIGN * v[_MIRROR_PERM]
    return float(np.real(np.vdot(v, mirrored)) / np.real(np.vdot(v, v)))


def mode_table(m: np.ndarray, period: float) -> list[dict]:
    """One row per Floquet mode of the monodromy ``m`` (21, 21): multiplier,
    exponent [1/s], mirror parity, and the two groups with the largest
    share (:func:`group_shares`), fastest-growing first."""
    mu, lam, vec = floquet_exponents(m, period)
    rows = []
    for i in range(mu.size):
        shares = sorted(group_shares(vec[:, i], period).items(), key=lambda kv: -kv[1])
        rows.append({"multiplier": complex(mu[i]), "exponent": complex(lam[i]), "parity": mirror_parity(vec[:, i]),
                     "groups": shares[:2]})
    return rows


def jacobian_check(robot: FlapperRobot, params: FlapperParams, x: Float[Array, "21"], m: np.ndarray, n_steps: int,
                   *, phase=0.0, steps=(1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)) -> dict[float, float]:
    """Largest relative column error of ``m`` (21, 21) against central
    differences of :func:`period_map` at each step size in ``steps`` (in
    the units of the perturbed entry); ``{step: error}``."""
    p = jax.jit(lambda y: period_map(robot, params, y, n_steps, phase=phase))
    fd = {h: np.stack([np.asarray(p(x.at[j].add(h)) - p(x.at[j].add(-h))) / (2 * h) for j in range(21)], axis=1)
          for h in steps}
    return {h: float(np.max(np.linalg.norm(d - m, axis=0) / np.linalg.norm(m, axis=0))) for h, d in fd.items()}


def cycle_mean_attitude(robot: FlapperRobot, params: FlapperParams, state: FlapperState, n_steps: int,
                        n_periods: int) -> np.ndarray:
    """(n_periods, 3) mean over each period (``n_steps`` steps) of the
    attitude rotation vector [rad] (about level: roll, pitch, yaw) of an
    open-loop flight from ``state`` (command from ``params``)."""
    a = robot.free_q

    def one(st, _):
        st = step(robot, params, st)[0]
        return st, quat_to_rotvec(st.data.qpos[a + 3:a + 7])

    _, att = jax.lax.scan(one, state, None, length=n_steps * n_periods)
    return np.asarray(att).reshape(n_periods, n_steps, 3).mean(axis=1)


def _print_modes(rows: list[dict]) -> None:
    print("| multiplier | exponent [1/s] | parity | dominant groups (share) |\n|---|---|---|---|")
    for r in rows:
        if abs(r["multiplier"]) < 1e-6:
            continue
        mu, lam = r["multiplier"], r["exponent"]
        groups = ", ".join(f"{g} {s:.2f}" for g, s in r["groups"])
        print(f"| {mu.real:+.4f}{mu.imag:+.4f}j | {lam.real:+.2f}{lam.imag:+.2f}j | {r['parity']:+.2f} | {groups} |")


def _analyse(robot, params, x, n, phase, name, check=False) -> None:
    m = np.asarray(jax.jit(lambda y: monodromy(robot, params, y, n, phase=phase))(x))
    print(f"\nFloquet modes, {name} (T = {n * robot.dt * 1e3:.3f} ms):")
    _print_modes(mode_table(m, n * robot.dt))
    if check:
        errors = jacobian_check(robot, params, x, m, n, phase=phase)
        print("monodromy vs central differences (step: max relative column error):",
              ", ".join(f"{h:g}: {e:.1e}" for h, e in errors.items()))


def stop_fraction(robot: FlapperRobot, params: FlapperParams, x: Float[Array, "21"], n_steps: int, *,
                  phase=0.0) -> float:
    """Fraction of the period (``n_steps`` steps from ``x`` (21,) at ``phase``
    [cycles]) that the left wing's feathering angle spends beyond the stop
    angle ``theta_s`` [-]: it tells the hover orbits apart."""
    start = full_state(robot, params, x, phase=phase)

    def one(st, _):
        return step(robot, params, st)[0], st.data.qpos[robot.pitch_q[0]]

    _, theta = jax.lax.scan(one, start, None, length=n_steps)
    return float(jnp.mean(jnp.abs(theta) > params.hinge.stop_angle))


def _start(timestep, start_timestep):
    from flapjax.sim.flapper.robot import default_params, make_robot

    robot = make_robot("free", "wing", backend="rigid", timestep=timestep)
    n = steps_per_period(robot, 42.2213)  # the default averaged model's hover frequency, whole steps
    params = default_params(robot, frequency=1.0 / (n * robot.dt))
    init = jax.jit(lambda p: init_state(robot, p, periodic=True))(params)
    x0, phase = reduced_state(robot, init), float(init.phase_offset)
    print(f"dt = {robot.dt:g} s, f = {1 / (n * robot.dt):.4f} Hz ({n} steps), start phase {phase:.4f} cycles")
    if start_timestep is None:
        return robot, n, params, init, x0, x0, phase
    other = _start(start_timestep, None)  # Newton starts from that timestep's trim (same period and phase)
    guess = trim_orbit(other[0], other[2], other[4], other[1], phase=other[6])
    print(f"Newton starts from the trim at dt = {start_timestep:g} s")
    return robot, n, trim_params(params, guess), init, x0, guess.x, phase


def _main(timestep: float | None = None, start_timestep: float | None = None) -> None:
    from flapjax.control import design

    jax.config.update("jax_enable_x64", True)
    robot, n, params, init, x0, guess, phase = _start(timestep, start_timestep)
    trim = trim_orbit(robot, params, guess, n, phase=phase)
    tp = trim_params(params, trim)
    print("trim residual (scaled RMS) per Gauss-Newton step:", " ".join(f"{r:.2e}" for r in np.asarray(trim.residual)))
    print(f"trim plate {np.asarray(trim.plate).round(6)} rad, amplitude {float(trim.amplitude):.6f} rad (nominal 1.5), "
          f"feathering beyond the stop {stop_fraction(robot, tp, trim.x, n, phase=phase):.3f} of the wingbeat")
    print("trim - periodic start:", ", ".join(f"{k} {v:+.4g}" for k, v in zip(STATE_NAMES, np.asarray(trim.x - x0))
                                              if abs(v) > 1e-9))
    _analyse(robot, params, x0, n, phase, "local Jacobian at the periodic start (not an orbit)")
    _analyse(robot, tp, trim.x, n, phase, "at the trim", check=timestep is None and start_timestep is None)
    for name, (st, p) in {"periodic start": (init, params),
                          "trim": (full_state(robot, tp, trim.x, phase=phase), tp)}.items():
        att = np.degrees(cycle_mean_attitude(robot, p, st, n, 13))
        print(f"open loop from the {name}: cycle-mean (roll, pitch) [deg] in wingbeats 1, 5, 9, 13:",
              "; ".join(f"{att[k, 0]:+.3f}, {att[k, 1]:+.3f}" for k in (0, 4, 8, 12)))
    a, _ = design.linear_hover_model(design.LinearHoverModel.per_wing())
    for axis in (0, 1):
        eig = np.linalg.eigvals(a[4 * axis:4 * axis + 4, 4 * axis:4 * axis + 4])
        print(f"averaged model (identified per-wing values), axis {'xy'[axis]}:",
              ", ".join(f"{e.real:+.2f}{e.imag:+.2f}j" for e in eig))


if __name__ == "__main__":  # python -m flapjax.sim.flapper.floquet [timestep [start_timestep]]
    import sys

    _main(*(float(a) for a in sys.argv[1:3]))
