"""The flapper MJCF source and the variants derived from it (MuJoCo side only).

``assets/flapper.xml`` is the only description of the robot. Variants are
derived with ``mujoco.MjSpec`` so they can never drift apart:

* ``"fixed"``  -- the file as written: base welded to the world;
* ``"free"``   -- a freejoint named ``root`` added to ``base``;
* ``"lumped"`` -- plate, stroke arms and wings removed and their mass and
  inertia (at zero stroke and zero plate angles) merged into ``base``, plus a
  freejoint: the single 30 g rigid body of the cycle-averaged model.

Overrides (wing mass, hinge stiffness, ...) are applied to the spec before
compiling; that is how the calibration explores the robot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import mujoco
import numpy as np

from flapjax.validation import check_choice, check_positive

ASSETS = Path(__file__).resolve().parent.parent / "assets"
MJCF_PATH = ASSETS / "flapper.xml"
ROOTS = ("fixed", "free", "lumped")
WING_BODIES = ("left_wing", "right_wing")
STROKE_JOINTS = ("left_stroke", "right_stroke")
PITCH_JOINTS = ("left_pitch", "right_pitch")
PLATE_JOINTS = ("pitch_joint", "roll_joint")

Root = Literal["fixed", "free", "lumped"]


def _wing_inertia(mass: float, span: float, chord: float) -> np.ndarray:
    """Thin rectangular plate in the wing frame's Y-Z plane, about its centre [kg m^2].

    A thin plate sits on MuJoCo's triangle inequality (``I_x = I_y + I_z``
    exactly); rounding can put ``I_x`` one ulp above the sum, which MuJoCo
    refuses, so it is clamped to the sum."""
    inertia = mass / 12.0 * np.array([span**2 + chord**2, chord**2, span**2])
    return np.minimum(inertia, [inertia[1] + inertia[2], inertia[0] + inertia[2], inertia[0] + inertia[1]])


def load_spec(
    *,
    wing_mass: float | None = None,
    hinge_stiffness: float | None = None,
    hinge_damping: float | None = None,
) -> mujoco.MjSpec:
    """The source spec with optional overrides.

    Args:
      wing_mass: mass of each wing [kg]; the inertia is rescaled as a thin
        uniform 70 x 20 mm plate and the base mass adjusted so the robot
        keeps its 30 g.
      hinge_stiffness: feathering hinge torsional stiffness [N m/rad].
      hinge_damping: feathering hinge damping [N m s/rad].
    """
    spec = mujoco.MjSpec.from_file(str(MJCF_PATH))
    if wing_mass is not None:
        check_positive("wing_mass", wing_mass)
        old = float(spec.body(WING_BODIES[0]).mass)
        for name in WING_BODIES:
            b = spec.body(name)
            b.mass = float(wing_mass)
            b.inertia = _wing_inertia(float(wing_mass), 0.07, 0.02)
        spec.body("base").mass = float(spec.body("base").mass) + 2.0 * (old - float(wing_mass))
    for value, attr, label in ((hinge_stiffness, "stiffness", "hinge_stiffness"), (hinge_damping, "damping", "hinge_damping")):
        if value is None:
            continue
        check_positive(label, value, allow_zero=True)
        for name in PITCH_JOINTS:
            j = spec.joint(name)
            cur = np.array(getattr(j, attr), dtype=float).ravel()
            if cur.size > 1:
                cur[0] = float(value)
                setattr(j, attr, cur)
            else:
                setattr(j, attr, float(value))
    return spec


def composite_inertia(model: mujoco.MjModel, body: str = "base") -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centre of mass and inertia (about that centre, world axes) of the
    subtree rooted at ``body`` in the model's reference pose [kg, m, kg m^2]."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    root = model.body(body).id
    ids = [b for b in range(model.nbody) if _is_descendant(model, b, root)]
    mass = float(sum(model.body_mass[b] for b in ids))
    com = sum(model.body_mass[b] * data.xipos[b] for b in ids) / mass
    inertia = np.zeros((3, 3))
    for b in ids:
        rot = data.ximat[b].reshape(3, 3)
        i_local = rot @ np.diag(model.body_inertia[b]) @ rot.T
        r = data.xipos[b] - com
        inertia += i_local + model.body_mass[b] * (np.dot(r, r) * np.eye(3) - np.outer(r, r))
    return mass, com, inertia


def _is_descendant(model: mujoco.MjModel, b: int, root: int) -> bool:
    while True:
        if b == root:
            return True
        if b == 0:
            return False
        b = int(model.body_parentid[b])


def build(
    root: Root = "fixed",
    *,
    wing_mass: float | None = None,
    hinge_stiffness: float | None = None,
    hinge_damping: float | None = None,
) -> mujoco.MjModel:
    """Compile one variant of the flapper (see the module docstring)."""
    check_choice("root", root, ROOTS)
    spec = load_spec(wing_mass=wing_mass, hinge_stiffness=hinge_stiffness, hinge_damping=hinge_damping)
    if root == "fixed":
        return spec.compile()
    if root == "free":
        spec.body("base").add_freejoint(name="root")
        return spec.compile()
    # Lumped: measure the whole robot first, then collapse it onto the base.
    full = spec.compile()
    mass, com, inertia = composite_inertia(full, "base")
    base_pos = full.body("base").pos.copy()
    lumped = mujoco.MjSpec.from_file(str(MJCF_PATH))
    for act in list(lumped.actuators):
        lumped.delete(act)
    lumped.delete(lumped.body("plate"))
    set_lumped_body(lumped.body("base"), mass, com - base_pos, inertia)
    return lumped.compile()


def set_lumped_body(body: mujoco.MjsBody, mass: float, com: np.ndarray, inertia: np.ndarray) -> None:
    """Make ``body`` a free rigid body of ``mass`` [kg] with its centre of
    mass at ``com`` (3,) [m, body frame] and the (3, 3) ``inertia`` [kg m^2]
    about it (principal axes as the inertial frame): the lumped robot."""
    body.add_freejoint(name="root")
    body.mass = mass
    body.ipos = com
    principal, axes = np.linalg.eigh(inertia)
    if np.linalg.det(axes) < 0:
        axes[:, 0] = -axes[:, 0]
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, axes.ravel())
    body.inertia = principal
    body.iquat = quat
    body.explicitinertial = True
