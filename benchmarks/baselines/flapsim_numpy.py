"""FlapSim-style baseline: C MuJoCo stepped serially, per-wing model in NumPy.

This is the workflow flapjax replaces: one world at a time, the quasi-steady
per-wing model evaluated in NumPy on every step, the wrench written into
``xfrc_applied``, and MuJoCo's C engine integrating. It mirrors
:func:`flapjax.sim.flapper.step` operation for operation (same MJCF, same
split step, same stroke servo feedforward, same smooth feathering stops), so
a sweep run here and one run by flapjax compute the same numbers and differ
only in how they run. ``tests/test_baselines.py`` checks the per-wing loads
and wrenches against flapjax's kernels to 1e-9 in float64.

Nothing here imports JAX: the baseline must not borrow flapjax's speed.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

ASSETS = Path(__file__).resolve().parents[2] / "flapjax" / "sim" / "assets"
SIDES = (1, -1)


@dataclass(frozen=True)
class WingModel:
    """The seed's wing and the options of the per-wing model (defaults = flapjax's).

    span R [m], mean_chord cbar [m], r (4,) chord-weighted radial moments,
    z_cp (3,) chord^2 moments, z_rd chord^4 moment, rho [kg/m^3],
    d0 shoulder half width [m], ds stroke-plane offset [m]; scales, clips
    and the Whitney-Wood coefficients.
    """

    span: float = 0.07
    mean_chord: float = 0.02
    r: tuple = (1.0, 0.5, 1.0 / 3.0, 0.25)
    z_cp: tuple = (1.0, 0.5, 1.0 / 3.0)
    z_rd: float = 1.0
    rho: float = 1.225
    d0: float = 0.01395
    ds: float = 0.0189913
    lift_scale: float = 1.0
    moment_scale: float = 1.0
    force_limit: float = 5.0
    damping_limit: float = 0.05
    rotational_damping: float = 5.0
    angular_velocity_limit: float = 5000.0
    normal_coefficients: tuple = (1.8, 1.95, 1.5)
    cop_coefficients: tuple = (0.46, 0.332, 0.037, 0.013)

    @property
    def span_cop(self) -> float:
        return self.span * self.r[3] / self.r[2]


def affine_velocity(side, stroke, stroke_rate, v_body, w_body, d0, ds):
    """(U_i1, U_i0, U_o1, U_o0) with deviation and stroke-plane angles zero (seed 4.1)."""
    s = float(side)
    u, v, w = v_body
    p, q, r = w_body
    sps, cps = math.sin(stroke), math.cos(stroke)
    u_s = u + q * ds
    v_s = v - p * ds
    uo1 = s * p * cps + q * sps
    uo0 = s * p * d0 + w
    ui1 = s * r + stroke_rate
    ui0 = s * (r * d0 * cps - v_s * sps) - u_s * cps
    return ui1, ui0, uo1, uo0


def wing_loads(model: WingModel, side, stroke, stroke_rate, pitch, pitch_rate, v_body, w_body):
    """Quasi-steady loads of one wing: dict with normal_force, chord_cop,
    span_cop, damping_moment, alpha (the seed's sections 4-7)."""
    w_body = np.asarray(w_body, dtype=float)
    n = float(np.sqrt(w_body @ w_body))
    if n > model.angular_velocity_limit:
        w_body = w_body * (model.angular_velocity_limit / n)
    ui1, ui0, uo1, uo0 = affine_velocity(side, stroke, stroke_rate, v_body, w_body, model.d0, model.ds)
    R, c = model.span, model.mean_chord
    r_cp = model.span_cop
    u_i, u_o = ui1 * r_cp + ui0, uo1 * r_cp + uo0
    alpha = pitch + (math.atan2(u_i, u_o) if u_i * u_i + u_o * u_o > 1e-30 else 0.0)
    a1, a2, a3 = model.normal_coefficients
    b0, b1, b3, b5 = model.cop_coefficients
    c_n = a1 * math.sin(2 * alpha) * math.cos(alpha) + a2 * math.sin(alpha) - a3 * math.cos(2 * alpha) * math.sin(alpha)
    d_cp = b0 - b1 * math.cos(alpha) - b3 * math.cos(3 * alpha) - b5 * math.cos(5 * alpha)
    a0 = ui0**2 + uo0**2
    a1u = 2.0 * (ui1 * ui0 + uo1 * uo0)
    a2u = ui1**2 + uo1**2
    f_int = a2u * R**3 * model.r[2] + a1u * R**2 * model.r[1] + a0 * R * model.r[0]
    m_int = a2u * R**3 * model.z_cp[2] + a1u * R**2 * model.z_cp[1] + a0 * R * model.z_cp[0]
    force_unclipped = model.lift_scale * 0.5 * model.rho * c * c_n * f_int
    force = min(max(force_unclipped, -model.force_limit), model.force_limit)
    ratio = m_int / f_int if f_int > 1e-30 else model.z_cp[0] / model.r[0]
    chord_cop = (model.moment_scale / model.lift_scale) * c * d_cp * ratio
    damping = (-0.125 * model.rho * abs(pitch_rate) * pitch_rate * model.rotational_damping
               * R * c**4 * model.z_rd) * model.moment_scale
    damping = min(max(damping, -model.damping_limit), model.damping_limit)
    return dict(normal_force=force, chord_cop=chord_cop, span_cop=r_cp, damping_moment=damping, alpha=alpha,
                normal_coefficient=c_n, cop_fraction=d_cp)


def wing_wrench(loads, side, rot_world_wing, pos_world_origin, pos_world_com):
    """World wrench [F; tau about the wing CoM] (6,) and the force (3,) of one wing."""
    rot = np.asarray(rot_world_wing).reshape(3, 3)
    cop_local = np.array([0.0, side * loads["span_cop"], -loads["chord_cop"]])
    force = rot[:, 0] * loads["normal_force"]
    cop = pos_world_origin + rot @ cop_local
    torque = np.cross(cop - pos_world_com, force) + rot[:, 1] * loads["damping_moment"]
    return np.concatenate([force, torque]), force


@dataclass
class FlapperBaseline:
    """Fixed-base flapper in C MuJoCo with the NumPy per-wing model."""

    model: mujoco.MjModel
    wing: WingModel | None = None  # default: WingModel with the robot's calibrated lift_scale

    def __post_init__(self):
        m = self.model
        cfg = json.loads((ASSETS / "flapper_params.json").read_text())
        self.stop_angle = float(cfg["stop_angle"])
        if self.wing is None:  # the calibrated lift gain, as flapjax's default_params reads it
            self.wing = WingModel(lift_scale=float(cfg.get("lift_scale", 1.0)))
        self.stop_stiffness = float(cfg["stop_stiffness"])
        self.stop_width = float(cfg["stop_width"])
        self.amplitude = float(cfg["amplitude"])
        self.phase = float(cfg["phase"])
        jid = lambda n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)  # noqa: E731
        bid = lambda n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n)  # noqa: E731
        aid = lambda n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, n)  # noqa: E731
        self.stroke_q = [int(m.jnt_qposadr[jid(n)]) for n in ("left_stroke", "right_stroke")]
        self.stroke_v = [int(m.jnt_dofadr[jid(n)]) for n in ("left_stroke", "right_stroke")]
        self.pitch_q = [int(m.jnt_qposadr[jid(n)]) for n in ("left_pitch", "right_pitch")]
        self.pitch_v = [int(m.jnt_dofadr[jid(n)]) for n in ("left_pitch", "right_pitch")]
        self.plate_q = [int(m.jnt_qposadr[jid(n)]) for n in ("pitch_joint", "roll_joint")]
        self.stroke_act = [aid(n) for n in ("left_stroke_servo", "right_stroke_servo")]
        self.plate_act = [aid(n) for n in ("pitch_servo", "roll_servo")]
        self.plate_body = bid("plate")
        self.base_body = bid("base")
        self.wing_bodies = [bid("left_wing"), bid("right_wing")]
        self.plate_root = int(m.body_rootid[self.plate_body])
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        full = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, full)
        self.stroke_inertia = float(full[self.stroke_v[0], self.stroke_v[0]])
        self.kp = np.array([m.actuator_gainprm[a, 0] for a in self.stroke_act])
        self.kv = np.array([m.dof_damping[v] for v in self.stroke_v])

    @classmethod
    def from_assets(cls) -> "FlapperBaseline":
        return cls(mujoco.MjModel.from_xml_path(str(ASSETS / "flapper.xml")))

    def reference(self, frequency, step):
        """psi, psi_dot, psi_ddot of both wings at integer step ``step``."""
        dt = self.model.opt.timestep
        cycles = math.fmod(math.fmod(frequency * dt * step, 1.0), 1.0)
        omega = 2 * math.pi * frequency
        arg = 2 * math.pi * cycles + self.phase
        a = self.amplitude
        return a * math.sin(arg), a * omega * math.cos(arg), -a * omega**2 * math.sin(arg)

    def stop_torque(self, theta):
        w = self.stop_width
        sp = lambda x: w * np.logaddexp(0.0, x / w)  # noqa: E731
        return -self.stop_stiffness * (sp(theta - self.stop_angle) - sp(-theta - self.stop_angle))

    def reset(self, frequency, plate=(0.0, 0.0)) -> mujoco.MjData:
        d = mujoco.MjData(self.model)
        psi, psi_dot, _ = self.reference(frequency, 0)
        for k in range(2):
            d.qpos[self.stroke_q[k]] = psi
            d.qvel[self.stroke_v[k]] = psi_dot
            d.qpos[self.plate_q[k]] = plate[k]
        return d

    def aero(self, d: mujoco.MjData):
        """Per-wing loads and wrenches from the current kinematics; returns
        (list of (wrench, force, loads) per wing)."""
        b = self.plate_body
        rot_plate = d.xmat[b].reshape(3, 3)
        omega = d.cvel[b, :3]
        v = d.cvel[b, 3:] + np.cross(omega, d.xpos[b] - d.subtree_com[self.plate_root])
        v_body, w_body = rot_plate.T @ v, rot_plate.T @ omega
        out = []
        for k, side in enumerate(SIDES):
            ld = wing_loads(self.wing, side, d.qpos[self.stroke_q[k]], d.qvel[self.stroke_v[k]],
                            d.qpos[self.pitch_q[k]], d.qvel[self.pitch_v[k]], v_body, w_body)
            wb = self.wing_bodies[k]
            wrench, force = wing_wrench(ld, side, d.xmat[wb], d.xpos[wb], d.xipos[wb])
            out.append((wrench, force, ld))
        return out

    def step(self, d: mujoco.MjData, frequency, step, plate=(0.0, 0.0)):
        """One step of the split MuJoCo pipeline; returns the applied world force (3,)."""
        m = self.model
        mujoco.mj_fwdPosition(m, d)
        mujoco.mj_fwdVelocity(m, d)
        psi, psi_dot, psi_ddot = self.reference(frequency, step)
        wings = self.aero(d)
        d.xfrc_applied[:] = 0.0
        force = np.zeros(3)
        for k in range(2):
            d.xfrc_applied[self.wing_bodies[k]] = wings[k][0]
            force += wings[k][1]
            d.ctrl[self.stroke_act[k]] = psi + (self.kv[k] * psi_dot + self.stroke_inertia * psi_ddot) / self.kp[k]
            d.ctrl[self.plate_act[k]] = plate[k]
        d.qfrc_applied[:] = 0.0
        for k in range(2):
            d.qfrc_applied[self.pitch_v[k]] = self.stop_torque(d.qpos[self.pitch_q[k]])
        mujoco.mj_fwdActuation(m, d)
        mujoco.mj_fwdAcceleration(m, d)
        d.qacc[:] = d.qacc_smooth
        mujoco.mj_Euler(m, d)
        return force

    def cycle_mean_force(self, frequency, duration=0.6, discard=0.3):
        """Mean applied world force (3,) over the whole cycles after ``discard``
        (the same window as :func:`flapjax.sim.flapper.cycle_window`)."""
        dt = self.model.opt.timestep
        n_steps = int(round(duration / dt))
        discard_steps = int(round(discard / dt))
        d = self.reset(frequency)
        forces = np.empty((n_steps, 3))
        for k in range(n_steps):
            forces[k] = self.step(d, frequency, k)
        w = cycle_window(frequency, n_steps, discard_steps, dt)
        return w @ forces / w.sum()


def cycle_window(frequency, n_steps, discard_steps, dt):
    """Weights in [0, 1] of the whole cycles in ``[discard_steps, n_steps)``:
    step k stands for ``[t_k - dt/2, t_k + dt/2]`` and weighs its fraction
    inside the window of ``floor(span f)`` cycles ending with the last step."""
    k = np.arange(n_steps, dtype=float)
    end = n_steps - 0.5
    span = n_steps - discard_steps
    n_cycles = math.floor(span * dt * frequency + 1e-9)
    start = end - n_cycles / (frequency * dt) if n_cycles > 0 else end - span
    return np.clip(np.minimum(k + 0.5, end) - np.maximum(k - 0.5, start), 0.0, 1.0)


def sweep(frequencies, duration=0.6, discard=0.3):
    """Serial fixed-base sweep: (n, 3) mean world force per frequency."""
    sim = FlapperBaseline.from_assets()
    return np.stack([sim.cycle_mean_force(float(f), duration, discard) for f in frequencies])
