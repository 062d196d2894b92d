"""Analytic scene geometry and MJX multirotor worlds near ground and walls."""

import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from flapjax import rotor
from flapjax import scene as sc
from flapjax.control.wrench import Reference
from flapjax.math import quat_to_mat, rot_y, rot_z
from flapjax.noise import CommandNoise, NoiseParams, SensorNoise
from flapjax.sim import multirotor as mr
from flapjax.sim.multirotor import model as mm

PRESETS = ["quad_x", "hexa", "hexa_tilted"]
YAW = np.pi / 2  # arm parallel to the wall while hovering
PITCH_RANGE = sc.SceneRanges(wall_pitch=(-0.35, 0.35))


# ----------------------------------------------------------------------------- analytic scene


def test_wall_plane_geometry():
    beta = 0.3
    s = sc.Scene(wall_x=1.0, wall_anchor_z=0.2, wall_pitch=beta)
    n, c = sc.wall_plane(s)
    np.testing.assert_allclose(n, [-np.cos(beta), 0, -np.sin(beta)], atol=1e-15)
    # The anchor lies on the wall, and a point higher up lies closer to the robot side (overhang).
    np.testing.assert_allclose(sc.plane_distance(jnp.array([1.0, 5.0, 0.2]), n, c), 0.0, atol=1e-15)
    top = jnp.array([1.0 - np.tan(beta) * 0.5, 0.0, 0.7])
    np.testing.assert_allclose(sc.plane_distance(top, n, c), 0.0, atol=1e-14)
    # Perpendicular distance of a point at the anchor height is dx * cos(beta).
    np.testing.assert_allclose(sc.plane_distance(jnp.array([0.8, 0.0, 0.2]), n, c), 0.2 * np.cos(beta), rtol=1e-14)


def test_ray_casts_along_rotor_axis():
    s = sc.Scene(ground_height=0.05, wall_x=2.0)
    n, c = sc.ground_plane(s)
    o = jnp.array([0.0, 0.0, 0.35])
    np.testing.assert_allclose(sc.ray_plane(o, jnp.array([0.0, 0.0, -1.0]), n, c), 0.30, rtol=1e-14)
    th = 0.4
    d = rot_y(jnp.asarray(th)) @ jnp.array([0.0, 0.0, -1.0])
    np.testing.assert_allclose(sc.ray_plane(o, d, n, c), 0.30 / np.cos(th), rtol=1e-14)  # later than world z says
    assert float(sc.ray_plane(o, jnp.array([0.0, 0.0, 1.0]), n, c)) == np.inf
    assert float(sc.ray_plane(jnp.array([0.0, 0.0, 0.0]), jnp.array([0.0, 0.0, -1.0]), n, c)) == 0.0
    box = sc.BoxPose(position=jnp.array([0.0, 0.0, 0.1]), rotation=rot_z(jnp.asarray(0.3)))
    half = jnp.array([0.1, 0.2, 0.05])
    np.testing.assert_allclose(sc.ray_box(o, jnp.array([0.0, 0.0, -1.0]), box, half), 0.20, rtol=1e-14)
    assert float(sc.ray_box(jnp.array([1.0, 0.0, 0.35]), jnp.array([0.0, 0.0, -1.0]), box, half)) == np.inf
    dist, normal = sc.point_box(jnp.array([0.0, 0.5, 0.1]), sc.BoxPose(jnp.array([0.0, 0.0, 0.1]), jnp.eye(3)), half)
    np.testing.assert_allclose(dist, 0.3, rtol=1e-14)
    np.testing.assert_allclose(normal, [0, 1, 0], atol=1e-15)


def test_rotor_proximity_pitched_wall_and_tilted_rotors():
    prof = rotor.profiles.hexa_tilted()
    beta = -0.25
    s = sc.Scene(wall_pitch=beta, wall_x=0.6, wall_anchor_z=0.3)
    pos = jnp.array([0.1, 0.05, 0.3])
    rot = rot_z(jnp.asarray(0.2)) @ rot_y(jnp.asarray(0.1))
    prox = rotor.rotor_proximity(s, prof, pos, rot)
    n_w, c_w = sc.wall_plane(s)
    centres = pos + prof.positions @ rot.T
    np.testing.assert_allclose(prox.wall_distance, centres @ n_w - c_w, rtol=1e-12)
    np.testing.assert_allclose(prox.wall_normal, jnp.tile(rot.T @ n_w, (6, 1)), atol=1e-14)
    # Brute force: march along each downwash ray to the first point outside the free space.
    for i in range(6):
        direction = -(rot @ prof.axes[i])
        ts = np.linspace(0.0, 3.0, 300001)
        pts = np.asarray(centres[i])[None] + ts[:, None] * np.asarray(direction)[None]
        blocked = (pts[:, 2] <= 0.0) | (pts @ np.asarray(n_w) - float(c_w) <= 0.0)
        t_hit = ts[np.argmax(blocked)] if blocked.any() else np.inf
        np.testing.assert_allclose(prox.ground_distance[i], t_hit, atol=2e-5)
    # The tilted rotors see the ground later than their height.
    assert bool(jnp.all(prox.ground_distance >= centres[:, 2] - 1e-12))


def test_rotor_proximity_with_box():
    prof = rotor.profiles.quad_x()
    s = sc.Scene(wall_x=5.0, box_half_size=(0.05, 0.05, 0.05))
    pos = jnp.array([0.0, 0.0, 0.3])
    x = 0.18 / np.sqrt(2)
    # Box under rotor 0 (at +x, +y): its top is 0.3 - 0.1 = 0.2 m below the rotor.
    box = sc.BoxPose(position=jnp.array([x, x, 0.05]), rotation=jnp.eye(3))
    prox = rotor.rotor_proximity(s, prof, pos, jnp.eye(3), box)
    np.testing.assert_allclose(prox.ground_distance, [0.2, 0.3, 0.3, 0.3], rtol=1e-12)
    # The box top faces up: not a wall; the distant vertical wall is the nearest lateral surface.
    np.testing.assert_allclose(prox.wall_distance[0], 5.0 - x, rtol=1e-12)
    # A tall box beside rotor 0: its side face is the nearest near-vertical surface.
    s_tall = sc.Scene(wall_x=5.0, box_half_size=(0.05, 0.05, 0.5))
    box = sc.BoxPose(position=jnp.array([x + 0.15, x, 0.5]), rotation=jnp.eye(3))
    prox = rotor.rotor_proximity(s_tall, prof, pos, jnp.eye(3), box)
    np.testing.assert_allclose(prox.wall_distance[0], 0.10, rtol=1e-12)
    np.testing.assert_allclose(prox.wall_normal[0], [-1.0, 0.0, 0.0], atol=1e-15)


def test_hover_position_clearances():
    prof = rotor.profiles.hexa()
    s = sc.Scene(wall_pitch=0.3, wall_x=0.9, wall_anchor_z=0.1)
    pos = sc.hover_position(s, prof, ground_clearance=0.10, wall_clearance=0.15, yaw=YAW)
    prox = rotor.rotor_proximity(s, prof, pos, rot_z(jnp.asarray(YAW)))
    np.testing.assert_allclose(jnp.min(prox.wall_distance), 0.15, rtol=1e-12)
    np.testing.assert_allclose(jnp.min(prox.ground_distance), 0.10, rtol=1e-12)


def test_scene_matches_mjx_geoms_by_ray_cast():
    """The analytic distances equal MJX's own ray casts on the placed geoms."""
    from mujoco import mjx

    prof = rotor.profiles.quad_x()
    world = mr.MultirotorWorld(prof, with_box=True)
    s = sc.Scene(wall_pitch=-0.3, wall_x=0.5, wall_anchor_z=0.2, ground_height=0.02)
    params = world.default_params(s)
    m = world.world_model(params)
    pos, yaw = jnp.array([0.1, 0.0, 0.35]), 0.0
    state = world.reset(params, jax.random.key(0), pos, yaw=yaw, box_position=jnp.array([0.0, 0.12, 0.07]))
    d = jax.jit(mjx.kinematics)(m, state.data)
    rot = quat_to_mat(d.qpos[3:7])
    box = sc.BoxPose(position=d.qpos[7:10], rotation=quat_to_mat(d.qpos[10:14]))
    base = world.ids.base
    dirs = [jnp.array([0.0, 0.0, -1.0]), jnp.array([0.6, 0.0, -0.8]), jnp.array([1.0, 0.0, 0.0]),
            jnp.array([-0.3, 0.4, -np.sqrt(0.75)])]
    origins = jnp.repeat(pos + prof.positions @ rot.T, len(dirs), axis=0)
    vecs = jnp.tile(jnp.stack(dirs), (4, 1))
    # (the material in the MJCF works around an MJX ray indexing bug with no materials)
    dist_mjx, gid = jax.jit(jax.vmap(lambda o, v: mjx.ray(m, d, o, v, bodyexclude=base)))(origins, vecs)
    n_g, c_g = sc.ground_plane(s)
    n_w, c_w = sc.wall_plane(s)

    def ours(o, v):
        return jnp.minimum(jnp.minimum(sc.ray_plane(o, v, n_g, c_g), sc.ray_plane(o, v, n_w, c_w)),
                           sc.ray_box(o, v, box, s.box_half_size))

    mine = jax.vmap(ours)(origins, vecs)
    hit = np.asarray(gid) >= 0
    assert hit.sum() >= 12 and set(np.asarray(gid)[hit].tolist()) == {
        world.ids.ground, world.ids.wall, world.ids.box_geom}
    np.testing.assert_allclose(np.asarray(mine)[hit], np.asarray(dist_mjx)[hit], rtol=1e-9)
    assert np.all(np.isinf(np.asarray(mine)[~hit]))

# ----------------------------------------------------------------------------- MJX worlds

HOVER_STEPS = 2500  # 5 s at dt = 2 ms
PUSH_OVERLAP = 0.05  # the end-effector target lies this far inside the wall [m]


def _effects_on(world):
    wind = rotor.WindParams(constant=(0.3, 0.2, 0.0), gust_amplitude=[[0.8, 0.0, -0.3]], gust_start=[2.0],
                            gust_duration=[1.0], turbulence_std=(0.3, 0.3, 0.2), turbulence_time=(0.5, 0.5, 0.5))
    noise = NoiseParams(SensorNoise((0.002,) * 3, (0.01,) * 3, (0.003,) * 3, (0.01,) * 3), CommandNoise(0.05))
    return eqx.tree_at(lambda p: (p.chain, p.noise), world.default_params(), (rotor.ChainParams(wind=wind), noise))


def _push_target(scene, prof, overlap=0.03):
    """CoM target whose end-effector reaches ``overlap`` into the wall (yaw 0, level)."""
    n, c = sc.wall_plane(scene)
    ee = prof.ee_position
    z = scene.ground_height + 0.10 - jnp.min(prof.positions[:, 2])
    x = (prof.ee_radius - overlap + c - n[2] * z - jnp.dot(n, ee)) / n[0]
    return jnp.stack([x, jnp.zeros_like(x), z])


@pytest.fixture(scope="module", params=PRESETS)
def hover_run(request):
    """Four worlds of one preset, 5 s, every effect on (noise, wind, proximity...).

    0: scene key A, world key N1 (hover); 1: scene key B, world key N1 (hover);
    2: scene key A, world key N2 (hover); 3: push on a vertical wall.
    """
    prof = rotor.profiles.preset(request.param)
    world = mr.MultirotorWorld(prof, options=rotor.ChainOptions(command_noise=True))
    p0 = _effects_on(world)
    ka, kb = jax.random.key(11), jax.random.key(12)
    kn1, kn2 = jax.random.key(21), jax.random.key(22)
    params = [world.randomize(p0, k, PITCH_RANGE) for k in (ka, kb, ka)]
    # The push world: vertical wall, no integral action (so the steady contact
    # force is the position loop's spring), no turbulence (a clean average).
    params.append(eqx.tree_at(
        lambda p: (p.scene.wall_pitch, p.gains.integral, p.chain.wind.turbulence_std),
        params[0], (jnp.asarray(0.0), jnp.zeros(3), jnp.zeros(3))))
    hover = [sc.hover_position(p.scene, prof, ground_clearance=0.10, wall_clearance=0.15, yaw=YAW) for p in params[:3]]
    push_ref = _push_target(params[3].scene, prof, PUSH_OVERLAP)
    n_w = sc.wall_normal(params[3].scene)
    push_start = push_ref + 0.12 * n_w * jnp.array([1.0, 1.0, 0.0])
    starts = hover + [push_start]
    refs = [Reference.hover(x, YAW) for x in hover] + [Reference.hover(push_ref, 0.0)]
    stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)  # noqa: E731
    params, refs = stack(params), stack(refs)
    states = world.batched_reset(params, jnp.stack([kn1, kn1, kn2, kn1]), jnp.stack(starts), refs.yaw)
    t0 = time.perf_counter()
    final, traj = world.batched_rollout(params, states, refs, HOVER_STEPS)
    jax.block_until_ready(traj)
    return dict(prof=prof, world=world, params=params, refs=refs, traj=traj, final=final,
                seconds=time.perf_counter() - t0)


def test_hover_near_ground_and_wall_is_stable(hover_run):
    traj, refs, prof = hover_run["traj"], hover_run["refs"], hover_run["prof"]
    h = slice(0, 3)
    assert not bool(jnp.any(traj.diverged[h]))
    err = np.asarray(traj.position[h]) - np.asarray(refs.position[h])[:, None]
    assert np.abs(err).max() < 0.08, np.abs(err).max(axis=(0, 1))
    assert np.abs(err[:, -500:]).max() < 0.05  # last second
    q = np.asarray(traj.quat[h])
    tilt = 2 * np.arcsin(np.clip(np.linalg.norm(q[..., 1:3], axis=-1), 0, 1))
    assert np.degrees(tilt.max()) < 12.0
    # Never touched anything: no contact force all along.
    np.testing.assert_array_equal(traj.constraint_force[h], 0.0)
    # The proximity effects were really on: ground factor near 1/(1-(R/0.4)^2),
    # wall factor > 1 on the rotors nearest the wall.
    gf = np.asarray(traj.ground_factor[h])
    expect = 1 / (1 - (float(prof.radius[0]) / 0.4) ** 2)
    np.testing.assert_allclose(np.median(gf), expect, rtol=0.01)
    assert np.asarray(traj.wall_factor[h]).max(axis=-1).min() > 1.001
    report = mr.saturation_report(jax.tree.map(lambda x: x[h], traj))
    assert report.time_fraction.shape == (3, prof.n_rotors)
    assert float(report.time_fraction.max()) < 0.01
    assert float(report.min_margin.min()) > 0.0  # never at a limit while hovering


def test_push_on_wall_produces_contact_force(hover_run):
    traj, params, prof, refs = hover_run["traj"], hover_run["params"], hover_run["prof"], hover_run["refs"]
    assert not bool(traj.diverged[3].any())
    p3 = jax.tree.map(lambda x: x[3], params)
    n, c = sc.wall_plane(p3.scene)
    np.testing.assert_allclose(n, [-1.0, 0.0, 0.0], atol=1e-15)
    # Before the approach there was no contact.
    np.testing.assert_array_equal(traj.constraint_force[3, :50], 0.0)
    last = slice(-250, None)  # last 0.5 s, at rest against the wall
    f_wall = np.asarray(traj.constraint_force[3, last]) @ np.asarray(n)
    assert f_wall.min() > 0.3  # the wall pushes back along its outward normal
    # Force balance along x: contact = position spring k_x (x_ref - x) + steady wind.
    x_err = float(refs.position[3, 0]) - np.asarray(traj.position[3, last, 0])
    expect = float(p3.gains.position[0]) * x_err + float(p3.chain.wind.constant[0])
    np.testing.assert_allclose(f_wall.mean(), expect.mean(), rtol=0.15)
    # The end-effector touches the wall (soft contact: mm penetration at most).
    ee_gap = np.asarray(traj.ee_position[3, last]) @ np.asarray(n) - float(c)
    np.testing.assert_allclose(ee_gap, float(prof.ee_radius), atol=3e-3)
    q = np.asarray(traj.quat[3])
    assert np.degrees(2 * np.arcsin(np.linalg.norm(q[:, 1:3], axis=-1)).max()) < 15.0


def test_noise_and_randomization_streams_are_independent(hover_run):
    traj, params, world = hover_run["traj"], hover_run["params"], hover_run["world"]
    pick = lambda i: jax.tree.map(lambda x: x[i], params)  # noqa: E731
    # Same scene key, different noise key: identical scene and MJX geoms, different noise.
    for leaf0, leaf2 in zip(jax.tree.leaves(pick(0).scene), jax.tree.leaves(pick(2).scene)):
        np.testing.assert_array_equal(leaf0, leaf2)
    m0, m2 = world.world_model(pick(0)), world.world_model(pick(2))
    np.testing.assert_array_equal(m0.geom_quat, m2.geom_quat)
    assert np.abs(np.asarray(traj.sensor_position_noise[0] - traj.sensor_position_noise[2])).max() > 1e-4
    # Different scene key, same noise key: different wall, identical noise draws.
    assert abs(float(pick(0).scene.wall_pitch - pick(1).scene.wall_pitch)) > 1e-3
    np.testing.assert_array_equal(traj.sensor_position_noise[0], traj.sensor_position_noise[1])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["quad_x"])  # every preset: benchmarks/multirotor_hover_batch.py (5 s, 1024 worlds)
def test_hover_1024_worlds_randomized_wall_pitch(name):
    """1024 worlds, wall pitch uniform in +-20 deg, every effect on, 0.6 s: the
    sparse-Jacobian model runs the large batch (no LAPACK deadlock) and every
    world holds its hover. The full 5 s at 1024 worlds is
    benchmarks/multirotor_hover_batch.py (minutes on a 2-core CPU)."""
    prof = rotor.profiles.preset(name)
    world = mr.MultirotorWorld(prof, options=rotor.ChainOptions(command_noise=True))
    p0 = _effects_on(world)
    keys = jax.random.split(jax.random.key(5), 1024)
    params = jax.vmap(lambda k: world.randomize(p0, k, PITCH_RANGE))(keys)
    pos = jax.vmap(lambda s: sc.hover_position(s, prof, ground_clearance=0.10, wall_clearance=0.15, yaw=YAW))(
        params.scene)
    refs = jax.vmap(lambda x: Reference.hover(x, YAW))(pos)
    states = world.batched_reset(params, keys, pos, refs.yaw)
    _, traj = world.batched_rollout(params, states, refs, 300)
    pitch = np.asarray(params.scene.wall_pitch)
    assert pitch.min() < -0.33 and pitch.max() > 0.33 and np.unique(pitch).size == 1024
    assert not bool(jnp.any(traj.diverged))
    err = np.abs(np.asarray(traj.position) - np.asarray(pos)[:, None])
    assert err.max() < 0.08, err.max()  # as for the 4-world hover; the worst of 1024 saw 6.3 cm
    np.testing.assert_array_equal(traj.constraint_force, 0.0)
    assert float(jnp.min(traj.wall_distance)) > 0.08 and float(jnp.min(traj.ground_distance)) > 0.06


# ----------------------------------------------------------------------------- contact filtering


def _pair_names(prof, with_box):
    """The geom pairs MJX checks every step (no culling, so all of them)."""
    import mujoco
    from mujoco import mjx

    mj_model = mujoco.MjModel.from_xml_string(mm.multirotor_xml(prof, with_box=with_box, max_contact_points=-1))
    model = mjx.put_model(mj_model)
    data = jax.jit(mjx.collision)(model, mjx.make_data(model))
    name = lambda g: mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_GEOM, int(g))  # noqa: E731
    return {frozenset((name(a), name(b))) for a, b in np.asarray(data._impl.contact.geom)}


def test_only_pairs_that_can_touch_are_solved():
    """docs/mjx_notes.md, Contacts in the multirotor worlds: hull, hubs and
    end-effector against the planes and the box, the arm against the box only,
    the box against the planes; no plane-plane and no rotor-disk pairs."""
    prof = rotor.profiles.preset("quad_x")
    robot = ["hull", "end_effector"] + [f"hub{i}" for i in range(prof.n_rotors)]
    for with_box in (False, True):
        others = ["ground", "wall"] + (["box"] if with_box else [])
        expect = {frozenset((g, o)) for g in robot for o in others}
        if with_box:
            expect |= {frozenset(("arm", "box")), frozenset(("box", "ground")), frozenset(("box", "wall"))}
        assert _pair_names(prof, with_box) == expect


@pytest.fixture(scope="module")
def crash_run():
    """Two worlds with the box, 1 s: 0 flies sideways into the vertical wall
    (arm parallel to it: the hubs lead), 1 flies low into the box (the
    end-effector leads). Both references lie inside the obstacle."""
    prof = rotor.profiles.preset("quad_x")
    world = mr.MultirotorWorld(prof, with_box=True, sensor_noise=False)
    p = world.default_params()
    starts = jnp.array([[0.75, 0.0, 0.5], [0.05, 0.0, 0.08]])
    refs = [Reference.hover(jnp.array([1.05, 0.0, 0.5]), YAW), Reference.hover(jnp.array([0.6, 0.0, 0.08]), 0.0)]
    stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)  # noqa: E731
    params, refs = stack([p, p]), stack(refs)
    states = world.batched_reset(params, jnp.stack([jax.random.key(1), jax.random.key(2)]), starts, refs.yaw)
    final, traj = world.batched_rollout(params, states, refs, 500)
    return dict(world=world, start=states, final=final, traj=traj)


def test_flying_into_the_wall_and_the_box_produces_contact_forces(crash_run):
    traj, final, start = crash_run["traj"], crash_run["final"], crash_run["start"]
    assert not bool(jnp.any(traj.diverged))
    f = np.asarray(traj.constraint_force)  # (world, step, 3), on the robot, world frame
    assert np.all(f[:, :20] == 0.0)  # free flight first
    # The wall (outward normal -x) pushes the robot back, by more than a touch.
    assert bool(np.asarray(traj.touching[0]).any())
    assert f[0, :, 0].min() < -0.3
    # The hubs, not the end-effector, touch the wall: the robot stops a hub
    # radius (plus soft-contact penetration) short of it.
    x_max = float(np.asarray(traj.position[0, :, 0]).max())
    hub_reach = 0.1273 + 0.3 * 0.0635  # hub centre + sphere radius along x at 45 deg yaw
    assert 1.0 - hub_reach - 0.02 < x_max < 1.0 - hub_reach + 0.02  # tilt and penetration: cm
    # The box pushes the robot back and is pushed: it slid along +x.
    assert bool(np.asarray(traj.touching[1]).any())
    assert f[1, :, 0].min() < -0.1
    box_dx = float(final.data.qpos[1, 7] - start.data.qpos[1, 7])
    assert box_dx > 1e-3
    # World 0's box stayed at rest on the ground (contact with the ground only).
    np.testing.assert_allclose(np.asarray(final.data.qpos[0, 7:9]), np.asarray(start.data.qpos[0, 7:9]), atol=1e-6)
