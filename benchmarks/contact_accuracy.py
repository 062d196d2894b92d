"""Contact accuracy of the multirotor MJCF's solver settings.

Three worlds fly for 1 s under the hover controller with references inside
an obstacle: 0 sideways into the wall (hubs first), 1 low into the box (or
along the ground without it), 2 down onto the ground. Each solver variant is
compared with a converged reference (Newton, 20 iterations, 30 line-search
steps, no contact culling): largest position difference per world [mm],
the box's final x difference [mm] and the peak contact force ratio.

    python -m benchmarks.contact_accuracy            # with the box
    python -m benchmarks.contact_accuracy --no-box
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

from flapjax import rotor
from flapjax.control.wrench import Reference
from flapjax.sim import multirotor as mr
from flapjax.sim.multirotor import model as mm

from benchmarks.contacts import with_xml

VARIANTS = {
    "Newton 3/6, all contacts": {"max_contact_points": -1},
    "Newton 3/6, culled (shipped)": {},
    "Newton 1/6, culled": {"iterations": 1},
    "CG 3/6, culled": {"solver": "CG"},
    "CG 1/6, culled": {"solver": "CG", "iterations": 1},
}


def _world(base, with_box, **kw):
    return with_xml(base, mm.multirotor_xml(base.profile, with_box=with_box, timestep=base.dt, **kw))


def _run(world, with_box):
    p = world.default_params()
    starts = jnp.array([[0.75, 0.0, 0.5], [0.05, 0.0, 0.08], [0.4, 0.0, 0.5]])
    refs = [Reference.hover(jnp.array([1.05, 0.0, 0.5]), np.pi / 2), Reference.hover(jnp.array([0.6, 0.0, 0.08]), 0.0),
            Reference.hover(jnp.array([0.4, 0.0, -0.2]), 0.3)]
    stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)  # noqa: E731
    params, refs = stack([p, p, p]), stack(refs)
    states = world.batched_reset(params, jnp.stack([jax.random.key(i) for i in range(3)]), starts, refs.yaw)
    final, traj = world.batched_rollout(params, states, refs, 500)
    box_x = np.asarray(final.data.qpos[:, 7]) if with_box else np.zeros(3)
    return np.asarray(traj.position), box_x, np.abs(np.asarray(traj.constraint_force)).max(axis=(1, 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-box", action="store_true")
    args = ap.parse_args(argv)
    with_box = not args.no_box
    base = mr.MultirotorWorld(rotor.profiles.preset("quad_x"), with_box=with_box, sensor_noise=False)
    ref = _run(_world(base, with_box, iterations=20, ls_iterations=30, max_contact_points=-1), with_box)
    print(f"reference peak contact force per world [N]: {ref[2].round(2)}")
    for name, kw in VARIANTS.items():
        pos, box_x, f = _run(_world(base, with_box, **kw), with_box)
        print(f"{name:30s} max |dx| [mm] {(np.abs(pos - ref[0]).max(axis=(1, 2)) * 1e3).round(3)}  "
              f"box dx [mm] {((box_x - ref[1]) * 1e3).round(3)}  peak force ratio {(f / np.maximum(ref[2], 1e-9)).round(2)}",
              flush=True)


if __name__ == "__main__":
    main()
