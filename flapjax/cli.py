"""The ``flapjax`` command (typer): one sub-command per job.

``flapjax identify`` runs the identification studies of the flapping-wing
robot (:mod:`flapjax.identify.flapper`) and writes ``results.json``,
``cycle_averaged.json`` and PNG plots into ``--out``; with ``--data FILE``
it fits measured data instead (:mod:`flapjax.runs.from_file`); ``flapjax
fidelity MODEL.json`` is the power test of the fidelity score
(:mod:`flapjax.cli_fidelity`). Further sub-commands
register on :data:`app` with ``@app.command()``.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import List, Optional

import typer

from flapjax.cli_evaluate import end_on_ctrl_c, exit_on_error
from flapjax.safe_io import output_folder
from flapjax.validation import ConfigError, check_choice

app = typer.Typer(
    name="flapjax",
    help="flapjax: JAX-vectorized, differentiable simulator for small aerial robots.",
    no_args_is_help=True,
    add_completion=False,
)


def one_line_warnings() -> None:
    """Show flapjax's own warnings (an unflyable airframe, a partial cycle)
    as one line ``warning: <message>`` on stderr: the source line where
    Python found them is a library's internals, not the user's input.
    Other warnings go to the ``warnings.showwarning`` installed before."""
    show = warnings.showwarning

    def hook(message, category, filename, lineno, file=None, line=None):
        if category.__module__.split(".")[0] == "flapjax":
            typer.echo(f"warning: {message}", err=True)
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = hook


@app.callback()
def main() -> None:
    """flapjax command line (run a sub-command with --help for its options).

    Compiled programs are kept in JAX's persistent compilation cache
    (:mod:`flapjax.cache`; folder from ``FLAPJAX_CACHE_DIR``, cleared with
    ``python -m flapjax.cache clear``), so a second run compiles little; on
    CPU they are compiled with XLA's classic emitters and without YNNPACK
    fusions, which compile faster and run flapjax's small kernels faster
    (unless ``XLA_FLAGS`` chooses; :func:`flapjax.cache.prefer_fast_cpu_compile`). On CPU, JAX presents one
    device per core and batched rollouts split their worlds over them
    (:mod:`flapjax.devices`; ``FLAPJAX_CORES=1`` for one device).
    """
    from flapjax.cache import enable_compilation_cache
    from flapjax.devices import setup

    end_on_ctrl_c()
    one_line_warnings()
    try:  # XLA's CPU options and one JAX device per core, before JAX starts (FLAPJAX_CORES=1: one)
        typer.echo(setup(), err=True)
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    enable_compilation_cache()


@app.command()
def identify(
    out: str = typer.Option("out/identify", "--out", "-o", help="Output folder (created)."),
    config: Optional[Path] = typer.Option(
        None, "--config", "-c", help="TOML or JSON config overriding the defaults (see identification/)."
    ),
    quick: bool = typer.Option(False, "--quick", help="Smaller sweeps and shorter runs (minutes on a 2-core CPU)."),
    fresh: bool = typer.Option(False, "--fresh", help="Recompute every study instead of resuming."),
    study: Optional[List[str]] = typer.Option(
        None, "--study", "-s", help="Run only these studies (repeatable): lift, moments, damping, physical, plate_motion, "
        "validation, fidelity; the others are reused from --out."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
    data: Optional[Path] = typer.Option(
        None, "--data", "-d", help="Identify from a measured data file (CSV or NPZ; the study is picked from its "
        "columns, see docs/data_formats.md) instead of simulating."
    ),
    robot: Optional[str] = typer.Option(
        None, "--robot", help="Without --data: a flapping-wing robot's description .toml (docs/flapper_robots.md) "
        "to identify instead of the seed robot (studies lift, moments, damping). With --data: multirotor preset "
        "name or profile .toml of a hover log."
    ),
    physical: bool = typer.Option(
        False, "--physical", help="With --data STAND.csv: also fit per-wing physical parameters through the "
        "fixed-base rollout (slow; cycle means fix the lift scale, barely the hinge stiffness and wing inertia: "
        "a phase-resolved record with phase_rad fixes all three)."
    ),
    mass: Optional[float] = typer.Option(
        None, "--mass", help="With --data FLIGHT.csv: mass of the robot that flew [kg] (default the nominal robot's)."
    ),
    inertia: Optional[str] = typer.Option(
        None, "--inertia", help="With --data FLIGHT.csv: its inertia about the centre of mass, body axes [kg m^2]: "
        "'Ixx,Iyy,Izz' or 'Ixx,Iyy,Izz,Ixy,Ixz,Iyz' (default the nominal robot's)."
    ),
    fit: Optional[str] = typer.Option(
        None, "--fit", help="With --data RECORD.csv (phase_rad): the per-wing values to fit, comma-separated "
        "(default lift_scale,hinge_stiffness,wing_inertia_scale; also hinge_damping, moment_scale, stop_angle, "
        "stop_stiffness, stop_width: with a stop the fit runs in stages)."
    ),
    command_delay: Optional[str] = typer.Option(
        None, "--command-delay", help="With --data FLIGHT.csv: samples by which the logged commands lag the "
        "instant they took effect, or 'auto' to try 0-10 and keep the best fitting (default 0)."
    ),
) -> None:
    """Identify the flapper's models from simulations, or fit a measured data file.

    Without --data: the cycle-averaged model (k_f, k_roll, k_pitch, D_w, k_v)
    and per-wing physical parameters from per-wing rollouts, then both models
    fly the same validation flights.

    Finished studies are saved as they complete; rerunning with the same
    settings resumes and reuses them (--fresh recomputes).

    With --data FILE the parameters are fitted to measured data instead: a
    thrust-stand table of cycle means (frequency_hz, fz_n, ...), a
    phase-resolved stand record (frequency_hz, phase_rad, fz_n, ...: lift
    scale, hinge stiffness, wing inertia), a flapper flight log (time_s,
    frequency_hz, ...) or, with --robot, a multirotor hover log;
    results.json holds each value and its standard deviation.
    """
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    start = time.perf_counter()
    try:
        output_folder(out)  # "--out ''" would write into the current folder
    except ConfigError as exc:
        exit_on_error(exc)
    if data is not None:
        try:
            if config is not None or study or fresh:
                raise ConfigError("--data: --config, --study and --fresh apply to the simulated studies only")
            from flapjax.runs.from_file import identify_from_file

            identify_from_file(data, robot=robot, out_dir=out, quick=quick, progress=progress, echo=typer.echo,
                               physical=physical, mass=mass, inertia=_numbers("--inertia", inertia),
                               command_delay=_command_delay(command_delay), fit=_names("--fit", fit))
        except BaseException as exc:  # no traceback reaches the user: bad input exits 2
            exit_on_error(exc)
        typer.echo(f"done in {time.perf_counter() - start:.1f} s")
        return
    if physical or mass is not None or inertia is not None or command_delay is not None or fit is not None:
        exit_on_error(ConfigError("--physical, --mass, --inertia, --command-delay and --fit need --data FILE"))
    try:
        if robot is not None:
            _identify_robot(robot, config, quick, study, out, fresh, progress)
        else:
            _identify_seed(config, quick, study, out, fresh, progress)
    except BaseException as exc:  # no traceback reaches the user: bad input exits 2
        exit_on_error(exc)
    typer.echo(f"done in {time.perf_counter() - start:.1f} s")


def _identify_robot(robot: str, config, quick: bool, study, out: str, fresh: bool, progress: bool) -> None:
    """``flapjax identify --robot robot.toml``: the studies that make sense
    for a described robot, with settings mapped onto its frequency range."""
    from flapjax.runs import run_identification
    from flapjax.identify.flapper.robot_config import SEED_ONLY, load_robot_config
    from flapjax.sim.flapper import load_robot_description

    if not str(robot).endswith(".toml"):
        raise ConfigError(f"--robot: without --data, the description .toml of a flapping-wing robot "
                          f"(docs/flapper_robots.md), got {robot!r}; a multirotor preset goes with --data HOVER.csv")
    description = load_robot_description(robot)
    cfg = load_robot_config(config, description, quick=quick, studies=study or None)
    typer.echo("  left out for this robot: " + "; ".join(f"{k} ({why})" for k, why in SEED_ONLY.items()))
    run_identification(cfg, out_dir=out, fresh=fresh, progress=progress, echo=typer.echo, robot=description)


def _identify_seed(config, quick: bool, study, out: str, fresh: bool, progress: bool) -> None:
    """``flapjax identify`` of the seed robot."""
    from flapjax.identify import flapper
    from flapjax.runs import run_identification

    cfg = flapper.load_config(config, quick=quick)
    if study:
        from flapjax.identify.flapper.config import STUDIES

        for name in study:
            check_choice("--study", name, STUDIES)
        cfg["run"]["studies"] = list(study)
        cfg = flapper.validate_config(cfg)
    run_identification(cfg, out_dir=out, fresh=fresh, progress=progress, echo=typer.echo)


from flapjax.cli_evaluate import evaluate  # noqa: E402
from flapjax.cli_fidelity import fidelity  # noqa: E402

app.command("evaluate")(evaluate)
app.command("fidelity")(fidelity)


def _names(option: str, text: str | None) -> tuple[str, ...] | None:
    """A comma-separated list of names (None: not given); an empty one is refused."""
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise ConfigError(f"{option}: give one or more names separated by commas, got {text!r}")
    return names


def _command_delay(text: str | None) -> int | str | None:
    """``--command-delay``: None (not given), ``'auto'`` or a whole number of samples."""
    if text is None or text.strip().lower() == "auto":
        return None if text is None else "auto"
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"--command-delay: a whole number of samples or 'auto', got {text!r}") from None


def _numbers(option: str, text: str | None) -> list[float] | None:
    """Comma-separated numbers of a command-line option, or None."""
    if text is None:
        return None
    try:
        return [float(x) for x in text.replace(" ", "").split(",")]
    except ValueError:
        raise ConfigError(f"{option}: expected comma-separated numbers, got {text!r}") from None

if __name__ == "__main__":  # pragma: no cover
    app()
