"""Named slices of a task's flat observation vector.

    spec = env.observation_spec()            # {"ee_position": slice(0, 3), ...}
    obs[spec["height_error"]]                 # near_ground: (1,) reference minus measured height [m]

Every task's observation starts with :data:`COMMON_FIELDS` (the noisy
sensor's estimate), then the task's own fields (``task_obs_fields`` of its
class), in this order.

Observation (float32): 19 entries every task shares, then the task's own.
The shared ones come from the noisy sensor (``config.noise``): end-effector
position (3, world) [m], CoM velocity (3, world) [m/s], the body-to-world
rotation matrix (9, row-major), body rates (3, body) [rad/s], and the episode
phase ``step / episode_length`` (1). The task's entries: ``near_ground`` the
reference height minus the measured end-effector height, the reference
height rate and the reference height (3); ``wall_contact`` the contact point
minus the end-effector (3), the wall normal (3), the commanded and the last
measured normal force (2); ``object_push`` the box position minus the
end-effector (3), the box heading's cosine and sine (2) and the goal minus
the box (2) (the box pose with the sensor's position and heading noise).
:meth:`TaskEnv.observation_spec` names these slices.
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
