"""What the free per-wing robot does after a plate step, piece by piece.

The open-loop fidelity score (docs/physics.md, Open-loop fidelity score)
finds the identified cycle-averaged model wrong on plate steps. This script
takes the per-wing response apart, all open loop, at ``dt = 5e-5 s`` (where
the +/- pairs are linear), in float64, as half the difference of a +/- pair
of cycle-mean tilts per radian of plate command:

1. the whole robot;
2. aerodynamics off (``lift_scale`` 1e-9, ``moment_scale`` 0): the plate's
   and the flapping wings' inertial reaction on the body;
3. aerodynamics off and wings still (amplitude 1e-6 rad): the reaction of
   the plate and wings as a rigid body;
4. the cycle-averaged model;
5. the plate *held* at the angle from a start on that plate angle's own
   periodic orbit (no step): cycle-mean aerodynamic moment about the base
   origin in the first wingbeat, against the fixed-base one, and the tilt;
6. a linear estimate in which the flapping damping ``D_w`` acts on the
   stroke plane's rate (body rate plus plate-joint rate), so a plate step
   gives the body an angular impulse ``-D_w * step``.

Usage: ``python -m benchmarks.plate_step_decomposition [cycle_averaged.json]``
(default: the packaged model). Takes about 3 minutes on two cores.
"""

from __future__ import annotations

import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg as sl

jax.config.update("jax_enable_x64", True)

from flapjax.aero.cycle_averaged import CycleAveragedParams, linearize_hover  # noqa: E402
from flapjax.sim import flapper as fl  # noqa: E402
from flapjax.sim.flapper import free_flights as ff  # noqa: E402
from flapjax.sim.flapper.robot import AVERAGED_PATH  # noqa: E402
from flapjax.sim.flapper.step import rollout  # noqa: E402

DT = 5e-5
ONSET, HORIZON = 0.02, 0.15
TIMES_MS = (10, 25, 50, 80, 110, 135)
AXIS = {"pitch_joint": 1, "roll_joint": 0}  # tilt component each joint moves (toward +y, toward +x)


def _model(path: str) -> CycleAveragedParams:
    mass, g = fl.robot_weight()
    p = CycleAveragedParams.from_json(path)
    return eqx.tree_at(lambda q: (q.mass, q.gravity), p, (jnp.asarray(mass), jnp.asarray(g)))


def _at(flights: ff.Flights, name: str, axis: int, amplitude: float) -> np.ndarray:
    t = flights.time
    i = np.searchsorted(t, ONSET + 1e-3 * np.asarray(TIMES_MS)).clip(0, len(t) - 1)
    return flights.responses[name].tilt[i, axis] / amplitude


def step_pieces(model: CycleAveragedParams, amplitude: float) -> dict[str, dict[str, np.ndarray]]:
    """Rows 1-4: per joint, per piece, the response per radian at ``TIMES_MS``."""
    man = [ff.Manoeuvre(j, plate=(amplitude, 0.0) if j == "pitch_joint" else (0.0, amplitude)) for j in AXIS]
    f_h = float(jnp.sqrt(model.mass * model.gravity / model.lift_coefficient))
    kw = dict(hover_frequency=f_h, gravity=float(model.gravity), height=0.5, onset=ONSET, horizon=HORIZON)
    robot = fl.make_robot("free", "wing", backend="rigid", timestep=DT)
    params = fl.default_params(robot, frequency=f_h, averaged=model)
    off = eqx.tree_at(lambda q: (q.aero.lift_scale, q.aero.moment_scale), params, (jnp.asarray(1e-9), jnp.asarray(0.0)))
    still = eqx.tree_at(lambda q: q.stroke.amplitude, off, 1e-6 * jnp.ones_like(params.stroke.amplitude))
    runs = {"whole robot": ff.fly_manoeuvres(robot, params, man, **kw),
            "aerodynamics off": ff.fly_manoeuvres(robot, off, man, **kw),
            "aerodynamics off, wings still": ff.fly_manoeuvres(robot, still, man, **kw),
            "cycle-averaged model": ff.averaged_flights(model, man, height=0.5, onset=ONSET, horizon=HORIZON)}
    return {j: {k: _at(r, j, AXIS[j], amplitude) for k, r in runs.items()} for j in AXIS}


def held_plate(model: CycleAveragedParams, amplitude: float) -> dict[str, np.ndarray]:
    """Row 5, roll_joint: first-wingbeat aerodynamic moment about y [N m per
    rad] in free flight and on the fixed base, and the tilt toward +x per
    radian after each of the first five wingbeats."""
    f_h = float(jnp.sqrt(model.mass * model.gravity / model.lift_coefficient))
    per = int(round(1.0 / (f_h * DT)))
    robot = fl.make_robot("free", "wing", backend="rigid", timestep=DT)

    @jax.jit
    def fly(p):
        s = fl.init_state(robot, p, position=jnp.array([0.0, 0.0, 0.5]), periodic=True)
        _, (m, q) = rollout(robot, p, s, 5 * per, observe=lambda st, dg: (dg.moment_world, st.data.qpos[3:7]),
                             checkpoint=False)
        return m, q

    out = []
    for sign in (1.0, -1.0):
        m, q = fly(fl.default_params(robot, frequency=f_h, averaged=model, plate=(0.0, sign * amplitude)))
        m, q = np.asarray(m), np.asarray(q)
        w, x, y, z = q[per - 1::per].T
        out.append((m.reshape(5, per, 3).mean(1)[0, 1], 2 * (x * z + w * y)))  # body z's x component
    fixed = fl.sweep([f_h, f_h], plate=np.array([[0.0, amplitude], [0.0, -amplitude]]),
                     robot=fl.make_robot("fixed", "wing", backend="rigid", timestep=DT))
    m_fixed = np.asarray(fixed.moment)[:, 1]
    return {"free, first wingbeat": 0.5 * (out[0][0] - out[1][0]) / amplitude,
            "fixed base": 0.5 * (m_fixed[0] - m_fixed[1]) / amplitude,
            "tilt after each wingbeat": 0.5 * (out[0][1] - out[1][1]) / amplitude}


def stroke_plane_damping(model: CycleAveragedParams) -> dict[str, np.ndarray]:
    """Row 6: the linear averaged model's step response plus the body-rate
    impulse ``-D_w * step / J`` (sign by joint axis), per radian."""
    inertia = np.asarray(fl.lumped_inertia())
    j = np.diag(inertia) if inertia.ndim == 2 else inertia
    a, b = linearize_hover(model, inertia)
    d = np.asarray(model.rate_damping)
    ts = 1e-3 * np.asarray(TIMES_MS)
    out = {}
    for name, k, tilt in (("pitch_joint", 0, lambda s: -s[4]), ("roll_joint", 1, lambda s: s[5])):
        aug = np.zeros((9, 9))
        aug[:8, :8], aug[:8, 8] = a, b[:, k]
        s0 = np.zeros(8)
        s0[6 + k] = -d[0] / j[0] if k == 0 else d[1] / j[1]  # pitch_joint turns about +x, roll_joint about -y
        out[name] = np.array([tilt(sl.expm(aug * t)[:8, 8]) + tilt(sl.expm(a * t) @ s0) for t in ts])
    return out


def main(path: str) -> None:
    model = _model(path)
    print(f"model {path}; dt {DT} s; per radian of plate command; times after the onset [ms]: {TIMES_MS}")
    for amplitude in (0.02, 0.05):
        for joint, rows in step_pieces(model, amplitude).items():
            print(f"\n{joint} step {amplitude} rad (tilt {'toward +y' if AXIS[joint] else 'toward +x'})")
            for k, v in rows.items():
                print(f"  {k:32s} {np.round(v, 3)}")
    for k, v in stroke_plane_damping(model).items():
        print(f"  {k} averaged + stroke-plane damping impulse {np.round(v, 3)}")
    held = held_plate(model, 0.02)
    print("\nroll_joint held at +/-0.02 rad from its own orbit:")
    for k, v in held.items():
        print(f"  {k:26s} {np.round(v, 7) if np.ndim(v) == 0 else np.round(v, 3)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(AVERAGED_PATH))
