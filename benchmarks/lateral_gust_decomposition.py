"""What the free per-wing robot does in a lateral gust, piece by piece.

The open-loop fidelity score (docs/physics.md, Open-loop fidelity score)
finds the identified cycle-averaged model wrong on the lateral gust. This
script flies the free per-wing robot and the averaged model open loop
(constant command: the hover frequency, plate level) at ``dt = 5e-5 s``, in
float64, with a uniform wind of +/- ``GUST`` m/s along world y from the
onset (the body moves through the air as if pushed toward -y), at two
onset phases a quarter wingbeat apart, and prints half the difference of
each pair of cycle means, per m/s of wind, at ``TIMES_MS`` after the onset:

- body rates p, q, r [rad/s] and the heading (yaw) [rad];
- the tilt toward +x and +y [rad];
- the body-frame velocity relative to the air [m/s];
- the body-frame aerodynamic moment about the base origin [N m] (per-wing
  robot) and the averaged model's torque, minus what its terms predict.

Usage: ``python -m benchmarks.lateral_gust_decomposition [cycle_averaged.json]``
(default: the packaged model). Takes a few minutes on two cores.
"""

from __future__ import annotations

import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from flapjax.aero.cycle_averaged import CycleAveragedParams  # noqa: E402
from flapjax.math import quat_to_mat  # noqa: E402
from flapjax.sim import flapper as fl  # noqa: E402
from flapjax.sim.flapper import free_flights as ff  # noqa: E402
from flapjax.sim.flapper.hover import base_pose  # noqa: E402
from flapjax.sim.flapper.robot import AVERAGED_PATH  # noqa: E402
from flapjax.sim.flapper.step import step  # noqa: E402

DT = 5e-5
GUST = 0.5
ONSET, HORIZON = 0.02, 0.15
TIMES_MS = (10, 25, 50, 75, 100, 125)
PHASES = 2
SIGNALS = ("w_body", "yaw", "tilt", "v_air_body", "moment_body")


def _model(path: str) -> CycleAveragedParams:
    mass, g = fl.robot_weight()
    p = CycleAveragedParams.from_json(path)
    return eqx.tree_at(lambda q: (q.mass, q.gravity), p, (jnp.asarray(mass), jnp.asarray(g)))


def _observe(robot, st, dg, wind):
    pose = base_pose(robot, st.data)
    rot = pose.rot_world_body
    return {"w_body": pose.w_body, "yaw": jnp.arctan2(rot[1, 0], rot[0, 0]),
            "tilt": jnp.stack([rot[0, 2], rot[1, 2]]), "v_air_body": rot.T @ (pose.velocity - wind),
            "moment_body": rot.T @ dg.moment_world}


def fly(robot: fl.FlapperRobot, params: fl.FlapperParams, n_steps: int, onsets: np.ndarray, gusts: np.ndarray):
    """Every world open loop from the periodic start with wind ``gusts`` (W, 3)
    [m/s] from ``onsets`` (W,) [s]; the signals every ``ff.RECORD_EVERY`` steps."""

    @jax.jit
    def worlds(onsets, gusts):
        def one(onset, gust):
            state = fl.init_state(robot, params, position=jnp.array([0.0, 0.0, 0.5]), periodic=True)

            def body(st, _):
                wind = jnp.where(st.step * robot.dt >= onset, 1.0, 0.0) * gust
                st, dg = step(robot, params, st, wind=wind)
                return st, _observe(robot, st, dg, wind)
            _, rec = jax.lax.scan(body, state, None, length=n_steps)
            return jax.tree.map(lambda x: x[ff.RECORD_EVERY - 1::ff.RECORD_EVERY], rec)
        return jax.vmap(one)(onsets, gusts)
    return jax.tree.map(np.asarray, worlds(jnp.asarray(onsets), jnp.asarray(gusts)))


def paired(robot: fl.FlapperRobot, params: fl.FlapperParams, f_h: float, phases: int) -> dict[str, np.ndarray]:
    """Half the +/- difference of the cycle means per m/s of wind, aligned at
    the onset and averaged over the onset phases: signal -> (T, ...)."""
    dt_record = DT * ff.RECORD_EVERY
    shifts = ff.phase_shifts(f_h, dt_record, phases)
    width = int(round(1.0 / (f_h * dt_record)))
    onsets = np.repeat(ONSET + shifts * dt_record, 2)
    gusts = np.tile(np.array([[0.0, GUST, 0.0], [0.0, -GUST, 0.0]]), (phases, 1))
    n_steps = int(round((ONSET + shifts[-1] * dt_record + HORIZON) / DT)) // ff.RECORD_EVERY * ff.RECORD_EVERY
    rec = fly(robot, params, n_steps, onsets, gusts)
    out = {k: np.asarray(ff.paired_response(rec[k], width, shifts, 1))[0] / GUST for k in SIGNALS}
    out["time"] = (np.arange(out["yaw"].shape[0]) + 0.5 * (width - 1)) * dt_record
    return out


def averaged_terms(model: CycleAveragedParams, r: dict) -> np.ndarray:
    """The averaged model's torque terms evaluated on a response ``r``:
    ``-D_w w + [L_v v_y, M_u v_x, 0]`` (T, 3) [N m per m/s]."""
    w, v = r["w_body"], r["v_air_body"]
    d = np.asarray(model.rate_damping)
    coupling = np.stack([float(model.roll_speed_coupling) * v[:, 1], float(model.pitch_speed_coupling) * v[:, 0],
                         np.zeros(len(v))], -1)
    return -d * w + coupling


def main(path: str) -> None:
    model = _model(path)
    f_h = float(jnp.sqrt(model.mass * model.gravity / model.lift_coefficient))
    wing = fl.make_robot("free", "wing", backend="rigid", timestep=DT)
    lumped = fl.make_robot("lumped", "averaged", backend="rigid", timestep=DT)
    runs = {"per-wing": paired(wing, fl.default_params(wing, frequency=f_h, averaged=model), f_h, PHASES),
            "averaged": paired(lumped, fl.default_params(lumped, frequency=f_h, averaged=model), f_h, 1)}
    print(f"model {path}; dt {DT} s; wind +/-{GUST} m/s along world y from {ONSET} s; per m/s; "
          f"ms after the onset: {TIMES_MS}")
    for name, r in runs.items():
        i = np.searchsorted(r["time"], ONSET + 1e-3 * np.asarray(TIMES_MS)).clip(0, len(r["time"]) - 1)
        print(f"\n{name}")
        for k in SIGNALS:
            v = r[k][i]
            for c in range(v.shape[1] if v.ndim == 2 else 1):
                label = k if v.ndim == 1 else f"{k}[{c}]"
                print(f"  {label:16s} {np.array2string(v if v.ndim == 1 else v[:, c], precision=6)}")
        print(f"  {'model terms':16s} (on this response, N m per m/s)")
        terms = averaged_terms(model, r)[i]
        for c in range(3):
            print(f"  {f'terms[{c}]':16s} {np.array2string(terms[:, c], precision=8)}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(AVERAGED_PATH))
