"""The flapping-wing robot: parameter, command and state types, the compiled
robot handle, and its construction from the MJCF.

:func:`robot_from_mjmodel` is the one place that turns a compiled MuJoCo model
into the indices the bridge reads (looked up by the names of
``assets/flapper.xml`` or of a robot description,
:mod:`flapjax.sim.flapper.description`); :func:`make_robot` and the
driven-base robot of :mod:`flapjax.sim.flapper.driven` both go through it.

The root (``"fixed"``/``"free"``/``"lumped"``) and the aerodynamic model
(``"wing"``/``"averaged"``) are independent choices; every pair runs except
the per-wing model on the lumped body, which has no wings. The backend
(``"mjx"`` or ``"rigid"``) is chosen here, once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from jaxtyping import Array, Bool, Float, Int
from mujoco import mjx

from flapjax import aero
from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.aero.hinge import FeatheringHinge
from flapjax.control.stroke import StrokeSchedule
from flapjax.sim import rigid
from flapjax.sim import tree
from flapjax.sim.backend import BACKENDS
from flapjax.sim.flapper import description_model
from flapjax.sim.flapper.channels import SEED_KINDS, check_values
from flapjax.sim.flapper import model as flapper_model
from flapjax.sim.flapper.description import MAX_AMPLITUDE, MAX_FREQUENCY, FlapperDescription
from flapjax.sim.flapper.description_model import resolve_description
from flapjax.validation import ConfigError, as_float_array, check_choice, check_range

Scalar = Float[Array, ""]
AERO_MODELS = ("wing", "averaged")
SIDES = (1, -1)  # left, right
PARAMS_PATH = flapper_model.ASSETS / "flapper_params.json"
AVERAGED_PATH = flapper_model.ASSETS / "flapper_cycle_averaged.json"


def _as_array(x) -> Array:
    return jnp.asarray(x, dtype=float)


# ---------------------------------------------------------------------------
# Parameters, command, state
# ---------------------------------------------------------------------------


class FlapperParams(eqx.Module):
    """Per-world parameters; every float leaf may carry a leading world axis.

    Attributes:
      stroke: stroke schedule (frequency [Hz], amplitude [rad], phase [rad],
        per-wing direction).
      plate: (nc,) the robot's control-channel values, one per channel in
        its description's order (:mod:`flapjax.sim.flapper.channels`); the
        seed robot's are its two plate angles (pitch_joint, roll_joint) [rad].
      hinge: feathering hinge spring, damper and stops.
      aero: options of the per-wing model (scales, clips, coefficients).
      averaged: parameters of the cycle-averaged model.
    """

    stroke: StrokeSchedule
    plate: Float[Array, "2"] = eqx.field(converter=_as_array)
    hinge: FeatheringHinge
    aero: aero.AeroOptions
    averaged: CycleAveragedParams


class FlapperCommand(eqx.Module):
    """What a controller sets each step.

    Attributes:
      frequency: () flapping frequency f [Hz].
      plate: (nc,) control-channel values in channel order
        (:mod:`flapjax.sim.flapper.channels`); the seed robot's plate angles
        (pitch_joint, roll_joint) [rad].
    """

    frequency: Scalar
    plate: Float[Array, "2"]


class FlapperState(eqx.Module):
    """State of one world.

    Attributes:
      data: the MJX data (qpos, qvel, ...; also on the rigid backend's
        fixed and free roots), or the :class:`flapjax.sim.rigid.RigidState`
        of the rigid backend's lumped body.
      step: () integer step counter k; t = k dt [-].
      phase_offset: () accumulated stroke-phase correction of a varying
        frequency command [cycles].
      healthy: () False once the world turned unhealthy (non-finite state,
        implausible speed, rate or aerodynamic force, non-finite
        parameters); it is then frozen at its last healthy state.
      health: () int32 OR of every step's health code, the reasons
        (:mod:`flapjax.sim.flapper.health`; 0: healthy); None on a state
        built without it.
      last_plate: (c,) the stroke plane's channel values [rad], which
        follow the applied ones with a lag of half a wingbeat: the averaged
        model reads the plate's motion from their change
        (:mod:`flapjax.sim.flapper.plate_motion`); None on a state built
        without it (no plate-motion terms).
      last_plate_rate: (c,) their rate over the previous step [rad/s]: the
        lumped body's rate carries the plate's inertial reaction
        ``-kappa`` times it; None: the reaction turns the attitude only.
      last_airspeed: (2,) the body-frame horizontal airspeed lagged by half a
        wingbeat [m/s] (:mod:`flapjax.sim.flapper.airspeed_rate`); None on a
        state built without it (no airspeed-rate moment).
    """

    data: Any
    step: Int[Array, ""]
    phase_offset: Scalar
    healthy: Bool[Array, ""]
    health: Int[Array, ""] | None = None
    last_plate: Float[Array, " c"] | None = None
    last_plate_rate: Float[Array, " c"] | None = None
    last_airspeed: Float[Array, "2"] | None = None


class FlapperRobot(eqx.Module):
    """A compiled flapper world: the MJX model and the indices the bridge reads.

    Build with :func:`make_robot` (or :func:`robot_from_mjmodel` around a
    modified model). Array leaves (the MJX model, the wing) are traced by
    ``eqx.filter_jit``; names and indices are static.

    Attributes:
      model: the MJX model.
      wing: wing geometry, air density, d0 and ds of the per-wing kernels.
      root: "fixed", "free" or "lumped" (static).
      aero_model: "wing" or "averaged" (static).
      dt: timestep [s] (static).
      stroke_inertia: stroke-servo inertia feedforward J [kg m^2] (static).
      base_body, plate_body, wing_bodies: body ids (plate -1 and no wings on
        the lumped body) (static).
      stroke_q, stroke_v, pitch_q, pitch_v, plate_q, plate_v: (left, right)
        or (pitch_joint, roll_joint) qpos / dof addresses (static).
      pitch_jnt: feathering joint ids (static).
      stroke_act, plate_act: actuator ids of the stroke and plate servos (static).
      free_q, free_v: qpos / dof address of the freejoint ``root``, -1 without (static).
      base_root, plate_root: the bodies' kinematic-tree roots (static).
      backend: "mjx" (MuJoCo MJX) or "rigid" (pure JAX: the single-body
        integrator of :mod:`flapjax.sim.rigid` on the lumped root, the
        joint tree of :mod:`flapjax.sim.tree` on the fixed and free roots) (static).
      rigid_body: mass properties of the lumped body for the rigid backend.
      channel_kinds: kind of each control channel, in channel order (static).
    """

    model: mjx.Model
    wing: aero.Wing
    root: str = eqx.field(static=True)
    aero_model: str = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    stroke_inertia: float = eqx.field(static=True)
    base_body: int = eqx.field(static=True)
    plate_body: int = eqx.field(static=True)
    wing_bodies: tuple = eqx.field(static=True)
    stroke_q: tuple = eqx.field(static=True)
    stroke_v: tuple = eqx.field(static=True)
    pitch_q: tuple = eqx.field(static=True)
    pitch_v: tuple = eqx.field(static=True)
    pitch_jnt: tuple = eqx.field(static=True)
    plate_q: tuple = eqx.field(static=True)
    plate_v: tuple = eqx.field(static=True)
    stroke_act: tuple = eqx.field(static=True)
    plate_act: tuple = eqx.field(static=True)
    free_q: int = eqx.field(static=True)
    free_v: int = eqx.field(static=True)
    base_root: int = eqx.field(static=True)
    plate_root: int = eqx.field(static=True)
    backend: str = eqx.field(static=True, default="mjx")
    rigid_body: Any = None
    channel_kinds: tuple = eqx.field(static=True, default=SEED_KINDS)

    @property
    def has_wings(self) -> bool:
        return self.root != "lumped"

    @property
    def dynamics(self) -> str:
        """The integrator the backend runs, chosen by the root: "mjx" (the
        ``"mjx"`` backend); on the ``"rigid"`` backend, "rigid_body" (the
        lumped root's single body, :mod:`flapjax.sim.rigid`) or "tree" (the
        joint tree of the fixed or free root, :mod:`flapjax.sim.tree`). An
        internal name: the backend names are :data:`flapjax.sim.backend.BACKENDS`
        (:mod:`flapjax.sim.flapper.backends`)."""
        if self.backend == "mjx":
            return "mjx"
        return "rigid_body" if self.root == "lumped" else "tree"


# ---------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------


_WING_FIELDS = ("wing_bodies", "stroke_q", "stroke_v", "pitch_q", "pitch_v", "pitch_jnt", "plate_q", "plate_v",
                "stroke_act", "plate_act")


def robot_from_mjmodel(
    m: mujoco.MjModel,
    *,
    root: str = "fixed",
    aero_model: str = "wing",
    wing: aero.Wing | None = None,
    dtype: Any = None,
    backend: str = "mjx",
    names: description_model.JointNames = description_model.SEED_NAMES,
) -> FlapperRobot:
    """A :class:`FlapperRobot` around a compiled model with the joints
    ``names`` (default those of ``assets/flapper.xml``: body ``base``, the
    stroke, feathering and plate joints, each servo the actuator on its
    joint; freejoint ``root`` on the free and lumped variants). Extra joints
    (e.g. a driven base) are allowed.

    Args:
      m: the compiled MuJoCo model (e.g. from :func:`flapjax.sim.flapper.model.build`).
      root: "fixed", "free" or "lumped" (how the base is held; "lumped" has no wings).
      aero_model: "wing" or "averaged".
      wing: per-wing kernel description; default :meth:`aero.Wing.flapsim`.
      dtype: cast the MJX model's float arrays (e.g. ``jnp.float32``).
      backend: "mjx", or "rigid" (lumped root, or a model that
        :func:`flapjax.sim.tree.check_model` accepts).
      names: the joint and body names (a description's ``names``).
    """
    wing = aero.Wing.flapsim() if wing is None else wing
    if aero_model == "averaged" and root != "lumped" and names.channel_kinds != SEED_KINDS:
        raise ConfigError(f"aero_model: 'averaged' drives two joint channels (the plate's) on the {root!r} root, this "
                          f"robot's channels are {list(names.channel_kinds)}: use aero_model='wing', or the 'lumped' "
                          "root with a CycleAveragedParams.control_matrix")
    base = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, names.base)
    free_q = free_v = -1
    if root in ("free", "lumped"):
        jr = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "root")
        free_q, free_v = int(m.jnt_qposadr[jr]), int(m.jnt_dofadr[jr])
    if root == "lumped":
        idx = dict(plate_body=-1, plate_root=-1, **{k: () for k in _WING_FIELDS})
        stroke_inertia = 0.0
    else:
        idx = description_model.joint_indices(m, names)
        stroke_inertia = description_model.stroke_inertia(m, idx["stroke_v"][0], idx["stroke_act"][0])
        description_model.check_plate_servo(m, idx["plate_v"], idx["plate_act"])
    if backend == "rigid" and root != "lumped":
        tree.check_model(m)
    mx = mjx.put_model(m)
    body = None
    if backend == "rigid" and root == "lumped":
        body = rigid.RigidBody(
            float(m.body_mass[base]), m.body_inertia[base], gravity=m.opt.gravity,
            com_offset=m.body_ipos[base], inertia_quat=m.body_iquat[base],
        )
    if dtype is not None:
        cast = lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x  # noqa: E731
        mx = jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, mx)
        wing = jax.tree.map(cast, wing)
        body = jax.tree.map(cast, body)
    return FlapperRobot(
        model=mx, wing=wing, root=root, aero_model=aero_model, dt=float(m.opt.timestep),
        stroke_inertia=stroke_inertia, base_body=int(base), free_q=free_q, free_v=free_v,
        base_root=int(m.body_rootid[base]), backend=backend, rigid_body=body, channel_kinds=names.channel_kinds,
        **idx,
    )


def make_robot(
    root: str = "fixed",
    aero_model: str = "wing",
    *,
    wing: aero.Wing | None = None,
    wing_mass: float | None = None,
    timestep: float | None = None,
    dtype: Any = None,
    backend: str = "mjx",
    description: FlapperDescription | str | Path | None = None,
) -> FlapperRobot:
    """Compile a flapper world: the seed robot, or the robot of a description file.

    Args:
      root: "fixed" (base welded to the world), "free" (freejoint on the base)
        or "lumped" (single rigid body, averaged model only).
      aero_model: "wing" (per-wing quasi-steady) or "averaged" (seed 10).
      wing: per-wing kernel description; default :meth:`aero.Wing.flapsim`.
      wing_mass: override the MJCF wing mass [kg] (calibration).
      timestep: override the MJCF timestep [s].
      dtype: cast the MJX model's float arrays (e.g. ``jnp.float32``); default
        keeps JAX's default float type.
      backend: "mjx", or "rigid" for pure-JAX rigid-body dynamics
        (contact-free): the single body of root "lumped", or the joint tree
        of roots "fixed" and "free" (:mod:`flapjax.sim.tree`, the fast path
        of fixed-base sweeps and per-wing free flight). The two agree to
        round-off; the rigid one is cheaper per step and to compile.
      description: a robot description (:class:`FlapperDescription` or the
        path of its ``.toml``, docs/flapper_robots.md); default the seed
        robot of ``assets/flapper.xml``. Its wing and wing mass are used
        unless ``wing`` or ``wing_mass`` is given.
    """
    check_choice("root", root, flapper_model.ROOTS)
    check_choice("aero_model", aero_model, AERO_MODELS)
    check_choice("backend", backend, BACKENDS)
    if dtype is not None and jnp.dtype(dtype) not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64)):
        raise ConfigError(f"dtype: must be float32 or float64, got {jnp.dtype(dtype).name} (the robot's masses, "
                          "lengths and the integrator need a real floating type of at least 32 bits)")
    if root == "lumped" and aero_model == "wing":
        raise ConfigError("aero_model: 'wing' needs wings; the 'lumped' root has none (use 'fixed' or 'free')")
    if description is None:
        m, names = flapper_model.build(root, wing_mass=wing_mass), description_model.SEED_NAMES
    else:
        description = resolve_description(description)
        m, names = description_model.build(description, root, wing_mass=wing_mass), description.names
        wing = description.wing if wing is None else wing
    if timestep is not None:
        check_range("timestep", timestep, 1e-6, 1e-2)
        m.opt.timestep = float(timestep)
    return robot_from_mjmodel(m, root=root, aero_model=aero_model, wing=wing, dtype=dtype, backend=backend,
                              names=names)


def default_params(
    robot: FlapperRobot | None = None,
    *,
    frequency: float = 30.0,
    amplitude: float | None = None,
    plate: Sequence[float] | None = None,
    aero_options: aero.AeroOptions | None = None,
    averaged: CycleAveragedParams | None = None,
    description: FlapperDescription | str | Path | None = None,
) -> FlapperParams:
    """Nominal parameters: hinge values from the MJCF, stops, stroke
    defaults and the calibrated ``lift_scale`` of the per-wing model from
    ``assets/flapper_params.json`` (written by
    ``identification/history/flapper_calibration.py``), averaged-model values from
    ``assets/flapper_cycle_averaged.json``. ``aero_options``, when given,
    replaces the per-wing options whole (its own ``lift_scale`` included).
    With a ``description`` (docs/flapper_robots.md) the hinge, stops, stroke
    and the wing file's options are the description's, and ``frequency``
    must lie in its ``stroke.frequency_range``. ``plate``: the channel
    values (nc,) (default zeros), each within its kind's bound
    (:data:`flapjax.sim.flapper.channels.LIMITS`)."""
    if description is None:
        cfg = json.loads(PARAMS_PATH.read_text())
        m, pitch = flapper_model.build("fixed"), flapper_model.PITCH_JOINTS[0]
        options = aero.AeroOptions(lift_scale=cfg.get("lift_scale", 1.0))
    else:
        description = resolve_description(description)
        cfg = {**description.hinge, "amplitude": description.amplitude, "phase": description.phase}
        m, pitch = description_model.build(description), description.names.feathering[0]
        options = aero.AeroOptions() if description.aero_options is None else description.aero_options
        lo, hi = description.frequency_range
        if not lo <= as_float_array("frequency", frequency, ()) <= hi:
            raise ConfigError(f"frequency: {float(frequency):g} Hz is outside the robot's stroke.frequency_range "
                              f"[{lo:g}, {hi:g}] Hz ({description.source})")
    j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, pitch)
    hinge = FeatheringHinge(
        stiffness=float(np.ravel(m.jnt_stiffness[j])[0]),
        damping=float(m.dof_damping[m.jnt_dofadr[j]]),
        stop_angle=cfg["stop_angle"],
        stop_stiffness=cfg["stop_stiffness"],
        stop_width=cfg["stop_width"],
    )
    amp = cfg["amplitude"] if amplitude is None else amplitude
    as_float_array("frequency", frequency, ())  # one world; batch with jax.vmap or flapper.sweep_params
    check_range("frequency", frequency, 0.0, MAX_FREQUENCY)
    check_range("amplitude", as_float_array("amplitude", amp, ()), 0.0, MAX_AMPLITUDE)
    kinds = description.names.channel_kinds if description is not None else (
        robot.channel_kinds if robot is not None else SEED_KINDS)
    plate = check_values("plate", np.zeros(len(kinds)) if plate is None else plate, kinds, amplitude=amp)
    params = FlapperParams(
        stroke=StrokeSchedule(frequency=frequency, amplitude=amp, phase=cfg["phase"], direction=(1.0, 1.0)),
        plate=np.asarray(plate, dtype=float),
        hinge=hinge,
        aero=options if aero_options is None else aero_options,
        averaged=CycleAveragedParams.from_json(AVERAGED_PATH) if averaged is None else averaged,
    )
    if robot is not None and robot.aero_model == "averaged" and kinds != SEED_KINDS and (
            averaged is None or averaged.control_matrix is None):
        raise ConfigError(f"averaged: the robot's channels {list(kinds)} act through a CycleAveragedParams."
                          "control_matrix (3, nc); pass averaged=... with one (flapjax identify --robot writes it)")
    if robot is not None:  # the robot's float type (make_robot(dtype=...)), so a rollout's carry keeps one type
        dtype = robot.model.body_mass.dtype
        params = jax.tree.map(lambda x: x.astype(dtype) if eqx.is_inexact_array(x) else x, params)
    return params
