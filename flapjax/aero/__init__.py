"""Flapping-wing aerodynamics: pure, jit/vmap/grad-friendly kernels."""

from flapjax.aero.cycle_averaged import CycleAveragedLoads, CycleAveragedParams, cycle_averaged_wrench
from flapjax.aero.coefficients import CoefficientModel, Dickinson1999, WhitneyWood
from flapjax.aero.geometry import Wing, WingGeometry, read_wing_file, write_wing_file
from flapjax.aero.hinge import FeatheringHinge, stop_torque
from flapjax.aero.kinematics import AffineVelocity, WingKinematics, affine_velocity
from flapjax.aero.options import AeroOptions
from flapjax.aero.quasi_steady import WingLoads, angle_of_attack, wing_loads
from flapjax.aero.wrench import WingWrench, wing_wrench

__all__ = [
    "AeroOptions",
    "AffineVelocity",
    "CoefficientModel",
    "CycleAveragedLoads",
    "CycleAveragedParams",
    "Dickinson1999",
    "FeatheringHinge",
    "WhitneyWood",
    "Wing",
    "WingGeometry",
    "WingKinematics",
    "WingLoads",
    "WingWrench",
    "affine_velocity",
    "angle_of_attack",
    "cycle_averaged_wrench",
    "read_wing_file",
    "stop_torque",
    "wing_loads",
    "wing_wrench",
    "write_wing_file",
]
