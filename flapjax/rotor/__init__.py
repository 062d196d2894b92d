"""Multirotor chain: pure JAX kernels, no MuJoCo.

``profiles`` (airframes and presets), ``allocation``, ``actuator``,
``proximity`` (ground and near-wall effects, per-rotor distances in a
scene), ``disturbance`` (drag, wind) and ``chain`` (the six steps). Sensor
and command noise live in :mod:`flapjax.noise`, the scene in
:mod:`flapjax.scene`.
"""

from flapjax.rotor import actuator, allocation, chain, disturbance, proximity
from flapjax.rotor import profile, profile_files
from flapjax.rotor import profile as profiles
from flapjax.rotor.actuator import ActuatorState, actuator_step, speed_to_thrust, thrust_to_speed
from flapjax.rotor.allocation import Allocation, allocate, allocation_inverse, allocate_with_residual, allocation_matrix, reachable_projector
from flapjax.rotor.chain import BodyMotion, ChainInput, ChainOptions, ChainOutput, ChainParams, realize_thrusts, realize_wrench, rotor_wrench
from flapjax.rotor.disturbance import DisturbanceState, DragParams, WindParams, drag_force, gust_force, turbulence_step, wind_force
from flapjax.rotor.profile import RotorProfile
from flapjax.rotor.profile_files import load_profile, profile_from_dict, profile_to_dict, resolve_profile
from flapjax.rotor.proximity import ProximityInput, ProximityParams, ground_effect_factor, rotor_proximity, wall_effect, wall_window

__all__ = [
    "actuator", "allocation", "chain", "disturbance", "proximity", "profile", "profile_files", "profiles",
    "ActuatorState", "actuator_step", "speed_to_thrust", "thrust_to_speed",
    "Allocation", "allocate", "allocation_inverse", "allocate_with_residual", "allocation_matrix", "reachable_projector",
    "BodyMotion", "ChainInput", "ChainOptions", "ChainOutput", "ChainParams", "realize_thrusts", "realize_wrench", "rotor_wrench",
    "DisturbanceState", "DragParams", "WindParams", "drag_force", "gust_force", "turbulence_step", "wind_force",
    "RotorProfile", "load_profile", "profile_from_dict", "profile_to_dict", "resolve_profile",
    "ProximityInput", "ProximityParams", "ground_effect_factor", "rotor_proximity", "wall_effect", "wall_window",
]
