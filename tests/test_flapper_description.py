"""The flapper description file builds the robot it describes: the seed
robot's ``examples/flappers/seed_robot/robot.toml`` gives today's robot to
round-off (the same compiled model, indices, parameters, sweep and free
flight), a copy of the model with other joint names gives the same robot
through the description's names, and a wing placed unlike the wing file
says is refused (test_flapper_description_errors.py holds the bad files)."""

from __future__ import annotations

import json
import pathlib
import shutil

import equinox as eqx
import jax
import mujoco
import numpy as np
import pytest

from flapjax.sim import flapper
from flapjax.sim.flapper import description_model
from flapjax.validation import ConfigError

REPO = pathlib.Path(__file__).resolve().parent.parent
SEED = REPO / "examples" / "flappers" / "seed_robot" / "robot.toml"
RTOL = 1e-9


def _model_arrays(m: mujoco.MjModel) -> dict[str, np.ndarray]:
    """Every numeric array of a compiled model (names left out)."""
    out = {}
    for key in dir(m):
        value = getattr(m, key, None)
        if not key.startswith("_") and isinstance(value, np.ndarray) and value.dtype != np.uint8 and "name" not in key:
            out[key] = value
    return out


def _assert_same_model(a: mujoco.MjModel, b: mujoco.MjModel, rtol: float = 0.0) -> None:
    xa, xb = _model_arrays(a), _model_arrays(b)
    assert xa.keys() == xb.keys()
    for key in xa:
        np.testing.assert_allclose(xb[key], xa[key], rtol=rtol, atol=0.0, err_msg=key)


@pytest.fixture(scope="module")
def seed():
    return flapper.load_robot_description(SEED)


@pytest.mark.parametrize("root", flapper.ROOTS)
def test_the_seed_description_compiles_todays_model(seed, root):
    _assert_same_model(flapper.build(root), description_model.build(seed, root))


@pytest.mark.parametrize("wing_mass", [1.2e-4, 2.2e-4])
def test_a_wing_mass_gives_todays_reweighted_model(seed, wing_mass):
    """The description scales the wing's inertia with its mass; the seed's
    code sets a 70 x 20 mm plate's: the same numbers for the seed's wing."""
    _assert_same_model(flapper.build("free", wing_mass=wing_mass),
                       description_model.build(seed, "free", wing_mass=wing_mass), rtol=1e-12)
    with pytest.raises(AssertionError):  # the comparison sees another mass
        _assert_same_model(flapper.build("free"), description_model.build(seed, "free", wing_mass=wing_mass), rtol=1e-9)


def test_a_wing_mass_keeps_the_robot_a_physical_body(seed):
    """Scaled inertia of a flat wing stays inside the triangle inequality
    MuJoCo enforces (1.6e-4 kg rounds the other way), and the robot keeps its 30 g."""
    m = description_model.build(seed, "fixed", wing_mass=1.6e-4)
    wing = m.body("left_wing")
    assert wing.mass[0] == 1.6e-4 and wing.inertia[0] <= wing.inertia[1] + wing.inertia[2]
    np.testing.assert_allclose(m.body_subtreemass[m.body("base").id], 0.03, rtol=1e-12)


def _statics(robot) -> dict:
    return {k: getattr(robot, k) for k in robot.__dataclass_fields__ if k not in ("model", "wing", "rigid_body")}


@pytest.mark.parametrize("root, model", [("fixed", "wing"), ("free", "wing"), ("lumped", "averaged")])
def test_the_seed_description_gives_todays_robot_and_parameters(seed, root, model):
    today = flapper.make_robot(root, model)
    described = flapper.make_robot(root, model, description=SEED)
    assert _statics(described) == _statics(today)
    chex_equal(described.wing, today.wing)
    chex_equal(flapper.default_params(described, description=seed, frequency=35.0, plate=(0.1, -0.05)),
               flapper.default_params(today, frequency=35.0, plate=(0.1, -0.05)))


def chex_equal(a, b) -> None:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b) and len(la) > 0
    for x, y in zip(la, lb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_seed_description_reproduces_the_fixed_base_sweep(seed):
    """The regression sweep (tests/golden/regression.json) from the
    description: equal to today's robot in the same run to 1e-9, and to
    the pinned numbers to the regression test's tolerance."""
    kw = dict(duration=0.12, discard=0.05, batch_size=3)
    robot = flapper.make_robot("fixed", "wing", description=seed)
    got = flapper.sweep([20.0, 30.0, 40.0], robot=robot, params=flapper.default_params(robot, description=seed), **kw)
    today = flapper.sweep([20.0, 30.0, 40.0], **kw)
    for key in ("force", "moment", "lift_total"):
        np.testing.assert_allclose(np.asarray(getattr(got, key)), np.asarray(getattr(today, key)), rtol=RTOL,
                                   atol=RTOL * float(np.max(np.abs(np.asarray(today.force)))), err_msg=key)
    golden = json.loads((REPO / "tests" / "golden" / "regression.json").read_text())["sweep"]
    np.testing.assert_allclose(np.asarray(got.force), np.asarray(golden["force"]), rtol=1e-6, atol=1e-12)


def _free_flight(robot, params, n_steps: int = 40) -> np.ndarray:
    state = flapper.init_state(robot, params, periodic=False)
    return np.asarray(_run(robot, params, state, n_steps))


@eqx.filter_jit
def _run(robot, params, state, n_steps):
    return flapper.rollout(robot, params, state, n_steps)[0].data.qpos


def test_the_seed_description_reproduces_free_per_wing_steps(seed):
    """40 free per-wing steps (4 ms at 35 Hz, plate tilted) match today's robot."""
    def qpos(**kw):
        robot = flapper.make_robot("free", "wing", backend="rigid", **kw)
        return _free_flight(robot, flapper.default_params(robot, frequency=35.0, plate=(0.1, -0.05), **kw))

    today, described = qpos(), qpos(description=seed)
    stroke = np.array(flapper.make_robot("free", "wing").stroke_q)
    assert np.min(np.abs(today[stroke])) > 0.5 and np.linalg.norm(today[:3] - [0.0, 0.0, 0.5]) > 1e-5  # it flew
    np.testing.assert_allclose(described, today, rtol=RTOL, atol=RTOL)


def _renamed_copy(tmp_path: pathlib.Path) -> pathlib.Path:
    """The seed MJCF with its joints, servos and base renamed, and a
    description of it."""
    spec = mujoco.MjSpec.from_file(str(flapper.MJCF_PATH))
    renames = {"left_stroke": "psi_l", "right_stroke": "psi_r", "left_pitch": "theta_l", "right_pitch": "theta_r",
               "pitch_joint": "tilt_a", "roll_joint": "tilt_b"}
    for old, new in renames.items():
        spec.joint(old).name = new
    for act, name in zip(spec.actuators, ("servo_1", "servo_2", "servo_3", "servo_4")):
        act.name, act.target = name, renames[act.target]
    spec.body("base").name = "hull"
    (tmp_path / "renamed.xml").write_text(spec.to_xml())
    shutil.copy(SEED.parent / "wing.json", tmp_path / "wing.json")
    text = SEED.read_text().replace('"package:flapper.xml"', '"renamed.xml"').replace('base = "base"', 'base = "hull"')
    for old, new in renames.items():
        assert f'"{old}"' in text
        text = text.replace(f'"{old}"', f'"{new}"')
    (tmp_path / "robot.toml").write_text(text)
    return tmp_path / "robot.toml"


def test_a_model_with_other_names_builds_through_the_description(tmp_path):
    """Names come from the description, servos from their joints: the renamed
    copy gives the seed robot's indices and model."""
    path = _renamed_copy(tmp_path)
    renamed = flapper.make_robot("free", "wing", description=path)
    today = flapper.make_robot("free", "wing")
    assert _statics(renamed) == _statics(today)
    chex_equal(renamed.model.body_mass, today.model.body_mass)
    with pytest.raises(ConfigError, match="no joint named 'left_stroke'"):  # the default names are not in the copy
        flapper.robot_from_mjmodel(mujoco.MjModel.from_xml_path(str(tmp_path / "renamed.xml")))


def test_a_description_that_moves_the_wing_root_is_refused(tmp_path):
    """The wing file's d0 and ds must be where the model's stroke joints are."""
    shutil.copy(SEED, tmp_path / "robot.toml")
    wing = json.loads((SEED.parent / "wing.json").read_text())
    wing["stroke_plane_offset"] = 0.0209913  # 2 mm above the model's
    (tmp_path / "wing.json").write_text(json.dumps(wing))
    with pytest.raises(ConfigError, match=r"robot.toml: wings.left.stroke: joint 'left_stroke' sits"):
        flapper.load_robot_description(tmp_path / "robot.toml")


def test_the_guide_runs_and_shows_the_seed_numbers(monkeypatch):
    """docs/flapper_robots.md: its Python blocks run in order from the
    repository root, and its sweep is the pinned regression sweep."""
    import re

    monkeypatch.chdir(REPO)
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / "flapper_robots.md").read_text(), re.S)
    assert len(blocks) == 4
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/flapper_robots.md", "exec"), namespace)
    golden = json.loads((REPO / "tests" / "golden" / "regression.json").read_text())["sweep"]
    np.testing.assert_allclose(np.asarray(namespace["res"].force), np.asarray(golden["force"]), rtol=1e-6, atol=1e-12)
    assert np.linalg.norm(np.asarray(namespace["final"].data.qpos[:3]) - [0.0, 0.0, 0.5]) > 1e-5  # it flew
    steer = np.asarray(namespace["steer"].moment)  # the second robot pitches (+y) and rolls (+x) as the guide says
    assert steer[1, 1] > 100 * abs(steer[0, 1]) and steer[2, 0] > 100 * abs(steer[0, 0])


def test_the_hinge_table_replaces_the_models_spring_and_damper(tmp_path):
    """hinge.stiffness and hinge.damping reach the compiled joints and the
    parameters; without them both keep the model's."""
    shutil.copy(SEED.parent / "wing.json", tmp_path / "wing.json")
    text = SEED.read_text().replace("stop_width = 0.0088227", "stop_width = 0.0088227\nstiffness = 4e-4\ndamping = 6e-6")
    (tmp_path / "robot.toml").write_text(text)
    desc = flapper.load_robot_description(tmp_path / "robot.toml")
    m = description_model.build(desc, "free")
    for joint in ("left_pitch", "right_pitch"):
        assert np.ravel(m.joint(joint).stiffness)[0] == 4e-4 and m.dof_damping[m.joint(joint).dofadr[0]] == 6e-6
    hinge = flapper.default_params(description=desc).hinge
    assert (float(hinge.stiffness), float(hinge.damping)) == (4e-4, 6e-6)
    seed_hinge = flapper.default_params().hinge
    assert float(seed_hinge.stiffness) == 2.922e-4 and float(seed_hinge.damping) == 4.8e-6
