"""A ``"stroke_plane"`` control channel: a servo-held joint that carries
both wings' stroke hinges. The seed robot's plates are such joints, so its
description with ``kind = "stroke_plane"`` builds the robot it always was;
a joint that does not carry both strokes is refused by name."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from flapjax.sim import flapper
from flapjax.validation import ConfigError

ROOT = pathlib.Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "flappers" / "seed_robot"
MJCF = ROOT / "flapjax" / "sim" / "assets" / "flapper.xml"

# A tail flap on the base, beside the plate: servo-held, but it moves no wing.
TAIL_BODY = ('<body name="tail" pos="0 0 -0.03"><joint name="tail_joint" type="hinge" axis="0 1 0" '
             'damping="2e-3"/><inertial pos="0 0 0" mass="1e-4" diaginertia="1e-8 1e-8 1e-8"/></body>\n'
             '      <body name="plate" pos="0 0 0.002">')
TAIL_SERVO = '<actuator>\n    <position name="tail_servo" joint="tail_joint" kp="2"/>'


def _seed_toml(tmp_path: pathlib.Path, *edits: tuple[str, str]) -> pathlib.Path:
    text = (SEED / "robot.toml").read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (tmp_path / "wing.json").write_text((SEED / "wing.json").read_text())
    (tmp_path / "robot.toml").write_text(text)
    return tmp_path / "robot.toml"


def test_the_seed_plates_as_stroke_plane_channels_build_the_same_robot(tmp_path):
    plane = ('kind = "stroke_plane"\njoint = "pitch_joint"', 'kind = "stroke_plane"\njoint = "roll_joint"')
    path = _seed_toml(tmp_path, ('kind = "joint"\njoint = "pitch_joint"', plane[0]),
                      ('kind = "joint"\njoint = "roll_joint"', plane[1]))
    desc = flapper.load_robot_description(path)
    assert [c.kind for c in desc.channels] == ["stroke_plane", "stroke_plane"]
    seed = flapper.load_robot_description(SEED / "robot.toml")
    assert desc.names == seed.names  # the bridge drives them as the joint channels they are
    a = flapper.make_robot("fixed", "wing", description=desc, backend="rigid")
    b = flapper.make_robot("fixed", "wing", description=seed, backend="rigid")
    assert a.plate_act == b.plate_act and a.plate_q == b.plate_q and a.channel_kinds == b.channel_kinds
    np.testing.assert_array_equal(np.asarray(a.model.body_mass), np.asarray(b.model.body_mass))


def test_a_stroke_plane_joint_that_moves_no_wing_is_refused(tmp_path):
    xml = MJCF.read_text()
    assert xml.count('<body name="plate" pos="0 0 0.002">') == 1 and xml.count("<actuator>") == 1
    (tmp_path / "tailed.xml").write_text(
        xml.replace('<body name="plate" pos="0 0 0.002">', TAIL_BODY).replace("<actuator>", TAIL_SERVO))
    edits = [('model = "package:flapper.xml"', 'model = "tailed.xml"'),
             ('kind = "joint"\njoint = "roll_joint"', 'kind = "stroke_plane"\njoint = "tail_joint"')]
    as_joint = _seed_toml(tmp_path, edits[0], ('kind = "joint"\njoint = "roll_joint"',
                                               'kind = "joint"\njoint = "tail_joint"'))
    flapper.load_robot_description(as_joint)  # a plain joint channel may move anything
    path = _seed_toml(tmp_path, *edits)
    message = ("channels[1] 'roll'.joint: a 'stroke_plane' joint must carry both stroke hinges; 'tail_joint' does "
               "not move wings.left.stroke 'left_stroke'")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: {re.escape(message)}"):
        flapper.load_robot_description(path)
