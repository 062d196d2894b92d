"""Behaviour pins: end-to-end values that a change of layout must not move.

Each case runs a short, whole workload through the public API and compares
its numbers with ``tests/golden/regression.json`` (float64, 1e-6 relative).
Regenerate the file only for a deliberate change of behaviour, and say why:

    python -m tests.test_regression --write
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "regression.json"
RTOL = 1e-6
ATOL = 1e-12


def sweep_case() -> dict:
    """Cycle-mean forces and moments of a 3-frequency fixed-base sweep."""
    from flapjax.sim import flapper

    res = flapper.sweep([20.0, 30.0, 40.0], duration=0.12, discard=0.05, batch_size=3)
    return {"force": np.asarray(res.force), "moment": np.asarray(res.moment), "lift_total": np.asarray(res.lift_total)}


def hover_case() -> dict:
    """0.5 s closed-loop hover of the cycle-averaged model (both backends)."""
    import jax
    import jax.numpy as jnp

    from flapjax.sim import flapper

    out = {}
    for backend in ("mjx", "rigid"):
        robot = flapper.make_robot("lumped", "averaged", backend=backend)
        params = flapper.default_params(robot)
        state = flapper.init_state(robot, params, position=jnp.array([0.01, -0.02, 0.5]),
                                   angular_velocity=jnp.array([0.3, -0.2, 0.1]))
        n = int(round(0.5 / robot.dt))
        final, rec = jax.jit(lambda s: flapper.hover_rollout(robot, params, s, n, record_every=500))(state)
        out[f"{backend}_position"] = np.asarray(rec.position)
        out[f"{backend}_tilt"] = np.asarray(rec.tilt)
        out[f"{backend}_frequency"] = np.asarray(rec.frequency)
        out[f"{backend}_plate"] = np.asarray(rec.plate)
    return out


def multirotor_case() -> dict:
    """200 steps of a hexa near a pitched wall with every chain effect and
    noise on (both backends)."""
    import jax
    import jax.numpy as jnp

    from flapjax import rotor, scene
    from flapjax.control.wrench import Reference
    from flapjax.sim import multirotor

    prof = rotor.profiles.hexa_tilted()
    out = {}
    for backend in ("mjx", "rigid"):
        world = multirotor.MultirotorWorld(prof, backend=backend, options=rotor.ChainOptions(command_noise=True))
        params = world.default_params(scene.Scene(wall_x=0.6, wall_pitch=0.2))
        params = _noisy(params)
        start = scene.hover_position(params.scene, prof, ground_clearance=0.08, wall_clearance=0.12, yaw=0.3)
        state = world.reset(params, jax.random.key(3), start, 0.3)
        ref = Reference.hover(start + jnp.array([0.05, 0.02, 0.03]), 0.3)
        final, traj = jax.jit(lambda s: world.rollout(params, s, ref, 200))(state)
        out[f"{backend}_position"] = np.asarray(traj.position[::20])
        out[f"{backend}_quat"] = np.asarray(traj.quat[::20])
        out[f"{backend}_thrust"] = np.asarray(traj.thrust_realized[::20])
        out[f"{backend}_wall_factor"] = np.asarray(traj.wall_factor[::20])
        out[f"{backend}_final_position"] = np.asarray(final.data.qpos[0:3])
    return out


def _noisy(params):
    import equinox as eqx

    from flapjax import rotor
    from flapjax.noise import CommandNoise, NoiseParams, SensorNoise

    wind = rotor.WindParams(constant=(0.1, 0.0, 0.0), turbulence_std=(0.2, 0.1, 0.05),
                            gust_amplitude=[[0.3, 0.0, 0.1]], gust_start=[0.1], gust_duration=[0.2])
    noise = NoiseParams(sensor=SensorNoise(position_std=(1e-3, 1e-3, 2e-3), rate_std=(0.01, 0.01, 0.02)),
                        command=CommandNoise(thrust_std=0.05))
    params = eqx.tree_at(lambda p: p.chain.wind, params, wind)
    return eqx.tree_at(lambda p: p.noise, params, noise)


CASES = {"sweep": sweep_case, "hover": hover_case, "multirotor": multirotor_case}


def _golden() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_behaviour_is_pinned(name):
    expected = _golden()[name]
    got = CASES[name]()
    assert set(got) == set(expected)
    for key, value in got.items():
        np.testing.assert_allclose(value, np.asarray(expected[key]), rtol=RTOL, atol=ATOL, err_msg=f"{name}.{key}")


def identify_quick_values(out_dir) -> dict:
    """Identified values of ``flapjax identify --quick`` (plots off)."""
    import subprocess

    cfg = pathlib.Path(out_dir) / "noplots.toml"
    cfg.write_text("[run]\nplots = false\n")
    cmd = [sys.executable, "-m", "flapjax.cli", "identify", "--quick", "--config", str(cfg), "--out",
           str(pathlib.Path(out_dir) / "run"), "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((pathlib.Path(out_dir) / "run" / "results.json").read_text())
    return {k: np.asarray(v, dtype=float).tolist() for k, v in results["identified"].items()}


@pytest.mark.slow
def test_identify_quick_values_are_pinned(tmp_path):
    expected = _golden()["identify_quick"]
    got = identify_quick_values(tmp_path)
    assert set(got) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[key]), np.asarray(value), rtol=RTOL, atol=ATOL, err_msg=key)


def _write() -> None:
    import tempfile

    import jax

    jax.config.update("jax_enable_x64", True)
    golden = {name: {k: np.asarray(v).tolist() for k, v in case().items()} for name, case in CASES.items()}
    with tempfile.TemporaryDirectory() as tmp:
        golden["identify_quick"] = identify_quick_values(tmp)
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1) + "\n")


if __name__ == "__main__":
    if "--write" in sys.argv:
        _write()
