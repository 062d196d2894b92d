"""A bad flapper description gives one clear error naming the file and the
field: each row edits the seed robot's description (or its wing file) in
one place and names the message it must raise."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from flapjax.sim import flapper
from flapjax.validation import ConfigError

SEED = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flappers" / "seed_robot"

# (id, [(old text, new text) in robot.toml], {wing-file key: value}, expected message after "robot.toml: ")
ROWS = [
    ("unknown key", [('name = "seed_robot"', 'name = "seed_robot"\ncolour = "red"')], {},
     "colour: unknown key (allowed: name, model"),
    ("unknown key in a table", [("stop_width = 0.0088227", "stop_width = 0.0088227\nstop_gap = 0.1")], {},
     "hinge.stop_gap: unknown key"),
    ("unknown table", [("[stroke]\n", "[other]\n")], {}, "other: unknown key"),
    ("missing key", [('model = "package:flapper.xml"', "")], {}, "model: missing (required: model, wing, wings"),
    ("missing model file", [('"package:flapper.xml"', '"robot.xml"')], {}, "model: model file"),
    ("model not MJCF", [('"package:flapper.xml"', '"wing.json"')], {}, "model: must be an MJCF (.xml) or URDF"),
    ("missing stroke joint", [('stroke = "left_stroke"', 'stroke = "left_strok"')], {},
     "wings.left.stroke: no joint named 'left_strok' in the model"),
    ("missing feathering joint", [('feathering = "right_pitch"', 'feathering = "right_pich"')], {},
     "wings.right.feathering: no joint named 'right_pich' in the model"),
    ("missing wing", [("[wings.right]", "[wings.rite]")], {}, "wings.rite: unknown key"),
    ("missing base body", [('base = "base"', 'base = "body"')], {}, "base: no body named 'body'"),
    ("base that moves", [('base = "base"', 'base = "plate"')], {}, "base: body 'plate' must be a child of the world"),
    ("channel mapped to nothing", [('joint = "pitch_joint"     #', '#')], {},
     "channels[0] 'pitch'.joint: missing: a 'joint' channel must name the joint it sets"),
    ("channel to an unknown joint", [('joint = "roll_joint"', 'joint = "yaw_joint"')], {},
     "channels[1].joint: no joint named 'yaw_joint' in the model"),
    ("stroke-plane channel without its joint", [('kind = "joint"\njoint = "roll_joint"', 'kind = "stroke_plane"')], {},
     "channels[1] 'roll'.joint: missing: a 'stroke_plane' channel must name the joint it sets"),
    ("stroke channel that names a joint", [('kind = "joint"\njoint = "roll_joint"',
                                            'kind = "stroke_bias"\njoint = "roll_joint"')], {},
     "channels[1] 'roll'.joint: a 'stroke_bias' channel moves the stroke, not a joint"),
    ("channel of an unknown kind", [('kind = "joint"\njoint = "roll_joint"', 'kind = "thrust"')], {},
     "channels[1] 'roll'.kind: must be one of ['joint', 'stroke_plane'"),
    ("joint in two roles", [('joint = "roll_joint"', 'joint = "left_stroke"')], {},
     "channels[1].joint: joint 'left_stroke' is already wings.left.stroke (each joint has one role)"),
    ("one joint on both wings", [('feathering = "right_pitch"', 'feathering = "left_pitch"')], {},
     "wings.right.feathering: joint 'left_pitch' is already wings.left.feathering"),
    ("channel name twice", [('name = "roll"', 'name = "pitch"')], {}, "channels[1] 'pitch': the name is given twice"),
    ("one stroke kind twice", [('kind = "joint"\njoint = "pitch_joint"     #', 'kind = "amplitude_difference"  #'),
                               ('kind = "joint"\njoint = "roll_joint"', 'kind = "amplitude_difference"')], {},
     "channels[1] 'roll'.kind: 'amplitude_difference' is already channel 'pitch'"),
    ("boolean amplitude", [("amplitude = 1.5 ", "amplitude = true ")], {},
     "stroke.amplitude: must be a number, got bool True"),
    ("string wing mass", [("wing_mass = 1.5e-4", 'wing_mass = "1.5e-4"')], {},
     "wing_mass: must be a number, got str '1.5e-4'"),
    ("string in the frequency range", [("[15.0, 45.0]", '[15.0, "45"]')], {},
     "stroke.frequency_range[1]: must be a number"),
    ("negative wing mass", [("wing_mass = 1.5e-4", "wing_mass = -1.5e-4")], {}, "wing_mass: must be > 0 kg"),
    ("negative stop stiffness", [("stop_stiffness = 0.376192", "stop_stiffness = -0.376192")], {},
     "hinge.stop_stiffness: must lie in [0, inf]"),
    ("amplitude past pi", [("amplitude = 1.5 ", "amplitude = 3.5 ")], {}, "stroke.amplitude: must lie in (0, pi]"),
    ("frequency range out of order", [("[15.0, 45.0]", "[45.0, 15.0]")], {},
     "stroke.frequency_range: must be in order, 0 < f_min < f_max, got [45, 15] Hz"),
    ("frequency range of one", [("[15.0, 45.0]", "[15.0]")], {}, "stroke.frequency_range: must be [f_min, f_max]"),
    ("missing wing file", [('wing = "wing.json"', 'wing = "wings.json"')], {}, "wing: wing file"),
    ("wing root elsewhere", [], {"shoulder_half_width": 0.012},
     "wings.left.stroke: joint 'left_stroke' sits at [0.0, 0.01395, 0.0189913] m in the plate frame"),
]
# Rows whose message names the wing file (its own field) rather than robot.toml.
WING_ROWS = [
    ("inconsistent integrals", {"r22": 0.3, "r33": 0.28},
     "r33: inconsistent with the other integrals: Cauchy-Schwarz with weight (1 - r_hat)"),
    ("integrals out of order", {"r22": 0.2}, "r33: inconsistent with the other integrals: r_hat <= 1"),
    ("r00 not one", {"r00": 1.1}, "r00: must be 1"),
    ("boolean in the wing file", {"mean_chord": True}, "mean_chord: must be a number"),
    ("unknown wing key", {"span": 0.07}, "span: unknown key"),
]


def _write(tmp_path: pathlib.Path, edits, wing_changes) -> pathlib.Path:
    text = (SEED / "robot.toml").read_text()
    for old, new in edits:
        assert text.count(old) == 1, old  # each row edits one place
        text = text.replace(old, new)
    wing = json.loads((SEED / "wing.json").read_text())
    wing.update(wing_changes)
    (tmp_path / "wing.json").write_text(json.dumps(wing))
    (tmp_path / "robot.toml").write_text(text)
    return tmp_path / "robot.toml"


@pytest.mark.parametrize("edits, wing_changes, message", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_a_bad_description_names_the_file_and_the_field(tmp_path, edits, wing_changes, message):
    path = _write(tmp_path, edits, wing_changes)
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {re.escape(message)}"):
        flapper.load_robot_description(path)


@pytest.mark.parametrize("wing_changes, message", [r[1:] for r in WING_ROWS], ids=[r[0] for r in WING_ROWS])
def test_a_bad_wing_file_names_the_wing_file_and_the_field(tmp_path, wing_changes, message):
    path = _write(tmp_path, [], wing_changes)
    with pytest.raises(ConfigError, match=f"^{re.escape(str(tmp_path / 'wing.json'))}: {re.escape(message)}"):
        flapper.load_robot_description(path)


def test_the_unchanged_copy_loads(tmp_path):
    """The rows' baseline is a valid description (each error is the edit's)."""
    desc = flapper.load_robot_description(_write(tmp_path, [], {}))
    assert [c.joint for c in desc.channels] == ["pitch_joint", "roll_joint"]


def test_an_inline_wing_table_is_checked_like_a_wing_file(tmp_path):
    wing = json.loads((SEED / "wing.json").read_text())
    table = "\n".join(f"{k} = {v!r}" for k, v in wing.items() if k not in ("version", "options"))
    good = _write(tmp_path, [('wing = "wing.json"', ""), ("[wings.left]", f"[wing]\n{table}\n\n[wings.left]")], {})
    assert float(flapper.load_robot_description(good).wing.geometry.span) == 0.07
    bad = _write(tmp_path, [('wing = "wing.json"', ""),
                            ("[wings.left]", f"[wing]\n{table.replace('r33 = 0.25', 'r33 = 0.4')}\n\n[wings.left]")], {})
    with pytest.raises(ConfigError, match=re.escape(f"{bad}: wing: r33: inconsistent with the other integrals")):
        flapper.load_robot_description(bad)


@pytest.mark.parametrize("path, message", [("missing.toml", "cannot read the robot description file (no such file)"),
                                           ("robot.json", "a robot description is a .toml file"),
                                           (".", "a robot description is a .toml file")])
def test_a_missing_or_misnamed_file_is_named(tmp_path, path, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        flapper.load_robot_description(tmp_path / path)


def test_make_robot_and_default_params_take_the_errors_and_the_range(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        flapper.make_robot("fixed", description=tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="description: must be a FlapperDescription"):
        flapper.make_robot("fixed", description=3)
    with pytest.raises(ConfigError, match=r"frequency: 50 Hz is outside the robot's stroke.frequency_range \[15, 45\]"):
        flapper.default_params(description=SEED / "robot.toml", frequency=50.0)


def test_the_integral_checks_accept_every_planform():
    """The checks are necessary conditions only: the integrals of 200 random
    outlines (tapered, swept, wider at the tip) all pass, the weighted
    Cauchy-Schwarz one with room to spare on some."""
    import numpy as np

    from flapjax.aero import WingGeometry, wing_file

    rng = np.random.default_rng(0)
    slack = []
    for _ in range(200):
        r = np.sort(np.concatenate([[0.0, 1.0], rng.uniform(0.0, 1.0, rng.integers(1, 6))])) * rng.uniform(0.02, 0.1)
        le = rng.uniform(0.001, 0.03, r.size)
        te = -rng.uniform(0.001, 0.03, r.size)
        g = WingGeometry.from_planform(np.concatenate([np.stack([r, le], 1), np.stack([r, te], 1)[::-1]]))
        rr = np.asarray(g.r)
        wing_file.check_integrals(rr, np.asarray(g.z_cp), float(g.z_rd))
        slack.append((rr[0] - rr[1]) * (rr[2] - rr[3]) - (rr[1] - rr[2]) ** 2)
    assert min(slack) > -1e-12 and max(slack) > 1e-3


@pytest.mark.parametrize("servo, field", [("roll_servo", "channels[1].joint: joint 'roll_joint'"),
                                          ("right_stroke_servo", "wings.right.stroke: joint 'right_stroke'")])
def test_a_joint_without_its_servo_is_named(tmp_path, servo, field):
    import mujoco

    spec = mujoco.MjSpec.from_file(str(flapper.MJCF_PATH))
    spec.delete(spec.actuator(servo))
    (tmp_path / "robot.xml").write_text(spec.to_xml())
    path = _write(tmp_path, [('"package:flapper.xml"', '"robot.xml"')], {})
    with pytest.raises(ConfigError, match=re.escape(f"{path}: {field} needs exactly one actuator (a <position> servo) "
                                                    "on it, the model has 0")):
        flapper.load_robot_description(path)


def _link(name: str, mass: float, inertia: tuple, at: str = "0 0 0") -> str:
    ixx, iyy, izz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{at}"/><mass value="{mass}"/><inertia ixx="{ixx}" '
            f'iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def _joint(name: str, parent: str, child: str, axis: str, at: str = "0 0 0") -> str:
    return (f'<joint name="{name}" type="continuous"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{at}"/><axis xyz="{axis}"/></joint>')


def test_a_urdf_compiles_and_is_asked_for_its_servos(tmp_path):
    """The seed robot's links and joints as a URDF: MuJoCo reads it and its
    names are found, but a URDF cannot declare the position servos, which
    the error asks for by joint."""
    small, wing = (1e-10,) * 3, (6.625e-8, 5e-9, 6.125e-8)
    parts = [_link("base", 0.02868, (4e-6, 4e-6, 2e-6)), _link("tilt", 1e-5, small),
             _link("plate", 1e-3, (4e-8, 4e-8, 6e-8), "0 0 0.005"),
             _joint("pitch_joint", "base", "tilt", "1 0 0", "0 0 0.002"), _joint("roll_joint", "tilt", "plate", "0 -1 0")]
    for side, s in (("left", 1), ("right", -1)):
        parts += [_link(f"{side}_arm", 1e-5, small), _link(f"{side}_wing", 1.5e-4, wing, f"0 {s * 0.035} -0.01"),
                  _joint(f"{side}_stroke", "plate", f"{side}_arm", f"0 0 {s}", f"0 {s * 0.01395} 0.0189913"),
                  _joint(f"{side}_pitch", f"{side}_arm", f"{side}_wing", "0 1 0")]
    # fusestatic off: MuJoCo would otherwise merge the welded base into the world
    (tmp_path / "robot.urdf").write_text('<robot name="flapper"><mujoco><compiler fusestatic="false"/></mujoco>'
                                         + "".join(parts) + "</robot>")
    path = _write(tmp_path, [('"package:flapper.xml"', '"robot.urdf"')], {})
    with pytest.raises(ConfigError, match=re.escape(f"{path}: wings.left.stroke: joint 'left_stroke' needs exactly one "
                                                    "actuator (a <position> servo) on it, the model has 0")):
        flapper.load_robot_description(path)
