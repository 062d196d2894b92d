"""The ``flapjax evaluate`` command (registered on the CLI app in :mod:`flapjax.cli`)."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import List, NoReturn, Optional

import typer

from flapjax.validation import ConfigError, loads_json


def end_on_ctrl_c() -> None:
    """Make Ctrl-C (SIGINT) end the command at once with exit code 130 and
    one line. Python's own KeyboardInterrupt can land inside a callback that
    swallows it (JAX's garbage-collection hook prints "Exception ignored"
    and the run goes on), and an ordinary exit tears XLA's thread pools
    down under a running step, which can abort the process ("pure virtual
    method called"). Files are written atomically, so none is left half
    written; the output folder's lock is an OS lock, released with the
    process."""
    import signal

    def handler(signum, frame):  # noqa: ARG001 - the signal module's signature
        sys.stderr.write("interrupted\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, handler)


def exit_on_error(exc: BaseException) -> NoReturn:
    """End a command on ``exc`` with a one-line message instead of a
    traceback: exit code 2 for bad input (:class:`ConfigError`, a file that
    cannot be read or written), 130 for Ctrl-C, 1 for anything else (set
    ``FLAPJAX_TRACEBACK=1`` to see its traceback)."""
    if isinstance(exc, (typer.Exit, typer.Abort, SystemExit)):
        raise exc
    if isinstance(exc, KeyboardInterrupt):
        # Leave at once: an ordinary exit tears down XLA's thread pools while a
        # worker may still run a compiled step, which can abort the process
        # ("pure virtual method called", exit -6) instead of ending with 130.
        # The output folder's lock and partial files were released by the
        # ``with`` blocks the interrupt unwound through.
        typer.secho("interrupted", err=True, fg=typer.colors.RED)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    if isinstance(exc, (ConfigError, UnicodeDecodeError)):
        message, code = str(exc), 2
    elif isinstance(exc, OSError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        message, code = f"{where}{exc.strerror or exc}", 2
    elif isinstance(exc, MemoryError):
        message, code = "out of memory (evaluate: run fewer worlds at a time; identify --data: a shorter file)", 1
    else:
        if os.environ.get("FLAPJAX_TRACEBACK"):
            raise exc
        message, code = f"internal error ({type(exc).__name__}: {exc}); set FLAPJAX_TRACEBACK=1 for the traceback", 1
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code=code) from None


def evaluate(
    task: str = typer.Option(..., "--task", help="Task: near_ground, wall_contact or object_push."),
    robot: str = typer.Option("quad_x", "--robot", help="Robot preset (quad_x, hexa or hexa_tilted) or the path "
                                                         "of a profile file (.toml or .json)."),
    worlds: int = typer.Option(256, "--worlds", help="Number of worlds."),
    out: str = typer.Option(..., "--out", help="Output directory for report.json and report.png."),
    seed: int = typer.Option(0, "--seed", help="Seed of the world keys."),
    noise_seed: Optional[int] = typer.Option(None, "--noise-seed", help="Separate seed of the noise streams."),
    randomize: bool = typer.Option(False, "--randomize/--nominal", help="Domain randomization on or off."),
    noise: str = typer.Option("default", "--noise",
                              help="Noise preset 'default' or 'off', or JSON of NoiseConfig fields, e.g. "
                                   "'{\"sensor_position_std\": 0.005}'."),
    disable: List[str] = typer.Option([], "--disable", help="Switch off a physical effect (repeatable)."),
    ablate: Optional[List[str]] = typer.Option(None, "--ablate",
                                               help="Rerun with an effect off and report both (repeatable; "
                                                    "near_ground ablates ground_effect by default)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar."),
    video: int = typer.Option(0, "--video", help="Render the first N worlds as MP4 videos into --out."),
) -> None:
    """Run N worlds of a task with its reference controller; write a JSON and PNG report."""
    from flapjax.evaluate import evaluate as run
    from flapjax.tasks.config import NoiseConfig  # here: the tasks load MuJoCo, which --help does not need

    try:
        if noise == "default":
            noise_cfg = NoiseConfig()
        elif noise == "off":
            noise_cfg = NoiseConfig.off()
        else:
            try:  # strictly: a repeated key, NaN or Infinity is refused
                fields = loads_json(noise, where="noise")
            except ConfigError as exc:
                raise ConfigError(f"noise: must be 'default', 'off' or a JSON object, got {noise!r} ({exc})") from None
            if not isinstance(fields, dict):
                raise ConfigError(f"noise: JSON must be an object of NoiseConfig fields, got {noise!r}")
            known = [f.name for f in dataclasses.fields(NoiseConfig)]
            unknown = sorted(set(fields) - set(known))
            if unknown:
                raise ConfigError(f"noise: unknown field(s) {unknown}; known: {known}")
            noise_cfg = NoiseConfig(**fields)
        report = run(task, robot=robot, n_worlds=worlds, out_dir=out, seed=seed, noise_seed=noise_seed,
                     randomize=randomize, noise=noise_cfg, disabled_effects=tuple(disable),
                     ablate=None if not ablate else tuple(ablate), progress=progress, video=video)
    except BaseException as exc:  # no traceback reaches the user: bad input exits 2
        exit_on_error(exc)
    first, *ablations = report.summary().splitlines()
    typer.echo(first)
    if report.unhealthy_worlds:
        typer.secho(f"warning: {report.unhealthy_worlds} of {worlds} worlds turned unhealthy (non-finite or "
                    f"beyond physical bounds) and were frozen; their metrics are excluded from the margins",
                    err=True, fg=typer.colors.YELLOW)
    for line in ablations:
        typer.echo(line)
    typer.echo(f"wrote {', '.join(report.files)}")
