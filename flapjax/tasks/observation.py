"""Named slices of a task's flat observation vector.

    spec = env.observation_spec()            # {"ee_position": slice(0, 3), ...}
    obs[spec["height_error"]]                 # near_ground: (1,) reference minus measured height [m]

Every task's observation starts with :data:`COMMON_FIELDS` (the noisy
sensor's estimate, see :mod:`flapjax.tasks.base`), then the task's own
fields (``task_obs_fields`` of its class), in this order.
"""

from __future__ import annotations

#: (name, size) of the entries every task's observation starts with:
#: end-effector position (3, world) [m], CoM velocity (3, world) [m/s],
#: body-to-world rotation matrix (9, row-major), body rates (3, body)
#: [rad/s], episode phase ``step / episode_length`` (1) [-].
COMMON_FIELDS: tuple[tuple[str, int], ...] = (
    ("ee_position", 3), ("com_velocity", 3), ("rotation", 9), ("body_rate", 3), ("phase", 1),
)


def observation_spec(fields: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    """``{name: slice}`` into the observation of :data:`COMMON_FIELDS` then ``fields``."""
    out, start = {}, 0
    for name, size in COMMON_FIELDS + tuple(fields):
        if name in out:
            raise ValueError(f"observation field {name!r} appears twice")
        out[name] = slice(start, start + int(size))
        start += int(size)
    return out
