"""The ``flapjax fidelity`` command (registered on the CLI app in :mod:`flapjax.cli`):
the power test of the open-loop fidelity score (:mod:`flapjax.identify.flapper.fidelity`)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import List, Optional

import typer

from flapjax import safe_io
from flapjax.cli_evaluate import exit_on_error
from flapjax.validation import ConfigError, check_choice, check_int


def _echo_table(table) -> None:
    """One line per model (PASS or FAIL), then one per manoeuvre with the
    first signal's score; ``table`` is :func:`fidelity_table`'s ``{model
    name: FlightsScore}``."""
    for name, score in table.items():
        typer.echo(f"{name}: {'PASS' if score.passed else 'FAIL'}")
        for m, row in score.manoeuvres.items():
            signal, s = next(iter(row.signals.items()))
            typer.echo(f"  {m:30s} {signal:9s} NRMSE {s.nrmse:6.2f}  peak ratio {s.peak_ratio:+6.2f}  "
                       f"sign {'same' if s.sign_agrees else 'differs':7s} peak dt {1e3 * s.peak_time_error:5.1f} ms"
                       f"  {'pass' if row.passed else 'fail'}")


def fidelity(
    model: Path = typer.Argument(..., metavar="MODEL.json", help="cycle_averaged.json (written by flapjax identify)."),
    backend: str = typer.Option("rigid", "--backend", help="The reference robot's backend: rigid (the pure-JAX "
                                "joint tree) or mjx."),
    phases: int = typer.Option(2, "--phases", help="Stroke phases of each onset."),
    only: Optional[List[str]] = typer.Option(None, "--only", metavar="TEXT", help="Fly only the manoeuvres whose "
                                             "name contains TEXT (repeatable)."),
    json_out: Optional[Path] = typer.Option(None, "--json", metavar="FILE", help="Also write the table as JSON."),
) -> None:
    """Score a cycle-averaged model and wrong variants against the free per-wing robot's open-loop responses.

    The power test: flies the per-wing free robot (the reference) on
    --backend through the held-out manoeuvres of identify's defaults (plate
    steps of 0.02 and 0.05 rad on each plate joint, a 0.5 Hz frequency
    step, 0.5 m/s forward and lateral gusts), scores the model of the file
    and each deliberately wrong model against it and prints a table. Exit
    code 0 when the model passes and every wrong model fails, 1 otherwise,
    2 for bad input (one error: line).
    """
    import jax

    from flapjax.aero.cycle_averaged import CycleAveragedParams
    from flapjax.identify.flapper import fidelity as fd

    jax.config.update("jax_enable_x64", True)
    only = list(only or [])
    try:
        check_choice("--backend", backend, ("rigid", "mjx"))
        manoeuvres = [m for m in fd.manoeuvres_for({"amplitudes": [0.02, 0.05], "frequency_step": 0.5, "gust": 0.5})
                      if not only or any(t in m.name for t in only)]
        if not manoeuvres:
            raise ConfigError(f"--only: no manoeuvre name contains any of {only}")
        check_int("--phases", phases, 1, 16)
        t0 = time.perf_counter()
        table = fd.fidelity_table(CycleAveragedParams.from_json(model), manoeuvres, backend=backend, phases=phases)
    except BaseException as exc:  # no traceback reaches the user: bad input exits 2
        exit_on_error(exc)
    typer.echo(f"reference: free per-wing robot on {backend}, {phases} stroke phase(s), "
               f"{time.perf_counter() - t0:.0f} s")
    _echo_table(table)
    if json_out is not None:
        try:
            safe_io.write_text(json_out, json.dumps({"backend": backend, "phases": phases,
                                                     "models": {n: dataclasses.asdict(s) for n, s in table.items()}},
                                                    indent=1))
        except (OSError, ConfigError) as exc:  # unwritable, or a link or folder in its place
            exit_on_error(exc)
    ok = table["identified"].passed and not any(s.passed for n, s in table.items() if n != "identified")
    typer.echo("power test: " + ("PASS (the model passes, every wrong model fails)" if ok else "FAIL"))
    raise typer.Exit(0 if ok else 1)
