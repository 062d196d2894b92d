"""Running the studies: ``flapjax identify``'s driver, with resume (docs/cli.md).

:func:`run_identification` runs the configured studies in the order of
STUDIES; what each needs from the others and how it runs is its entry in
:data:`flapjax.identify.flapper.studies.STUDY_RUNS`. Each finished study is written at once, sealed
(:mod:`flapjax.runs.study_files`), to ``<out>/studies/<name>.json`` with
the settings it ran with, and reused by a rerun whose settings (and upstream
values) are unchanged. The output folder is held for the run
(:func:`flapjax.files.lock_output_dir`); a run of some studies
into a folder that holds others keeps theirs (``kept_studies``), and plots
of an earlier run that this run did not redraw are removed.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any, Callable, Mapping

import equinox as eqx
import jax

from flapjax.aero.cycle_averaged import CycleAveragedParams
from flapjax.identify.flapper.calibration import calibration_record, calibration_values, check_calibration_robot
from flapjax.identify.flapper.config import STUDIES, validate_config
from flapjax.runs.flapper_plots import PLOTS, summary_table, write_plots
from flapjax.identify.flapper.results import IdentificationResult
from flapjax.identify.flapper.robot_config import check_robot_studies, robot_nominal
from flapjax.identify.flapper.studies import STUDY_RUNS
from flapjax.files import lock_output_dir, write_json
from flapjax.identify.results import StudyResult
from flapjax.runs.study_files import load_study_file, seal
from flapjax.sim import flapper as fl
from flapjax.sim.flapper.description_model import resolve_description
from flapjax.validation import ConfigError


def _study_config(cfg: Mapping, name: str, extra: Mapping | None = None) -> dict:
    """What a saved study must match to be reused on resume."""
    out = {"section": copy.deepcopy(cfg.get(name, {})), "float64": cfg["run"]["float64"]}
    if extra:
        out.update(extra)
    return json.loads(json.dumps(out))


def _load_saved(path: Path, expect: Mapping | None, echo: Callable[[str], None]) -> StudyResult | None:
    """The study saved at ``path`` when :func:`flapjax.runs.study_files.load_study_file`
    trusts it (``expect``: the settings it must have run with; None: any), else None (recompute)."""
    record = load_study_file(path, expect, echo)
    if record is None:
        return None
    try:
        return StudyResult.from_dict(record["result"])
    except (ConfigError, TypeError, ValueError) as exc:
        echo(f"warning: {path}: damaged study file ignored ({type(exc).__name__}: {exc}); the study recomputed")
        return None


def run_identification(
    cfg: Mapping,
    *,
    out_dir: str | Path,
    fresh: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] = print,
    robot=None,
) -> IdentificationResult:
    """Run the configured studies into ``out_dir`` (module docstring; ``fresh``: reuse none).

    ``robot``: a robot description (:class:`FlapperDescription` or the path
    of its ``.toml``, docs/flapper_robots.md) whose robot the studies
    simulate (``cfg`` from :func:`flapjax.identify.flapper.robot_config.load_robot_config`);
    default the seed robot. Writes ``results.json``, ``cycle_averaged.json``
    (loads with :meth:`CycleAveragedParams.from_json`) and the PNG plots.
    Raises :class:`ConfigError` when ``out_dir`` is a file, is not writable
    or is held by another run, before anything is simulated.
    """
    cfg = validate_config(copy.deepcopy(dict(cfg)))
    description = None if robot is None else resolve_description(robot)
    if description is not None:
        check_robot_studies(cfg["run"]["studies"], description)
        check_calibration_robot(cfg, description)
    out = Path(out_dir)
    lock = lock_output_dir(out, name="out")
    try:
        return _run(cfg, out, fresh=fresh, progress=progress, echo=echo, description=description)
    finally:
        lock.release()


class _Upstream:
    """What the studies of one run need from each other (the ``up`` of
    :mod:`flapjax.identify.flapper.studies`): the studies done so far (or saved by an earlier run in
    the same folder), one driven-base robot for the moments and damping
    studies (one compiled program), the nominal averaged model and the
    identified one the check studies run on."""

    def __init__(self, cfg: Mapping, out: Path, echo: Callable[[str], None], description=None):
        self.cfg, self.out, self.echo, self.description = cfg, out, echo, description
        self.done: dict[str, StudyResult] = {}
        self.nominal_avg = (CycleAveragedParams.from_json(fl.AVERAGED_PATH) if description is None
                            else robot_nominal(description))
        self.avg = None

    @functools.cached_property
    def driven_robot(self):
        return fl.make_driven_robot(self.cfg["damping"]["armature"], description=self.description)

    def get(self, study: str) -> StudyResult | None:
        """A study this run did, or else the one an earlier run saved here
        (the same merge as the final results', so a partial run builds on it)."""
        if study in self.done:
            return self.done[study]
        return _load_saved(self.out / "studies" / f"{study}.json", None, self.echo)

    def extra(self, name: str) -> dict[str, Any]:
        """Settings of study ``name`` that come from the others (part of its saved config)."""
        study = STUDY_RUNS[name]
        extra = study.settings(self) if study.settings else {}
        if study.model:
            model = {n: r for n in study.depends_on if (r := self.get(n)) is not None}
            self.avg = IdentificationResult.from_studies(model).to_cycle_averaged_params(self.nominal_avg)
            extra["identified"] = self.avg.to_dict()
        if calibration := calibration_values(self.cfg):  # a study of another per-wing calibration is not reused
            extra["calibration"] = calibration
        if self.description is not None:  # a study of another robot is not reused
            extra["robot"] = str(self.description.source)
        return extra


def _run_studies(cfg: Mapping, out: Path, up: _Upstream, *, fresh: bool, progress: bool) -> list[str]:
    """Run (or reuse from ``out/studies``) every study the config asks for;
    returns the reused ones."""
    from tqdm.auto import tqdm

    wanted = [s for s in STUDIES if s in cfg["run"]["studies"]]
    skipped = []
    bar = tqdm(total=len(wanted), desc="identify", unit="study", disable=not progress)
    for name in wanted:
        extra = up.extra(name)
        expect = _study_config(cfg, name, extra)
        path = out / "studies" / f"{name}.json"
        result = None if fresh else _load_saved(path, expect, up.echo)  # None: recompute
        if result is not None:
            skipped.append(name)
            bar.set_description(f"identify ({name}: reused)")
        else:
            bar.set_description(f"identify ({name})")
            result = STUDY_RUNS[name].run(up, extra, bar)
            write_json(path, seal(expect, result.to_dict()))  # with the settings it ran with
        up.done[name] = result
        bar.update(1)
    bar.close()
    return skipped


def _final_result(cfg: Mapping, up: _Upstream, skipped: list[str]) -> tuple[IdentificationResult, list]:
    """The run's result with the studies an earlier run saved here kept
    (a partial run); returns it and the kept study names."""
    done = {name: r for name in STUDIES if (r := up.get(name)) is not None}
    kept = [name for name in done if name not in up.done]
    validation = done.pop("validation", None)
    settings = {**json.loads(json.dumps(cfg)), "calibration": calibration_record(cfg), "reused_studies": skipped}
    if kept:
        settings["kept_studies"] = kept
    if up.description is not None:
        settings["robot"] = str(up.description.source)
    final = IdentificationResult.from_studies(
        done,
        validation=validation.metrics if validation is not None else None,
        settings=settings,
    )
    if validation is not None:
        final = eqx.tree_at(lambda r: r.studies, final, {**final.studies, "validation": validation})
    return final, kept


def _write(cfg: Mapping, out: Path, final: IdentificationResult, nominal_avg, skipped, kept) -> list[str]:
    """results.json, cycle_averaged.json and the plots; returns the summary lines."""
    final.save(out / "results.json")
    write_json(out / "cycle_averaged.json", {
        "comment": "Cycle-averaged model identified by flapjax identify (seed section 10); load with "
        "CycleAveragedParams.from_json.",
        **final.to_cycle_averaged_params(nominal_avg).to_dict(),
    })
    drawn = [Path(p).name for p in write_plots(final, out)] if cfg["run"]["plots"] else []
    stale = [name for name in PLOTS if name not in drawn and (out / name).is_file()]
    for name in stale:
        (out / name).unlink()
    lines = [summary_table(final, skipped=skipped)]
    if kept:
        lines.append(f"  kept from earlier runs in {out}: {', '.join(kept)} (their studies/*.json)")
    lines.append(f"  written: {out / 'results.json'}, cycle_averaged.json"
                 + (f", {', '.join(drawn)}" if drawn else " (plots off)"))
    if stale:
        lines.append(f"  removed plots of an earlier run: {', '.join(stale)}")
    return lines


def _run(cfg: Mapping, out: Path, *, fresh: bool, progress: bool, echo: Callable[[str], None],
         description=None) -> IdentificationResult:
    jax.config.update("jax_enable_x64", bool(cfg["run"]["float64"]))
    (out / "studies").mkdir(parents=True, exist_ok=True)
    up = _Upstream(cfg, out, echo, description)
    skipped = _run_studies(cfg, out, up, fresh=fresh, progress=progress)
    final, kept = _final_result(cfg, up, skipped)
    echo("\n".join(_write(cfg, out, final, up.nominal_avg, skipped, kept)))
    return final
