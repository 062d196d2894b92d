"""Synthetic hover logs from the project's own simulator.

:func:`simulate_hover_flight` flies a robot (rigid-body backend, wrench
controller, the full chain without wind) through a plan of hovers near the
ground, near a wall and in free air, joined by smooth moves and a few
faster free-air sweeps that excite the drag
(:mod:`flapjax.sim.multirotor.hover_flight`); :func:`noisy_log` turns the
exact trajectory into what a lab would log (motion-capture position and
attitude noise, accelerometer noise and bias);
:func:`flapjax.data.hover_log.write_hover_log` writes it as a hover log.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor
from flapjax import scene as sc
from flapjax.data.hover_log import thrust_column
from flapjax.math import quat_mul

#: Hidden coefficients of the sample logs (differ from the chain's defaults).
HIDDEN = {
    "ground_coeff": 1.35,
    "wall_thrust_coeff": 0.12,
    "wall_lateral_coeff": 0.08,
    "wall_fade_start": 1.6,
    "wall_range": 3.6,
    "drag_linear": [0.30, 0.38, 0.45],
    "drag_quadratic": [0.08, 0.05, 0.12],
}

#: Sensor noise of the sample logs: motion capture (position [m], attitude
#: [rad], velocity output [m/s], per axis), accelerometer white noise
#: [m/s^2] and the half range of its uniformly drawn constant bias [m/s^2].
NOISE = {"position_std": 3e-4, "attitude_std": 2e-3, "velocity_std": 0.01, "accel_std": 0.12, "accel_bias": 0.08}

#: The sample logs' scene: ground at z = 0, wall at x = 2 m.
SCENE = {"ground_z_m": 0.0, "wall_x_m": 2.0, "wall_anchor_z_m": 0.0, "wall_pitch_rad": 0.0}


def hidden_chain_params(hidden: Mapping[str, Any] = HIDDEN) -> rotor.ChainParams:
    """The :class:`~flapjax.rotor.ChainParams` of a ``hidden`` dict."""
    return rotor.ChainParams(
        proximity=rotor.ProximityParams(
            wall_thrust_coeff=hidden["wall_thrust_coeff"], wall_lateral_coeff=hidden["wall_lateral_coeff"],
            wall_fade_start=hidden["wall_fade_start"], wall_range=hidden["wall_range"],
            ground_coeff=hidden["ground_coeff"]),
        drag=rotor.DragParams(linear=hidden["drag_linear"], quadratic=hidden["drag_quadratic"]),
    )


def simulate_hover_flight(prof: rotor.RotorProfile, chain: rotor.ChainParams, *,
                          scene: Mapping[str, float] = SCENE, dt: float = 0.005, plan=None) -> dict[str, np.ndarray]:
    """Fly ``plan`` (default: :func:`flapjax.sim.multirotor.hover_flight.flight_plan`
    in ``scene``) at yaw = pi with the hover model's chain switches, no wind
    (:func:`flapjax.sim.multirotor.hover_flight.fly_plan`: its exact log
    quantities; ``touching`` and ``diverged`` must stay False)."""
    from flapjax.sim.multirotor.hover_flight import HOVER_OPTIONS, flight_plan, fly_plan

    plan = flight_plan(prof, ground_z=scene["ground_z_m"], wall_x=scene["wall_x_m"]) if plan is None else plan
    sc_model = sc.Scene(ground_height=scene["ground_z_m"], wall_x=scene["wall_x_m"],
                        wall_anchor_z=scene["wall_anchor_z_m"], wall_pitch=scene["wall_pitch_rad"])
    return fly_plan(prof, chain, plan, options=HOVER_OPTIONS, scene=sc_model, yaw=math.pi, dt=dt)


def _small_rotation_quat(rng: np.random.Generator, n: int, std: float) -> np.ndarray:
    v = rng.normal(0.0, std, size=(n, 3))
    angle = np.linalg.norm(v, axis=1)
    half = 0.5 * angle
    axis = v / np.where(angle > 0, angle, 1.0)[:, None]
    return np.concatenate([np.cos(half)[:, None], np.sin(half)[:, None] * axis], axis=1)


def noisy_log(truth: Mapping[str, np.ndarray], seed: int, noise: Mapping[str, float] = NOISE
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The log columns a lab would record (:func:`flapjax.data.hover_log.hover_columns`)
    and the drawn sensor values (``accel_bias``). Motion-capture position
    noise (white, per axis), attitude noise (a small body rotation, white),
    accelerometer white noise plus a constant bias drawn uniformly in
    ``+-accel_bias`` per axis; thrust commands are logged exactly; the
    motion-capture velocity output (white noise ``velocity_std``) is logged
    unless ``velocity_std`` is None."""
    rng = np.random.default_rng(seed)
    n = truth["time"].shape[0]
    bias = rng.uniform(-noise["accel_bias"], noise["accel_bias"], size=3)
    pos = truth["position"] + rng.normal(0.0, noise["position_std"], size=(n, 3))
    dq = _small_rotation_quat(rng, n, noise["attitude_std"])
    quat = np.asarray(jax.vmap(quat_mul)(jnp.asarray(truth["quat"]), jnp.asarray(dq)))
    quat = quat * np.sign(quat[:, :1] + 1e-300)
    accel = truth["specific_force"] + bias + rng.normal(0.0, noise["accel_std"], size=(n, 3))
    cols = {"time_s": truth["time"], "x_m": pos[:, 0], "y_m": pos[:, 1], "z_m": pos[:, 2],
            "qw": quat[:, 0], "qx": quat[:, 1], "qy": quat[:, 2], "qz": quat[:, 3],
            "ax_mps2": accel[:, 0], "ay_mps2": accel[:, 1], "az_mps2": accel[:, 2]}
    for i in range(truth["thrust_command"].shape[1]):
        cols[thrust_column(i)] = truth["thrust_command"][:, i]
    if noise.get("velocity_std") is not None:
        vel = truth["velocity"] + rng.normal(0.0, noise["velocity_std"], size=(n, 3))
        for j, a in enumerate("xyz"):
            cols[f"v{a}_mps"] = vel[:, j]
    return cols, {"accel_bias": bias.tolist()}
