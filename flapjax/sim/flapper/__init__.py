"""MJX bridge of the flapping-wing robot.

==============  ==============================================================
``robot``       types (params, command, state, robot), :func:`make_robot`,
                :func:`default_params`, and :func:`robot_from_mjmodel`, the
                one MJCF name-to-index lookup
``state``       :func:`init_state`, on the stroke schedule or on the
                per-wing model's periodic orbit
``model``       the MJCF source (``assets/flapper.xml``) and its variants
``backends``    the MJX and pure-JAX backends (``STAGES``: model, initial,
                read, advance; the protocol of :mod:`flapjax.sim.backend`)
``step``        one step as named stages: read state -> aero wrench -> servo
                -> advance -> guard; :func:`rollout`
``sweep``       cycle means, fixed-base sweeps
``hover``       the closed-loop hover rollout and the Monte Carlo hover study
``driven``      the robot on a driven base (imposed body motion)
==============  ==============================================================

``description`` reads a robot description file (:func:`load_robot_description`,
docs/flapper_robots.md); ``description_model`` compiles and checks its model
and holds the name-to-index lookup.

``linear_hover`` gives the averaged model's linear hover model with the
robot's own inertia (:func:`lumped_inertia`, :func:`linearize_hover`);
``gain_refinement`` refines designed hover gains by gradient through
per-wing free flight (:func:`refine_gains`).

``stand`` and ``stand_waveform`` give the fixed-base stand rollouts (cycle
means, a force sensor's phase-binned reading) as differentiable functions
of per-wing physical parameters, and :func:`calibrate` puts calibration
values on a per-wing robot; ``free_flights`` flies open-loop manoeuvres
(plate steps and pulses, frequency steps, gusts) as +/- pairs with the free
per-wing robot and with the averaged model; ``averaged_body`` the rigid body
of the flight-log fit under the averaged model. Import them from their
modules.

``hover_gains`` gives the hover controller's default gains per robot
(:func:`hover_gains`, :func:`designed_gains`); ``hover_quality`` the
acceptance numbers of a hover record (:func:`hover_quality`).

Import the names from here (``from flapjax.sim import flapper``); this file
only re-exports.
"""

from flapjax.sim.flapper import model as flapper_model
from flapjax.sim.flapper.model import (
    ASSETS,
    MJCF_PATH,
    PITCH_JOINTS,
    PLATE_JOINTS,
    ROOTS,
    STROKE_JOINTS,
    WING_BODIES,
    build,
    composite_inertia,
    load_spec,
)
from flapjax.aero.hinge import FeatheringHinge, stop_torque
from flapjax.sim.flapper.description import (
    CHANNEL_KINDS,
    Channel,
    FlapperDescription,
    JointNames,
)
from flapjax.sim.flapper.description_model import load_robot_description
from flapjax.sim.backend import BACKENDS
from flapjax.sim.flapper.robot import (
    AERO_MODELS,
    AVERAGED_PATH,
    PARAMS_PATH,
    SIDES,
    FlapperCommand,
    FlapperParams,
    FlapperRobot,
    FlapperState,
    default_params,
    make_robot,
    robot_from_mjmodel,
)
from flapjax.sim.flapper.state import init_state
from flapjax.sim.flapper.backends import base_frame, frame_velocity, model_for
from flapjax.sim.flapper.step import (
    AeroWrench,
    BaseFrame,
    FlapperDiagnostics,
    averaged_aero,
    command_from_params,
    rollout,
    step,
    wing_aero,
)
from flapjax.sim.flapper.sweep import (
    SEED_SWEEP,
    CycleMean,
    SweepResult,
    cycle_mean,
    cycle_window,
    sweep,
    sweep_params,
)
from flapjax.sim.flapper.chunks import map_in_chunks
from flapjax.sim.flapper.sweep_table import print_sweep_table
from flapjax.sim.flapper.hover import (
    BasePose,
    HoverRecord,
    HoverStudy,
    PlateStep,
    base_pose,
    hover_rollout,
    hover_study,
    random_starts,
)
from flapjax.sim.flapper.hover_gains import GAIN_NAMES, designed_gains, hover_gains
from flapjax.sim.flapper.hover_quality import HoverQuality, hover_quality
from flapjax.sim.flapper.linear_hover import linearize_hover, lumped_inertia
from flapjax.sim.flapper.gain_refinement import REFINED_GAINS, refine_gains, refinement_loss
from flapjax.sim.flapper.driven import (
    DRIVE_JOINTS,
    DrivenMean,
    driven_cycle_mean,
    driven_sweep,
    make_driven_robot,
    robot_com_offset,
    robot_weight,
)

__all__ = [
    "AERO_MODELS",
    "ASSETS",
    "AVERAGED_PATH",
    "AeroWrench",
    "BACKENDS",
    "BaseFrame",
    "BasePose",
    "CHANNEL_KINDS",
    "Channel",
    "CycleMean",
    "DRIVE_JOINTS",
    "DrivenMean",
    "FeatheringHinge",
    "FlapperDescription",
    "FlapperCommand",
    "FlapperDiagnostics",
    "FlapperParams",
    "FlapperRobot",
    "FlapperState",
    "GAIN_NAMES",
    "HoverQuality",
    "HoverRecord",
    "HoverStudy",
    "JointNames",
    "MJCF_PATH",
    "PARAMS_PATH",
    "PITCH_JOINTS",
    "PLATE_JOINTS",
    "PlateStep",
    "REFINED_GAINS",
    "ROOTS",
    "SEED_SWEEP",
    "SIDES",
    "STROKE_JOINTS",
    "SweepResult",
    "WING_BODIES",
    "averaged_aero",
    "base_frame",
    "base_pose",
    "build",
    "command_from_params",
    "composite_inertia",
    "cycle_mean",
    "cycle_window",
    "default_params",
    "designed_gains",
    "driven_cycle_mean",
    "driven_sweep",
    "flapper_model",
    "frame_velocity",
    "hover_gains",
    "hover_quality",
    "hover_rollout",
    "hover_study",
    "init_state",
    "linearize_hover",
    "load_robot_description",
    "load_spec",
    "lumped_inertia",
    "make_driven_robot",
    "make_robot",
    "map_in_chunks",
    "model_for",
    "print_sweep_table",
    "random_starts",
    "refine_gains",
    "refinement_loss",
    "robot_com_offset",
    "robot_from_mjmodel",
    "robot_weight",
    "rollout",
    "step",
    "stop_torque",
    "sweep",
    "sweep_params",
    "wing_aero",
]
