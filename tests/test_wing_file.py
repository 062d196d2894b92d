"""The FlapSim-style wing file (docs/data_formats.md, Wing file): the seed
robot's file is the seed's wing to the last bit, a write reads back to the
same values, and every kind of bad file is refused with the field named."""

import json
import pathlib

import jax
import numpy as np
import pytest

from flapjax import aero
from flapjax.aero import wing_file
from flapjax.sim import flapper as fl
from flapjax.validation import ConfigError

SEED_FILE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "flappers" / "seed_robot" / "wing.json"


def assert_leaves_close(a, b, tol):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(la, lb):
        assert np.asarray(x).dtype == np.float64
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=0.0, atol=tol)


def test_seed_robot_file_is_the_seed_wing():
    wing = aero.Wing.from_flapsim_json(SEED_FILE)
    assert_leaves_close(wing, aero.Wing.flapsim(), 1e-12)
    # the options block is the robot's own: the calibrated lift gain, the seed's 5 N clip
    _, options = aero.read_wing_file(SEED_FILE)
    assert_leaves_close(options, fl.default_params().aero, 1e-12)


def test_write_reads_back_a_tapered_wing_and_its_options(tmp_path):
    geometry = aero.WingGeometry.from_planform([[0, 0], [0.02, 0.012], [0.06, 0.008], [0.07, 0.0], [0.03, -0.006]])
    wing = aero.Wing(geometry=geometry, rho=1.18, shoulder_half_width=0.012, stroke_plane_offset=-0.004)
    options = aero.AeroOptions(lift_scale=0.8, force_limit=2.0, rotational_damping=3.0)
    wing.to_flapsim_json(tmp_path / "w.json", options=options)
    back, back_options = aero.read_wing_file(tmp_path / "w.json")
    assert_leaves_close(back, wing, 0.0)
    assert_leaves_close(back_options, options, 0.0)
    wing.to_flapsim_json(tmp_path / "bare.json")
    assert aero.read_wing_file(tmp_path / "bare.json")[1] is None


def _seed_dict():
    return json.loads(SEED_FILE.read_text())


def _with(**changes):
    d = _seed_dict()
    for k, v in changes.items():
        if v is _DROP:
            del d[k]
        else:
            d[k] = v
    return d


_DROP = object()

BAD = [
    ("missing key", _with(z_cp1=_DROP), "z_cp1: missing key"),
    ("unknown key", _with(wing_span=0.07), "wing_span: unknown key"),
    ("unknown option", _with(options={"stroke_plane_angle": 0.1}), r"options\.stroke_plane_angle: unknown key"),
    ("string", _with(mean_chord="0.02"), "mean_chord: must be a number"),
    ("boolean", _with(r11=True), "r11: must be a number"),
    ("boolean option", _with(options={"force_limit": False}), r"options\.force_limit: must be a number"),
    ("null", _with(air_density=None), "air_density: must be a number"),
    ("zero length", _with(wing_length=0.0), "wing_length: must be > 0"),
    ("negative chord", _with(mean_chord=-0.02), "mean_chord: must be > 0"),
    ("negative shoulder", _with(shoulder_half_width=-0.001), "shoulder_half_width: must be >= 0"),
    ("non-positive moment", _with(z_cp2=0.0), "z_cp2: must be > 0"),
    ("r00 not one", _with(r00=0.9), "r00: must be 1"),
    ("moments grow", _with(r22=0.55), r"r22: inconsistent .*\(r22 <= r11\)"),
    ("Cauchy-Schwarz r11 r22", _with(r22=0.24, r33=0.2), r"r22: inconsistent .* r11\^2 <= r00 r22"),
    ("Cauchy-Schwarz r22 r33", _with(r33=0.2), r"r33: inconsistent .* r22\^2 <= r11 r33"),
    ("Cauchy-Schwarz z_cp", _with(z_cp2=0.2), r"z_cp2: inconsistent .* z_cp1\^2 <= z_cp0 z_cp2"),
    ("across families", _with(z_cp0=0.9), r"z_cp0: inconsistent .* r00\^2 <= z_cp0 / 1"),
    ("z_rd below z_cp0^2", _with(z_rd=0.9), r"z_rd: inconsistent .* z_cp0\^2 <= z_rd"),
    ("bad option value", _with(options={"force_limit": -1.0}), "options: AeroOptions.force_limit"),
    ("version", _with(version=2), "version: must be 1"),
    ("not an object", [1.0, 2.0], "must be a JSON object"),
]


@pytest.mark.parametrize("what, content, message", BAD, ids=[b[0] for b in BAD])
def test_bad_file_is_refused_naming_the_field(tmp_path, what, content, message):
    path = tmp_path / "wing.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=message) as info:
        aero.Wing.from_flapsim_json(path)
    assert str(path) in str(info.value)


def test_not_json_and_repeated_key(tmp_path):
    path = tmp_path / "wing.json"
    path.write_text('{"version": 1, "version": 1}')
    with pytest.raises(ConfigError, match="'version' is given twice"):
        aero.Wing.from_flapsim_json(path)
    path.write_text('{"version": 1, "wing_length": NaN}')
    with pytest.raises(ConfigError, match="not a JSON number"):
        aero.Wing.from_flapsim_json(path)


def test_integrals_of_real_planforms_pass_the_consistency_checks():
    """The checks refuse nothing a planform can have: tapered, triangular
    (tip at the root chord's end) and root-heavy outlines."""
    for poly in ([[0, 0], [0.02, 0.012], [0.06, 0.008], [0.07, 0.0], [0.03, -0.006]],
                 [[0, 0], [0, 0.02], [0.05, 0.0]],
                 [[0, -0.01], [0, 0.01], [0.04, 0.001], [0.04, -0.001]]):
        g = aero.WingGeometry.from_planform(poly)
        r = np.asarray(g.r)
        # the tightest bound the check applies holds for a real outline ...
        assert (r[1] - r[2]) ** 2 <= (r[0] - r[1]) * (r[2] - r[3])
        # ... and the check itself returns without refusing it
        assert wing_file.check_integrals(r, np.asarray(g.z_cp), float(g.z_rd)) is None
