"""The reading of a six-axis sensor under the fixed flapping-wing robot,
phase-averaged against the stroke drive, as a differentiable function of
the per-wing physical parameters (the model that
``flapjax.identify.flapper.waveform`` fits to a phase-resolved stand
record).

Fixed-base worlds (one per condition) run from a periodic start; at every
step the sensor reads the aerodynamic force minus the rate of change of the
robot's linear momentum (``F_aero - dP/dt``, ``P = sum_i m_i v_i``) and,
about the robot's centre of mass at rest, the aerodynamic moment minus the
rate of change of the angular momentum plus the moment of the weight that
the moving plate and wings shift (:func:`sensor_waveform`, with the momenta
from :func:`momenta`); the readings are averaged in the record's phase bins
(:func:`bin_edges`) over the whole cycles after a transient.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from flapjax.sim.flapper.driven import robot_com_offset
from flapjax.sim.flapper.robot import FlapperParams, FlapperRobot, make_robot
from flapjax.sim.flapper.state import init_state
from flapjax.sim.flapper.step import step
from flapjax.sim.flapper.sweep import cycle_window, sweep_params
from flapjax.sim.flapper.stand import with_physical, with_wing_inertia
from flapjax.sim.rollout import remat
from flapjax.validation import ConfigError

__all__ = ["READING_COLUMNS", "Momenta", "WaveformRollout", "bin_edges", "eval_waveform", "momenta",
           "sensor_waveform"]


#: Output columns of :func:`sensor_waveform` (body axes at rest; moments
#: about the robot's centre of mass at rest).
READING_COLUMNS = ("fx_n", "fy_n", "fz_n", "mx_nm", "my_nm")


class WaveformRollout(eqx.Module):
    """Phase-binned sensor reading of fixed-base worlds as a differentiable
    function of per-wing physical parameters.

    Attributes:
      robot: fixed-base per-wing robot.
      params: batched FlapperParams, one world per condition (m).
      centres: (m, B) phase-bin centres per condition [rad]; NaN pads
        conditions with fewer bins.
      lever: (3,) robot centre of mass at rest minus base origin [m] (the
        moments' reference point).
      n_steps, discard_steps: run length and transient (static).
    """

    robot: FlapperRobot
    params: FlapperParams
    centres: jax.Array
    lever: jax.Array
    n_steps: int = eqx.field(static=True)
    discard_steps: int = eqx.field(static=True)

    @classmethod
    def make(cls, frequencies, plates, centres, *, duration: float, discard: float, robot=None) -> WaveformRollout:
        robot = make_robot("fixed", "wing", backend="rigid") if robot is None else robot
        n_steps = round(duration / robot.dt)
        discard_steps = round(discard / robot.dt)
        if not 1 <= discard_steps < n_steps:
            raise ConfigError(f"discard: must lie in (0, duration={duration}) s, got {discard}")
        params = sweep_params(np.asarray(frequencies, dtype=float), plate=np.asarray(plates, dtype=float),
                                 robot=robot)
        dtype = robot.model.body_mass.dtype
        centres = jnp.asarray(centres, dtype=dtype)
        lever = jnp.asarray(robot_com_offset(), dtype=dtype)
        return cls(robot=robot, params=params, centres=centres, lever=lever, n_steps=n_steps,
                   discard_steps=discard_steps)

    def __call__(self, values: Mapping[str, jax.Array]) -> jax.Array:
        """(m, B, 5) bin means of the sensor reading (:data:`READING_COLUMNS`:
        F_x, F_y, F_z [N], M_x, M_y [N m]); NaN where a condition has no bin."""
        values = dict(values)
        robot = self.robot
        if "wing_inertia_scale" in values:
            robot = with_wing_inertia(robot, values.pop("wing_inertia_scale"))
        params = with_physical(self.params, values)
        return sensor_waveform(robot, params, self.centres, self.n_steps, self.discard_steps, self.lever)


def sensor_waveform(robot: FlapperRobot, params: FlapperParams, centres: jax.Array, n_steps: int,
                    discard_steps: int, lever: jax.Array) -> jax.Array:
    """(m, B, 5) phase-bin means of what a tared six-axis sensor under the
    fixed robot reads (:data:`READING_COLUMNS`), for the m worlds of
    ``params`` (leading axis m) and bin centres ``centres`` (m, B) [rad]:

    - force ``F_aero - dP/dt`` [N], with ``P = sum_i m_i v_i`` the bodies'
      linear momentum;
    - moment about ``c``, the robot's centre of mass at rest (base origin
      plus ``lever`` (3,) [m]): ``M_aero,c - dH_c/dt + (sum_i m_i x_i - M c)
      x g`` [N m], with ``H_c`` the bodies' angular momentum about ``c`` and
      the last term the moment of the weight moved by the plate and the
      wings (zero at rest with level plates, where the sensor is tared); x
      and y components.

    Step k stands for the stroke drive phases ``theta_k +- pi f dt``
    (``theta_k = 2 pi frac(f dt k + offset) + phase``), shared among the
    bins (:func:`bin_edges`) it overlaps, so a bin mean is the average over
    the bin's phase interval, not over the steps that happen to fall in it;
    only the whole cycles after ``discard_steps`` count
    (:func:`flapjax.sim.flapper.cycle_window`).
    The momentum rates are central differences; over a periodic cycle they
    average to zero, so the bins average to the cycle-mean aerodynamic load
    (plus the cycle-mean moment of the wings' weight).
    """
    dt = robot.dt
    m = robot.model
    state = jax.vmap(lambda p: init_state(robot, p))(params)
    one_step = jax.vmap(lambda p, s: step(robot, p, s))

    def about_c(d):  # the base is fixed: c = base origin + lever at every step
        return momenta(m, d, d.xpos[robot.base_body] + lever.astype(d.xpos.dtype))

    def body(s, _):
        new, dg = one_step(params, s)
        # new.data holds the kinematics and velocities of the step's start, when the loads were computed
        return new, (dg.force_world, dg.moment_world, jax.vmap(about_c)(new.data))

    _, (force, moment, mom) = jax.lax.scan(remat(body), state, None, length=n_steps + 1)
    rate = lambda x: (x[2:] - x[:-2]) / (2.0 * dt)  # steps 1 .. n_steps - 1
    f = force[1:n_steps]
    m_c = moment[1:n_steps] - jnp.cross(lever, f)  # aero moment about c (from the base origin)
    weight = jnp.cross(mom.first_moment[1:n_steps], m.opt.gravity.astype(f.dtype))
    moment_reading = m_c - rate(mom.angular) + weight
    reading = jnp.concatenate([f - rate(mom.linear), moment_reading[..., :2]], axis=-1)
    reading = jnp.concatenate([jnp.zeros_like(reading[:1]), reading], axis=0)  # step 0: outside the window
    k = jnp.arange(n_steps)
    lo, hi = bin_edges(centres)

    def bins(f, phase0, offset, lo_b, hi_b, r):
        theta = 2.0 * jnp.pi * jnp.mod(f * dt * k + offset, 1.0) + phase0
        half = jnp.pi * f * dt  # each step stands for the phase interval theta +- half
        w = sum(jnp.clip(jnp.minimum(hi_b[None], theta[:, None] + s + half)
                         - jnp.maximum(lo_b[None], theta[:, None] + s - half), 0.0, None)
                for s in (-2.0 * jnp.pi, 0.0, 2.0 * jnp.pi))  # (T, B) phase overlap [rad]
        w = w * cycle_window(f, n_steps, discard_steps, dt).astype(r.dtype)[:, None]
        count = jnp.sum(w, axis=0)
        mean = (w.T @ r) / jnp.where(count > 0, count, 1.0)[:, None]
        return jnp.where((count > 0)[:, None], mean, jnp.nan)

    return jax.vmap(bins, in_axes=(0, 0, 0, 0, 0, 1))(params.stroke.frequency, params.stroke.phase,
                                                      state.phase_offset, lo, hi, reading)


class Momenta(NamedTuple):
    """Momenta of a world's bodies (world frame) about a point ``c``."""

    linear: jax.Array        # (3,) P = sum_i m_i v_i [kg m/s]
    angular: jax.Array       # (3,) H_c = sum_i (I_i w_i + m_i (x_i - c) x v_i) [kg m^2/s]
    first_moment: jax.Array  # (3,) sum_i m_i (x_i - c) [kg m]


def momenta(m, d, point=None) -> Momenta:
    """:class:`Momenta` about ``point`` (3,) [m] (default the world origin)
    of the bodies' centres of mass ``x_i`` (``d.xipos``), from ``d.cvel``
    (``[w; v]``, ``v`` the velocity at the subtree CoM of the body's root,
    MJX's convention), with ``I_i`` the body inertia (``m.body_inertia``,
    principal axes ``d.ximat``) in the world frame. A point near the bodies
    keeps ``H_c`` free of the round-off of a large ``c x P``."""
    root = np.asarray(m.body_rootid)
    w, v = d.cvel[:, :3], d.cvel[:, 3:]
    v_com = v + jnp.cross(w, d.xipos - d.subtree_com[root])
    mass = m.body_mass.astype(v_com.dtype)
    arm = d.xipos if point is None else d.xipos - point
    rot = d.ximat.reshape(-1, 3, 3)
    spin = jnp.einsum("bij,bj->bi", rot, m.body_inertia.astype(v_com.dtype) * jnp.einsum("bji,bj->bi", rot, w))
    return Momenta(linear=mass @ v_com, angular=jnp.sum(spin, axis=0) + mass @ jnp.cross(arm, v_com),
                   first_moment=mass @ arm)


def bin_edges(centres: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(lo, hi)``, each (m, B): the phase bins around ``centres`` (m, B)
    [rad] (NaN: no bin): each bin reaches halfway to its neighbours on the
    circle (equal-width bins for equally spaced centres); ``lo`` may be
    negative and ``hi`` above 2 pi where a bin straddles 0. A missing bin
    gets ``lo = hi``."""
    c = jnp.asarray(centres)
    order = jnp.argsort(jnp.where(jnp.isnan(c), jnp.inf, c), axis=1)
    sc = jnp.take_along_axis(c, order, axis=1)
    n = jnp.sum(~jnp.isnan(c), axis=1, keepdims=True)
    idx = jnp.arange(c.shape[1])[None]
    valid = idx < n
    # neighbours on the circle among the valid sorted centres
    prev = jnp.take_along_axis(sc, jnp.where(idx == 0, n - 1, idx - 1), axis=1) - jnp.where(idx == 0, 2 * jnp.pi, 0.0)
    nxt = jnp.take_along_axis(sc, jnp.where(idx == n - 1, 0, idx + 1), axis=1) + jnp.where(idx == n - 1, 2 * jnp.pi, 0.0)
    lo_s = jnp.where(valid, 0.5 * (prev + sc), 0.0)
    hi_s = jnp.where(valid, 0.5 * (sc + nxt), 0.0)
    inverse = jnp.argsort(order, axis=1)
    return jnp.take_along_axis(lo_s, inverse, axis=1), jnp.take_along_axis(hi_s, inverse, axis=1)


@eqx.filter_jit
def eval_waveform(rollout: WaveformRollout, values: Mapping[str, Any]) -> jax.Array:
    """(m, B, 5) bin means of ``rollout`` at parameter ``values`` (name ->
    value; jitted)."""
    return rollout({k: jnp.asarray(v) for k, v in values.items()})
