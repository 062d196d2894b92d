"""The body velocities fed to the wing model, against MuJoCo's own
``mj_objectVelocity`` at random states of the per-wing robots."""

import mujoco
import numpy as np
import pytest
from mujoco import mjx

from flapjax.sim import flapper as fl
from flapjax.sim.flapper import model as fm


def _random_state(m: mujoco.MjModel, seed: int) -> mujoco.MjData:
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(m)
    d.qpos[:] = m.qpos0 + 0.3 * rng.standard_normal(m.nq)
    for j in np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
        a = m.jnt_qposadr[j]
        d.qpos[a + 3:a + 7] /= np.linalg.norm(d.qpos[a + 3:a + 7])
    d.qvel[:] = 3.0 * rng.standard_normal(m.nv)  # wing rates of tens of rad/s in the strokes
    d.qvel[: min(m.nv, 6)] *= 0.5
    mujoco.mj_forward(m, d)
    return d


def _object_velocity(m, d, body, at=mujoco.mjtObj.mjOBJ_XBODY):
    """World-axes (linear, angular) velocity at the body origin (XBODY) or
    at its centre of mass (BODY)."""
    res = np.zeros(6)
    mujoco.mj_objectVelocity(m, d, at, body, res, 0)
    return res[3:], res[:3]


@pytest.mark.parametrize("root", ["free", "fixed"])
def test_frame_velocities_match_mujoco(root):
    m = fm.build(root)
    robot = fl.robot_from_mjmodel(m, root=root, aero_model="wing")
    for seed in range(3):
        d = _random_state(m, seed)
        dx = mjx.put_data(m, d)
        for body, tree_root in ((robot.plate_body, robot.plate_root), (robot.base_body, robot.base_root)):
            v, w = fl.frame_velocity(dx, body, tree_root)
            v_ref, w_ref = _object_velocity(m, d, body)
            np.testing.assert_allclose(w, w_ref, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(v, v_ref, rtol=1e-10, atol=1e-12)
        frame = fl.base_frame(robot, dx)
        v_ref, w_ref = _object_velocity(m, d, robot.base_body, at=mujoco.mjtObj.mjOBJ_BODY)
        np.testing.assert_allclose(frame.v_com, v_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(frame.w_body, d.xmat[robot.base_body].reshape(3, 3).T @ w_ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(frame.origin, d.xpos[robot.base_body], rtol=1e-14)
