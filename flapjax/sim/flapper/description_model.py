"""The MuJoCo side of a flapper description: read the file
(:func:`load_robot_description`), compile the model it names, look up the
bridge's indices by name, and check the model against the description and
the wing.

:func:`joint_indices` is the one name-to-index lookup of the flapper bridge
(:func:`flapjax.sim.flapper.robot_from_mjmodel` goes through it with
:data:`SEED_NAMES` or a description's names); servos are found as the
actuators whose transmission is the joint, so their names do not matter.

The per-wing kernels place the wing root at ``(0, s d0, ds)`` in the frame
the stroke joints ride on (the "plate"), turn the wing by ``R_z(s psi)``
then ``R_y(theta)`` (stroke axis ``s z``, feathering axis ``+y``), with
``s = +1`` left and ``-1`` right (docs/physics.md, Flapping-wing step).
:func:`check_description` refuses a model whose joints are elsewhere, so a
robot cannot silently fly with the wrong arms.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import mujoco
import numpy as np

from flapjax.sim.flapper import model as flapper_model
from flapjax.safe_io import read_settings
from flapjax.sim.flapper.channels import joint_slots
from flapjax.sim.flapper.description import FlapperDescription, JointNames, description_from_dict
from flapjax.validation import ConfigError, check_choice, check_positive

#: The names of ``assets/flapper.xml``.
SEED_NAMES = JointNames(base="base", stroke=flapper_model.STROKE_JOINTS, feathering=flapper_model.PITCH_JOINTS,
                        plate=flapper_model.PLATE_JOINTS)
_SIDES = ("left", "right")
# Slack of the geometric checks, relative to the wing length (a model
# written with 6 significant digits passes).
_GEOMETRY_RTOL = 1e-5


def _id(m: mujoco.MjModel, kind: mujoco.mjtObj, name: str, what: str) -> int:
    i = mujoco.mj_name2id(m, kind, name)
    if i < 0:
        raise ConfigError(f"{what}: no {kind.name[6:].lower()} named {name!r} in the model")
    return int(i)


def servo_of(m: mujoco.MjModel, joint: int, what: str) -> int:
    """The one actuator whose transmission is ``joint`` (its position servo)."""
    hits = np.flatnonzero((m.actuator_trntype == int(mujoco.mjtTrn.mjTRN_JOINT)) & (m.actuator_trnid[:, 0] == joint))
    if hits.size != 1:
        raise ConfigError(f"{what}: joint {m.joint(joint).name!r} needs exactly one actuator (a <position> servo) "
                          f"on it, the model has {hits.size}")
    return int(hits[0])


def joint_indices(m: mujoco.MjModel, names: JointNames = SEED_NAMES) -> dict[str, Any]:
    """Addresses of the wings, stroke, feathering and plate joints and their
    servos, by name (the fields of :class:`FlapperRobot` the wings need)."""
    J, B = mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_BODY
    sj = [_id(m, J, n, f"wings.{s}.stroke") for n, s in zip(names.stroke, _SIDES)]
    pj = [_id(m, J, n, f"wings.{s}.feathering") for n, s in zip(names.feathering, _SIDES)]
    slots = joint_slots(names.channel_kinds)
    qj = [_id(m, J, n, f"channels[{i}].joint") for i, n in zip(slots, names.plate)]
    for j, field in [*zip(sj + pj, [f"wings.{s}.{k}" for k in ("stroke", "feathering") for s in _SIDES]),
                     *((j, f"channels[{i}].joint") for i, j in zip(slots, qj))]:
        if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            raise ConfigError(f"{field}: joint {m.joint(j).name!r} must be a hinge")
    plates = {int(m.body_parentid[m.jnt_bodyid[j]]) for j in sj}
    if len(plates) != 1:
        raise ConfigError("wings: the two stroke joints must ride on the same body (the plate)")
    plate = plates.pop()
    _id(m, B, names.base, "base")
    return dict(
        plate_body=plate,
        wing_bodies=tuple(int(m.jnt_bodyid[j]) for j in pj),
        stroke_q=tuple(int(m.jnt_qposadr[j]) for j in sj),
        stroke_v=tuple(int(m.jnt_dofadr[j]) for j in sj),
        pitch_q=tuple(int(m.jnt_qposadr[j]) for j in pj),
        pitch_v=tuple(int(m.jnt_dofadr[j]) for j in pj),
        pitch_jnt=tuple(pj),
        plate_q=tuple(int(m.jnt_qposadr[j]) for j in qj),
        plate_v=tuple(int(m.jnt_dofadr[j]) for j in qj),
        stroke_act=tuple(servo_of(m, j, f"wings.{s}.stroke") for j, s in zip(sj, _SIDES)),
        plate_act=tuple(servo_of(m, j, f"channels[{i}].joint") for i, j in zip(slots, qj)),
        plate_root=int(m.body_rootid[plate]),
    )


def _mass_matrix(m: mujoco.MjModel) -> np.ndarray:
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    return full


def _check_servo_step(m: mujoco.MjModel, inertia: float, act: int, what: str) -> None:
    omega = math.sqrt(float(m.actuator_gainprm[act, 0]) / inertia)
    if m.opt.timestep * omega > 1.0:
        raise ConfigError(
            f"timestep: {m.opt.timestep:g} s is too large for a stable step: must be <= {1.0 / omega:.3g} s "
            f"({what} servo natural frequency {omega:.4g} rad/s)"
        )


def stroke_inertia(m: mujoco.MjModel, stroke_v: int, stroke_act: int) -> float:
    """The stroke joint's inertia J at the reference pose [kg m^2]; refuses a
    timestep past the stability limit the stiff stroke servo sets."""
    inertia = float(_mass_matrix(m)[stroke_v, stroke_v])
    _check_servo_step(m, inertia, stroke_act, "stroke")
    return inertia


def check_plate_servo(m: mujoco.MjModel, plate_v: Sequence[int], plate_act: Sequence[int]) -> None:
    """Refuse a timestep past the stability limit of the stiff plate servo.

    The plate joints' inertia swings with the stroke; the smallest (the
    roll_joint's at zero stroke, the reference pose) sets the fastest mode
    ``sqrt(kp / I)`` of the servo's explicit position gain.
    """
    full = _mass_matrix(m)
    for v, a in zip(plate_v, plate_act):
        _check_servo_step(m, float(full[v, v]), a, "plate")


# ---------------------------------------------------------------------------
# Compiling a description's model
# ---------------------------------------------------------------------------


def _spec_part(spec: mujoco.MjSpec, kind: str, name: str, field: str) -> Any:
    """``spec.joint(name)`` or ``spec.body(name)``; :class:`ConfigError` naming ``field`` when absent."""
    try:
        part = getattr(spec, kind)(name)
    except KeyError:
        part = None
    if part is None:
        raise ConfigError(f"{field}: no {kind} named {name!r} in the model")
    return part


def _set_joint_value(joint: Any, attr: str, value: float) -> None:
    cur = np.array(getattr(joint, attr), dtype=float).ravel()
    if cur.size > 1:
        cur[0] = value
        setattr(joint, attr, cur)
    else:
        setattr(joint, attr, value)


def _set_wing_mass(spec: mujoco.MjSpec, names: JointNames, wing_mass: float) -> None:
    """Each wing body's mass to ``wing_mass`` [kg], its inertia scaled alike
    (same shape, uniform density); the base takes the difference so the
    robot keeps its total mass."""
    check_positive("wing_mass", wing_mass)
    base = _spec_part(spec, "body", names.base, "base")
    for joint, side in zip(names.feathering, _SIDES):
        body = _spec_part(spec, "joint", joint, f"wings.{side}.feathering").parent
        old = float(body.mass)
        inertia = np.asarray(body.inertia, dtype=float) * (float(wing_mass) / old)
        # A flat wing meets the triangle inequality with equality; keep the
        # scaled moments' round-off on the side MuJoCo accepts.
        body.inertia = np.minimum(inertia, [inertia[1] + inertia[2], inertia[0] + inertia[2], inertia[0] + inertia[1]])
        body.mass = float(wing_mass)
        base.mass = float(base.mass) + (old - float(wing_mass))


def load_spec(description: FlapperDescription, *, wing_mass: float | None = None) -> mujoco.MjSpec:
    """The description's model as a spec, with its hinge stiffness and
    damping (when it gives them) and wing mass (``wing_mass`` [kg] replaces
    the description's) applied."""
    try:
        spec = mujoco.MjSpec.from_file(str(description.model))
    except (ValueError, mujoco.FatalError) as exc:
        raise ConfigError(f"model: MuJoCo cannot read {str(description.model)!r} ({exc})") from None
    for attr in ("stiffness", "damping"):
        if attr in description.hinge:
            for joint, side in zip(description.names.feathering, _SIDES):
                _set_joint_value(_spec_part(spec, "joint", joint, f"wings.{side}.feathering"), attr,
                                 float(description.hinge[attr]))
    mass = description.wing_mass if wing_mass is None else wing_mass
    if mass is not None:
        _set_wing_mass(spec, description.names, mass)
    return spec


def _collapse(spec: mujoco.MjSpec, base: str, full: mujoco.MjModel) -> mujoco.MjSpec:
    """Remove the servos and every body below ``base`` and give ``base`` the
    mass and inertia of the whole robot ``full`` at its reference pose."""
    mass, com, inertia = flapper_model.composite_inertia(full, base)
    base_pos = full.body(base).pos.copy()
    for act in list(spec.actuators):
        spec.delete(act)
    body = spec.body(base)
    for child in list(body.bodies):
        spec.delete(child)
    flapper_model.set_lumped_body(body, mass, com - base_pos, inertia)
    return spec


def build(description: FlapperDescription, root: str = "fixed", *, wing_mass: float | None = None) -> mujoco.MjModel:
    """Compile the description's robot as the root ``"fixed"`` (as written),
    ``"free"`` (a freejoint ``root`` on the base) or ``"lumped"`` (one rigid
    body), as :func:`flapjax.sim.flapper.model.build` does for the seed."""
    check_choice("root", root, flapper_model.ROOTS)
    spec = load_spec(description, wing_mass=wing_mass)
    if root == "fixed":
        return spec.compile()
    if root == "free":
        _spec_part(spec, "body", description.names.base, "base").add_freejoint(name="root")
        return spec.compile()
    return _collapse(load_spec(description), description.names.base, spec.compile()).compile()


# ---------------------------------------------------------------------------
# Checking a description against its model
# ---------------------------------------------------------------------------


def _near(got: np.ndarray, want: np.ndarray, tol: float) -> bool:
    return bool(np.max(np.abs(np.asarray(got) - np.asarray(want))) <= tol)


def _check_wing_frames(m: mujoco.MjModel, description: FlapperDescription, idx: dict[str, Any]) -> None:
    """The stroke and feathering joints where the kernels put them (module docstring)."""
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    p = idx["plate_body"]
    rot_p, pos_p = d.xmat[p].reshape(3, 3), d.xpos[p]
    wing = description.wing
    d0, ds, span = (float(x) for x in (wing.shoulder_half_width, wing.stroke_plane_offset, wing.geometry.span))
    tol = _GEOMETRY_RTOL * span
    names = description.names
    for k, (side, s) in enumerate(zip(_SIDES, (1.0, -1.0))):
        sj, pj, wb = m.joint(names.stroke[k]).id, idx["pitch_jnt"][k], idx["wing_bodies"][k]
        at = f"{description.source}: wings.{side}"
        root = rot_p.T @ (d.xanchor[sj] - pos_p)
        if not _near(root, [0.0, s * d0, ds], tol):
            raise ConfigError(f"{at}.stroke: joint {names.stroke[k]!r} sits at {np.round(root, 7).tolist()} m in the "
                              f"plate frame; the wing's shoulder_half_width and stroke_plane_offset put the wing "
                              f"root at {[0.0, s * d0, ds]} m")
        if not _near(rot_p.T @ d.xaxis[sj], [0.0, 0.0, s], 1e-6):
            raise ConfigError(f"{at}.stroke: joint {names.stroke[k]!r} must turn about {'+' if s > 0 else '-'}z of "
                              f"the plate frame, got axis {np.round(rot_p.T @ d.xaxis[sj], 6).tolist()}")
        if not _near(rot_p.T @ d.xaxis[pj], [0.0, 1.0, 0.0], 1e-6) or not _near(d.xanchor[pj], d.xanchor[sj], tol):
            raise ConfigError(f"{at}.feathering: joint {names.feathering[k]!r} must turn about +y of the plate "
                              "frame through the wing root (the stroke joint's anchor)")
        if not _near(rot_p.T @ d.xmat[wb].reshape(3, 3), np.eye(3), 1e-6):
            raise ConfigError(f"{at}.feathering: the wing body {m.body(wb).name!r} must have the plate frame's "
                              "orientation at zero stroke and feathering (+x the wing normal, span along +-y)")


def check_description(description: FlapperDescription) -> None:
    """Compile the description's model and refuse, naming the file and the
    field, names it lacks (joints, base body), joints without a servo, a
    base that already moves, and wings placed unlike the wing says."""
    try:
        m = build(description, "fixed")
        idx = joint_indices(m, description.names)
    except ConfigError as exc:
        raise ConfigError(f"{description.source}: {exc}") from None
    base = m.body(description.names.base).id
    if m.body_jntnum[base] or m.body_parentid[base] != 0:
        raise ConfigError(f"{description.source}: base: body {description.names.base!r} must be a child of the "
                          "world without joints (the free root adds its freejoint)")
    _check_wing_frames(m, description, idx)
    _check_stroke_plane_joints(m, description)


def _carries(m: mujoco.MjModel, joint_body: int, body: int) -> bool:
    """Whether ``body`` lies on the subtree of ``joint_body`` (so the joint moves it)."""
    while body > 0:
        if body == joint_body:
            return True
        body = int(m.body_parentid[body])
    return False


def _check_stroke_plane_joints(m: mujoco.MjModel, description: FlapperDescription) -> None:
    """A ``"stroke_plane"`` channel's joint must carry both stroke hinges."""
    for i, c in enumerate(description.channels):
        if c.kind != "stroke_plane":
            continue
        owner = int(m.jnt_bodyid[m.joint(c.joint).id])
        for side, stroke in zip(("left", "right"), description.names.stroke):
            if not _carries(m, owner, int(m.jnt_bodyid[m.joint(stroke).id])):
                raise ConfigError(f"{description.source}: channels[{i}] {c.name!r}.joint: a 'stroke_plane' joint "
                                  f"must carry both stroke hinges; {c.joint!r} does not move wings.{side}.stroke "
                                  f"{stroke!r}")


def load_robot_description(path: str | Path) -> FlapperDescription:
    """Read and check the description file at ``path`` (``.toml``), and its
    names against the model it names
    (:func:`check_description`)."""
    path = Path(path)
    if path.suffix.lower() != ".toml":
        raise ConfigError(f"{path}: a robot description is a .toml file")
    cfg = read_settings(path, what="robot description")
    description = description_from_dict(cfg, folder=path.parent, source=str(path))
    check_description(description)
    return description


def resolve_description(description: FlapperDescription | str | Path) -> FlapperDescription:
    """A description as is, or loaded from its file (:func:`load_robot_description`)."""
    if isinstance(description, FlapperDescription):
        return description
    if not isinstance(description, (str, Path)):
        raise ConfigError(f"description: must be a FlapperDescription or the path of a .toml description, "
                          f"got {type(description).__name__}")
    return load_robot_description(description)
