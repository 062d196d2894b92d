"""Robot profiles: presets, validation naming the field, TOML/JSON round trip."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import rotor
from flapjax.validation import ConfigError

PRESETS = ["quad_x", "hexa", "hexa_tilted"]


@pytest.mark.parametrize("name", PRESETS)
def test_presets_are_physical(name):
    p = rotor.profiles.preset(name)
    n = p.n_rotors
    assert p.positions.shape == (n, 3) and p.axes.shape == (n, 3)
    np.testing.assert_allclose(np.linalg.norm(p.axes, axis=1), 1.0, atol=1e-12)
    # Balanced spins: zero net reaction torque at equal thrust.
    assert float(jnp.sum(p.spins)) == 0.0
    # Hover needs less than the summed vertical thrust capacity, with margin.
    vertical_capacity = float(jnp.sum(p.thrust_max * p.axes[:, 2]))
    assert vertical_capacity > 1.5 * float(p.mass) * 9.81
    # Rotor disks do not overlap each other.
    d = np.linalg.norm(p.positions[:, None] - p.positions[None], axis=-1) + np.eye(n) * 10
    assert d.min() > 2 * float(p.radius.max())
    # The end-effector reaches beyond the rotor disks (needed to touch a wall).
    reach = float(np.max(np.linalg.norm(p.positions[:, :2], axis=1) + p.radius))
    assert float(p.ee_position[0]) > reach


def test_actuation_class():
    assert not rotor.profiles.quad_x().fully_actuated
    assert not rotor.profiles.hexa().fully_actuated
    assert rotor.profiles.hexa_tilted().fully_actuated
    # Zero tilt collapses the tilted hexarotor to the coplanar one.
    assert not rotor.profiles.hexa_tilted(tilt=0.0).fully_actuated


@pytest.mark.parametrize(
    "override, field",
    [
        (dict(thrust_max=np.array([8.0, 8.0, 0.05, 8.0])), "thrust_max[2]"),
        (dict(axes=np.array([[0, 0, 1.0], [0, 0, 1], [0, 0.1, 1], [0, 0, 1]])), "axes[2]"),
        (dict(spins=np.array([1.0, -1.0, 0.5, -1.0])), "spins[2]"),
        (dict(radius=np.array([0.06, 0.06, 0.06])), "radius"),
        (dict(radius=np.array([0.06, 0.06, -0.06, 0.06])), "radius"),
        (dict(mass=0.0), "mass"),
        (dict(mass=float("nan")), "mass"),
        (dict(thrust_min=np.array([-1.0, 0.1, 0.1, 0.1])), "thrust_min"),
        (dict(time_constant=np.zeros(4)), "time_constant"),
        (dict(inertia=np.array([0.01, 0.01, 0.05])), "inertia"),
    ],
)
def test_validation_names_field(override, field):
    with pytest.raises(ConfigError) as err:
        rotor.profiles.quad_x(**override)
    assert str(err.value).startswith(field), str(err.value)


def test_json_round_trip(tmp_path):
    p = rotor.profiles.hexa_tilted()
    path = tmp_path / "tilted.json"
    rotor.profile_files.save_profile_json(p, path)
    q = rotor.load_profile(path)
    for field in ("positions", "axes", "spins", "thrust_min", "thrust_max", "torque_coeff", "radius",
                  "time_constant", "rate_limit", "mass", "inertia", "ee_position"):
        np.testing.assert_array_equal(getattr(p, field), getattr(q, field))
    assert q.fully_actuated


TOML = """
name = "tri"
mass = 1.0
inertia = [0.01, 0.01, 0.015]

[defaults]
axis = [0.0, 0.0, 1.0]
thrust_min = 0.0
thrust_max = 6.0
torque_coeff = 0.01
radius = 0.05
time_constant = 0.03
rate_limit = 25.0

[[rotors]]
position = [0.2, 0.0, 0.0]
spin = 1

[[rotors]]
position = [-0.1, 0.17, 0.0]
spin = -1

[[rotors]]
position = [-0.1, -0.17, 0.0]
spin = 1
{extra}
"""


def test_toml_loader(tmp_path):
    path = tmp_path / "tri.toml"
    path.write_text(TOML.format(extra=""))
    p = rotor.load_profile(path)
    assert p.n_rotors == 3 and p.name == "tri"
    np.testing.assert_allclose(p.positions[1], [-0.1, 0.17, 0.0])
    np.testing.assert_allclose(p.thrust_max, 6.0)


@pytest.mark.parametrize(
    "extra, field",
    [
        ("[[rotors]]\nposition = [0.0, 0.0]\nspin = 1\n", "tri.toml.rotors[3].position"),
        ("[[rotors]]\nposition = [0.0, 0.0, 0.0]\nspin = 1\nthrust_max = -1.0\n", "tri.toml.rotors[3].thrust_max"),
        ("[[rotors]]\nposition = [0.0, 0.0, 0.0]\nspin = 1\naxis = [1.0, 1.0, 0.0]\n", "tri.toml.rotors[3].axis"),
        ("[[rotors]]\nposition = [0.0, 0.0, 0.0]\n", "tri.toml.rotors[3].spin"),
    ],
)
def test_toml_errors_name_field(tmp_path, extra, field):
    path = tmp_path / "tri.toml"
    path.write_text(TOML.format(extra=extra))
    with pytest.raises(ConfigError) as err:
        rotor.load_profile(path)
    assert str(err.value).startswith(field), str(err.value)


def test_json_missing_mass(tmp_path):
    cfg = rotor.profile_to_dict(rotor.profiles.quad_x())
    del cfg["mass"]
    path = tmp_path / "q.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match=r"q.json.mass: missing"):
        rotor.load_profile(path)
