"""Every public constructor and loader rejects bad input with a message that
names the field (and, where there is one, the allowed range), before any
world is simulated. One row per case."""


import numpy as np
import pytest

from flapjax import ConfigError, aero, noise, rotor
from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.sim import rigid
from flapjax.scene import Scene

QUAD = rotor.profiles.quad_x()


def _profile(**changes):
    d = rotor.profile_to_dict(QUAD)
    d.update(changes)
    return rotor.profile_from_dict(d)


def _rotor(i, **changes):
    d = rotor.profile_to_dict(QUAD)
    d["rotors"][i] = {**d["rotors"][i], **changes}
    return rotor.profile_from_dict(d)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


RECT = [[0, 0], [0.07, 0], [0.07, 0.02], [0, 0.02]]


def _multirotor(**kwargs):
    from flapjax.sim import multirotor

    return multirotor.MultirotorWorld(QUAD, **kwargs)


def _flapper(root="fixed", **kwargs):
    from flapjax.sim import flapper

    return flapper.make_robot(root, "wing", **kwargs)

def _multirotor_named(name):
    from flapjax.sim import multirotor

    return multirotor.MultirotorWorld(name, backend="rigid")


def _rigid_world():
    return _multirotor_named("quad_x")


def _key():
    import jax

    return jax.random.key(0)


def _reference_hover(position):
    from flapjax.control.wrench import Reference

    return Reference.hover(position)


def _rollout(n_steps):
    world = _rigid_world()
    params = world.default_params()
    state = world.reset(params, _key(), np.array([0.0, 0.0, 0.5]))
    return world.rollout(params, state, _reference_hover(np.array([0.0, 0.0, 0.5])), n_steps)


def _hover_position(**clearances):
    from flapjax import scene

    return scene.hover_position(Scene(), QUAD, **{"ground_clearance": 0.1, "wall_clearance": 0.15, **clearances})


def _flapper_default_params(**kwargs):
    from flapjax.sim import flapper

    return flapper.default_params(**kwargs)


def _lumped(**kwargs):
    from flapjax.sim import flapper

    return flapper.make_robot("lumped", "averaged", backend="rigid", **kwargs)


def _lumped_start(**kwargs):
    from flapjax.sim import flapper

    robot = _lumped()
    return flapper.init_state(robot, flapper.default_params(robot), **kwargs)


def _free_periodic(**kwargs):
    from flapjax.sim import flapper

    robot = flapper.make_robot("free", "wing", backend="rigid")
    return flapper.init_state(robot, flapper.default_params(robot), periodic=True, **kwargs)


def _lumped_hover(n_steps=100, **kwargs):
    from flapjax.sim import flapper

    robot = _lumped()
    params = flapper.default_params(robot)
    return flapper.hover_rollout(robot, params, flapper.init_state(robot, params), n_steps, **kwargs)


def _hover_study(n_worlds=2, **kwargs):
    import jax

    from flapjax.sim import flapper

    return flapper.hover_study(jax.random.key(0), n_worlds, **kwargs)


def _averaged_wrench(plate):
    from flapjax.aero.cycle_averaged import cycle_averaged_wrench

    return cycle_averaged_wrench(CycleAveragedParams(), frequency=np.asarray(40.0), plate=np.asarray(plate),
                                 rot_world_body=np.eye(3), v_world=np.zeros(3), w_body=np.zeros(3))


CASES = [
    # --- wing geometry and planforms
    ("span negative", lambda t: aero.WingGeometry.rectangular(-0.07, 0.02), r"span: must be > 0, got -0\.07"),
    ("chord zero", lambda t: aero.WingGeometry.rectangular(0.07, 0.0), r"chord: must be > 0, got 0"),
    ("span NaN", lambda t: aero.WingGeometry.rectangular(np.nan, 0.02), r"span: must be finite"),
    ("span not scalar", lambda t: aero.WingGeometry.rectangular([0.07, 0.08], 0.02), r"span: expected shape \(\)"),
    ("chord string", lambda t: aero.WingGeometry.rectangular(0.07, "wide"), r"chord: expected numbers"),
    ("planform bow tie", lambda t: aero.WingGeometry.from_planform([[0, 0], [0.07, 0.02], [0.07, 0], [0, 0.02]]),
     r"polygon: is not simple"),
    ("planform collinear", lambda t: aero.WingGeometry.from_planform([[0, 0], [0.03, 0], [0.07, 0]]),
     r"polygon: is degenerate"),
    ("planform two vertices", lambda t: aero.WingGeometry.from_planform([[0, 0], [0.07, 0]]), r"polygon: needs at least 3"),
    ("planform wrong shape", lambda t: aero.WingGeometry.from_planform(np.zeros((4, 3))), r"polygon: expected shape \(N, 2\)"),
    ("planform inf", lambda t: aero.WingGeometry.from_planform([[0, 0], [np.inf, 0], [0, 0.02]]), r"polygon: must be finite"),
    ("planform behind root", lambda t: aero.WingGeometry.from_planform([[-0.01, 0], [0.07, 0], [0, 0.02]]),
     r"polygon: spanwise coordinates r must be >= 0"),
    ("air density zero", lambda t: aero.Wing(aero.WingGeometry.rectangular(0.07, 0.02), 0.0, 0.01, 0.02),
     r"Wing\.rho: must be > 0"),
    ("force limit negative", lambda t: aero.AeroOptions(force_limit=-5.0), r"AeroOptions\.force_limit: must be > 0"),
    ("lift scale zero", lambda t: aero.AeroOptions(lift_scale=0.0), r"AeroOptions\.lift_scale: must be > 0"),
    ("damping limit NaN", lambda t: aero.AeroOptions(damping_limit=np.nan), r"AeroOptions\.damping_limit: must be finite"),
    ("coefficients wrong type", lambda t: aero.AeroOptions(coefficients="whitney"), r"AeroOptions\.coefficients"),
    ("side zero", lambda t: aero.wing_loads(aero.Wing.flapsim(), aero.WingKinematics(0, 1, 0, 0),
                                            v_body=np.zeros(3), w_body=np.zeros(3), side=0), r"side: must be \+1"),
    ("wrench rotation shape", lambda t: aero.wing_wrench(
        aero.wing_loads(aero.Wing.flapsim(), aero.WingKinematics(0, 1, 0, 0), v_body=np.zeros(3), w_body=np.zeros(3),
                        side=1), side=1, rot_world_wing=np.eye(2), pos_world_origin=np.zeros(3),
        pos_world_com=np.zeros(3)), r"rot_world_wing: expected shape \(3, 3\)"),
    ("velocity wrong length", lambda t: aero.wing_loads(aero.Wing.flapsim(), aero.WingKinematics(0, 1, 0, 0),
                                                       v_body=np.zeros(2), w_body=np.zeros(3), side=1),
     r"v_body: expected shape \(3,\), got shape \(2,\)"),
    ("rates as a matrix", lambda t: aero.wing_loads(aero.Wing.flapsim(), aero.WingKinematics(0, 1, 0, 0),
                                                   v_body=np.zeros(3), w_body=np.zeros((3, 3)), side=1),
     r"w_body: expected shape \(3,\), got shape \(3, 3\)"),
    ("infinite body rate", lambda t: aero.wing_loads(aero.Wing.flapsim(), aero.WingKinematics(0, 1, 0, 0),
                                                    v_body=np.zeros(3), w_body=[np.inf, 0.0, 0.0], side=1),
     r"w_body: must be finite"),
    ("batched kinematics without vmap", lambda t: aero.wing_loads(
        aero.Wing.flapsim(), aero.WingKinematics(np.zeros(4), 1, 0, 0), v_body=np.zeros(3), w_body=np.zeros(3), side=1),
     r"kin\.stroke: expected a scalar per wing, got shape \(4,\) \(batch with jax\.vmap\)"),
    # --- cycle-averaged model
    ("k_f negative", lambda t: CycleAveragedParams(lift_coefficient=-1e-4), r"lift_coefficient: must be > 0"),
    ("averaged mass zero", lambda t: CycleAveragedParams(mass=0.0), r"mass: must be > 0"),
    ("D_w wrong shape", lambda t: CycleAveragedParams(rate_damping=(1e-4, 1e-4)), r"rate_damping: expected shape \(3,\)"),
    ("averaged unknown field", lambda t: CycleAveragedParams.from_dict({"k_lift": 1.0}), r"unknown field"),
    ("averaged JSON truncated", lambda t: CycleAveragedParams.from_json(_write(t, "avg.json", '{"mass": 0.0')),
     r"avg\.json"),
    # --- rotor profiles
    ("unknown robot", lambda t: rotor.profiles.preset("octo_plus"), r"profile: must be one of \['hexa', 'hexa_tilted', 'quad_x'\]"),
    ("mass negative", lambda t: _profile(mass=-1.0), r"mass: must be > 0, got -1"),
    ("inertia zero", lambda t: _profile(inertia=[0.01, 0.0, 0.02]), r"inertia: must be > 0"),
    ("inertia impossible", lambda t: _profile(inertia=[0.01, 0.01, 0.05]), r"inertia: principal moments must satisfy"),
    ("thrust limits out of order", lambda t: _rotor(1, thrust_min=5.0, thrust_max=2.0),
     r"rotors\[1\]\.thrust_max: must be > thrust_min = 5 N \(limits in order\), got 2 N"),
    ("non-unit axis", lambda t: _rotor(2, axis=[0.0, 0.0, 2.0]), r"rotors\[2\]\.axis: must be a unit vector"),
    ("spin not sign", lambda t: _rotor(0, spin=0.5), r"rotors\[0\]\.spin: must be \+1 or -1, got 0\.5"),
    ("radius zero", lambda t: _rotor(3, radius=0.0), r"rotors\[3\]\.radius: must be > 0, got 0"),
    ("torque coefficient negative", lambda t: _rotor(2, torque_coeff=-0.016),
     r"rotors\[2\]\.torque_coeff: must be >= 0, got -0\.016"),
    ("thrust minimum negative", lambda t: _rotor(1, thrust_min=-1.0), r"rotors\[1\]\.thrust_min: must be >= 0, got -1"),
    ("time constant negative", lambda t: _rotor(0, time_constant=-0.02), r"rotors\[0\]\.time_constant: must be > 0"),
    ("position wrong length", lambda t: _rotor(0, position=[0.1, 0.1]), r"rotors\[0\]\.position: expected shape \(3,\)"),
    ("rotor missing key", lambda t: rotor.profile_from_dict({**rotor.profile_to_dict(QUAD),
                                                              "rotors": [{"position": [0, 0, 0]}]}),
     r"rotors\[0\]\.axis: missing"),
    ("profile unknown key", lambda t: _profile(wingspan=1.0), r"unknown keys \['wingspan'\]"),
    ("profile NaN mass", lambda t: _profile(mass=float("nan")), r"mass: must be finite"),
    ("profile mismatched lengths", lambda t: rotor.RotorProfile(
        positions=np.zeros((4, 3)), axes=np.tile([0, 0, 1.0], (4, 1)), spins=[1, -1, 1], thrust_min=np.zeros(4),
        thrust_max=np.ones(4), torque_coeff=np.zeros(4), radius=np.ones(4), time_constant=np.ones(4),
        rate_limit=np.ones(4), mass=1.0, inertia=[0.01, 0.01, 0.02]), r"spins: expected shape \(4,\)"),
    ("profile file wrong extension", lambda t: rotor.load_profile(_write(t, "quad.yaml", "mass: 1")),
     r"must end in \.toml or \.json"),
    ("profile JSON malformed", lambda t: rotor.load_profile(_write(t, "quad.json", '{"mass": 1.0, "rotors": [')),
     r"quad\.json: cannot parse"),
    ("profile TOML truncated", lambda t: rotor.load_profile(_write(t, "quad.toml", 'mass = 1.0\n[[rotors]\n')),
     r"quad\.toml: cannot parse"),
    ("profile TOML wrong type", lambda t: rotor.load_profile(_write(t, "q.toml", 'mass = "heavy"\nrotors = [1]\n')),
     r"rotors\[0\]: expected a table"),
    # --- scene, disturbances, noise
    ("wall pitch too steep", lambda t: Scene(wall_pitch=1.2), r"wall_pitch: must lie in \[-0\.785398, 0\.785398\], got 1\.2"),
    ("ground friction zero", lambda t: Scene(ground_friction=0.0), r"ground_friction: must be > 0"),
    ("box size wrong shape", lambda t: Scene(box_half_size=(0.05, 0.05)), r"box_half_size: expected shape \(3,\)"),
    ("drag negative", lambda t: rotor.DragParams(linear=(-0.1, 0.2, 0.3)), r"linear: must lie in \[0, inf\]"),
    ("turbulence time zero", lambda t: rotor.WindParams(turbulence_std=(0.1, 0.1, 0.1), turbulence_time=(0.5, 0.0, 0.5)),
     r"turbulence_time: must be > 0"),
    ("sensor noise negative", lambda t: noise.SensorNoise(position_std=(-0.01, 0.0, 0.0)), r"position_std: must lie in \[0, inf\]"),
    ("command noise NaN", lambda t: noise.CommandNoise(thrust_std=np.nan), r"thrust_std: must be finite"),
    # --- steps too large for stability, unknown names
    ("multirotor step too coarse", lambda t: _multirotor(dt=0.05),
     r"dt: 0\.05 s is too large for a stable step of 'quad_x': must be <= 0\.0347 s"),
    ("flapper timestep too coarse", lambda t: _flapper(timestep=1e-3),
     r"timestep: 0\.001 s is too large for a stable step: must be <= 0\.000221 s"),
    ("unknown flapper root", lambda t: _flapper(root="tethered"), r"root: must be one of"),
    ("unknown backend", lambda t: _multirotor(backend="bullet"), r"backend: must be one of \['mjx', 'rigid'\]"),
    ("unknown preset for a world", lambda t: _multirotor_named("quad_y"),
     r"profile: must be one of \['hexa', 'hexa_tilted', 'quad_x'\] or a profile file"),
    ("missing profile file for a world", lambda t: _multirotor_named(str(t / "mine.toml")),
     r"profile: profile file '.*mine\.toml' does not exist"),
    ("start position wrong length", lambda t: _rigid_world().reset(_rigid_world().default_params(), _key(),
                                                                   np.zeros(2)), r"position: expected shape \(3,\)"),
    ("hover reference wrong length", lambda t: _reference_hover(np.zeros(2)), r"position: expected shape \(\.\.\., 3\)"),
    ("rollout fractional steps", lambda t: _rollout(2.5), r"n_steps: must be an integer >= 1, got 2\.5"),
    ("rollout negative steps", lambda t: _rollout(-5), r"n_steps: must be an integer in \[1, inf\], got -5"),
    ("start below the ground", lambda t: _hover_position(ground_clearance=-0.1),
     r"ground_clearance: must be > 0, got -0\.1"),
    ("flapper batched frequency without vmap", lambda t: _flapper_default_params(frequency=[20.0, 30.0]),
     r"frequency: expected shape \(\), got shape \(2,\)"),
    ("flapper plate beyond the servo", lambda t: _flapper_default_params(plate=(3.0, 0.0)),
     r"plate: must lie in \[-0\.6, 0\.6\]"),
    ("flapper integer dtype", lambda t: _lumped(dtype=np.int32), r"dtype: must be float32 or float64, got int32"),
    ("flapper start position wrong length", lambda t: _lumped_start(position=np.zeros(2)),
     r"position: expected shape \(3,\), got shape \(2,\)"),
    ("flapper start velocity NaN", lambda t: _lumped_start(velocity=[0.0, np.nan, 0.0]), r"velocity: must be finite"),
    ("periodic probe shorter than a wingbeat", lambda t: _free_periodic(probe=0.02),
     r"probe: must hold at least one wingbeat, 1 / f = 0\.03333 s at 30 Hz, got 0\.02 s"),
    ("hover rollout negative steps", lambda t: _lumped_hover(n_steps=-10), r"n_steps: must be an integer in \[1, inf\]"),
    ("hover rollout record_every zero", lambda t: _lumped_hover(record_every=0),
     r"record_every: must be an integer in \[1, inf\], got 0"),
    ("hover rollout target wrong length", lambda t: _lumped_hover(target=np.zeros(2)),
     r"target: expected shape \(3,\), got shape \(2,\)"),
    ("hover rollout negative hover frequency", lambda t: _lumped_hover(hover_frequency=-5.0),
     r"hover_frequency: must be > 0, got -5"),
    ("hover study settle window longer than the flight",
     lambda t: _hover_study(duration=0.2, settle_window=0.5), r"settle_window: must not exceed duration = 0\.2 s"),
    ("hover study fractional worlds", lambda t: _hover_study(n_worlds=2.5), r"n_worlds: must be an integer >= 1"),
    ("hover study shorter than a record", lambda t: _hover_study(duration=0.001, settle_window=0.001),
     r"duration: must hold at least one record of 100 steps"),
    ("averaged wrench plate of three", lambda t: _averaged_wrench(plate=np.zeros(3)),
     r"plate: expected shape \(2,\) \(delta_p, delta_r\), got shape \(3,\)"),
    # --- rigid backend
    ("rigid mass zero", lambda t: rigid.RigidBody(0.0, [0.01, 0.01, 0.02]), r"mass: must be > 0"),
    ("rigid inertia shape", lambda t: rigid.RigidBody(1.0, [0.01, 0.01]), r"inertia: expected shape \(3,\)"),
]


@pytest.mark.parametrize("label, make, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_config_error_naming_the_field(label, make, message, tmp_path):
    with pytest.raises(ConfigError, match=message):
        make(tmp_path)


def test_the_table_is_large_enough():
    assert len(CASES) >= 40
